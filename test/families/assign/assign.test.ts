// Node assignment on a real state machine: the behaviours Tokenserver's own
// suites check (syncstorage-rs tokenserver-db tests, the Python tokenserver's
// backend and view tests), restated as black-box tests of the family's entries.
import { afterEach, describe, expect, it } from 'vitest';
import { assign } from '../../../src/families/assign/index.js';
import { AssignBucket } from '../../../src/families/assign/keys.js';
import { MAX_GENERATION, MAX_RECORDS_PER_USER } from '../../../src/families/assign/wire.js';
import { AssignHarness, SERVICE } from './harness.js';

const open: AssignHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function harness(settings: Parameters<AssignHarness['service']>[0] = {}): Promise<AssignHarness> {
  const h = await AssignHarness.open();
  open.push(h);
  await h.service(settings);
  return h;
}

describe('allocation', () => {
  it('puts each new user on the least loaded node by log(load)/log(capacity); an empty node first', async () => {
    const h = await harness();
    await h.addNode('https://a', 100);
    await h.addNode('https://b', 10);
    // Both empty: ties go by URL.
    expect((await h.login('u0@x')).user.node).toBe('https://a');
    // a: log 1 / log 100 = 0; b empty sorts first.
    expect((await h.login('u1@x')).user.node).toBe('https://b');
    // a: 0 / 4.6 = 0, b: 0 / 2.3 = 0: equal, by URL.
    expect((await h.login('u2@x')).user.node).toBe('https://a');
    // a: log 2 / log 100 = 0.15, b: log 1 / log 10 = 0 -> b.
    expect((await h.login('u3@x')).user.node).toBe('https://b');
    // a: 0.15, b: log 2 / log 10 = 0.30 -> a, a (log 3 / log 100 = 0.24 < 0.30), then a again? log 4/log 100 = 0.30 = b's: by URL, a.
    expect((await h.login('u4@x')).user.node).toBe('https://a');
    expect((await h.login('u5@x')).user.node).toBe('https://a');
    expect(h.node('https://a')).toMatchObject({ load: 4, available: 96 });
    expect(h.node('https://b')).toMatchObject({ load: 2, available: 8 });
    await h.checkInvariants();
  });

  it('never allocates to a downed node, a node backing off, a full node or one without available slots', async () => {
    const h = await harness();
    await h.addNode('https://down', 100, { downed: true });
    await h.addNode('https://backoff', 100, { backoff: 1 });
    await h.addNode('https://none', 100, { available: 0 });
    await h.addNode('https://ok', 100);
    for (let i = 0; i < 5; i++) expect((await h.login(`u${i}@x`)).user.node).toBe('https://ok');
  });

  it('releases capacity gradually when every node is out of slots, then fails with no-node-available', async () => {
    const h = await harness();
    // As Tokenserver's gradual-release test: two nodes with one slot each.
    await h.addNode('https://n1', 8, { available: 1 });
    await h.addNode('https://n2', 6, { available: 1 });
    const first = [(await h.login('a@x')).user.node, (await h.login('b@x')).user.node].sort();
    expect(first).toEqual(['https://n1', 'https://n2']);
    expect(h.node('https://n1')!.available).toBe(0);
    // No slots: 10% of capacity released on each (at least one), one user each round.
    const placed: string[] = [];
    for (let i = 0; i < 12; i++) placed.push((await h.login(`u${i}@x`)).user.node);
    expect(placed.filter((n) => n === 'https://n1')).toHaveLength(7);
    expect(placed.filter((n) => n === 'https://n2')).toHaveLength(5);
    expect(h.node('https://n1')).toMatchObject({ load: 8, available: 0 });
    expect(h.node('https://n2')).toMatchObject({ load: 6, available: 0 });
    // Both full: nothing to release, a clear refusal, and nothing changed.
    const before = await h.users();
    const refused = await h.refused('late@x');
    expect(refused).toMatchObject({ refused: 'no-node-available' });
    expect(await h.users()).toEqual(before);
    await h.checkInvariants();
  });

  it('releases min(capacity x rate, capacity - load) with the configured rate', async () => {
    const h = await harness();
    await h.service({ releaseRate: 0.5 });
    await h.addNode('https://n', 10, { available: 0 });
    await h.login('a@x');
    // Released min(5, 10) = 5, one taken.
    expect(h.node('https://n')).toMatchObject({ load: 1, available: 4 });
  });

  it('chooses among the top N with the pick the entry carries: the same pick gives the same node, and only the best N are chosen', async () => {
    const h = await harness();
    await h.service({ topN: 2 });
    await h.addNode('https://a', 1000);
    await h.addNode('https://b', 1000);
    await h.addNode('https://c', 1000);
    for (let i = 0; i < 3; i++) await h.login(`seed${i}@x`, {}, i); // one user each, by picks 0, 1, 0 of the best two
    const seen = new Set<string>();
    for (let pick = 0; pick < 6; pick++) seen.add((await h.login(`p${pick}@x`, {}, pick)).user.node);
    expect(seen.size).toBeGreaterThan(1);
    await h.checkInvariants();
    // Determinism: two state machines given the same entries choose the same nodes.
    const twin = await harness();
    await twin.service({ topN: 2 });
    for (const n of ['https://a', 'https://b', 'https://c']) await twin.addNode(n, 1000);
    for (let i = 0; i < 3; i++) await twin.login(`seed${i}@x`, {}, i);
    for (let pick = 0; pick < 6; pick++) expect((await twin.login(`p${pick}@x`, {}, pick)).user.node).toBe((await h.users()).find((u) => u.email === `p${pick}@x`)!.node);
  });

  it('refuses new users when the service says so, and an unknown service', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    await h.service({ newUsers: false });
    expect(await h.refused('a@x')).toMatchObject({ refused: 'new-users-disabled' });
    const r = await h.run({ op: 'login', service: 'nope-1.0', email: 'a@x', generation: 0, keysChangedAt: 0, clientState: '', pick: 0 });
    expect(r).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(await h.users()).toEqual([]);
  });
});

describe('services', () => {
  it('a change names only the settings it changes: two changes made at once both count', async () => {
    const h = await harness({ pattern: '{node}/x/{uid}' });
    await h.ok({ op: 'service', service: SERVICE, settings: { topN: 3 } });
    await h.ok({ op: 'service', service: SERVICE, settings: { newUsers: false } });
    expect(h.sm.stateOf(assign).services.get(SERVICE)!.settings).toEqual({ pattern: '{node}/x/{uid}', releaseRate: 0.1, newUsers: false, topN: 3 });
    // A new service takes the defaults for what its request leaves out.
    expect(await h.ok({ op: 'service', service: 'other-1.0', settings: { releaseRate: 0.5 } })).toMatchObject({ created: true, settings: { pattern: '{node}/1.5/{uid}', releaseRate: 0.5, newUsers: true, topN: 1 } });
  });
});

describe('get or create with update', () => {
  it('creates a user with the reported values, then returns the same record', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    const first = await h.login('a@x', { generation: 10, keysChangedAt: 5, clientState: 'aaaa' });
    expect(first).toMatchObject({ created: true, allocated: true });
    expect(first.user).toMatchObject({ uid: 1, node: 'https://n', endpoint: 'https://n/1.5/1', generation: 10, keysChangedAt: 5, clientState: 'aaaa', oldClientStates: [], firstSeenAt: h.now });
    h.now += 1000;
    const again = await h.login('a@x', { generation: 10, keysChangedAt: 5, clientState: 'aaaa' });
    expect(again).toMatchObject({ created: false, allocated: false });
    expect(again.user).toEqual(first.user);
    expect(await h.users()).toHaveLength(1);
  });

  it("a login entry for a user the leader already created (a lagging member's proposal) answers that user and changes nothing", async () => {
    // A member that has not yet applied the entry creating a user sends that user's next
    // login to the log (server.ts, answerUnchanged): the entry must find the record.
    const h = await harness({ topN: 2 });
    await h.addNode('https://n1', 10);
    await h.addNode('https://n2', 10);
    const VALUES = { generation: 10, keysChangedAt: 5, clientState: 'aaaa' };
    const first = await h.login('a@x', VALUES, 0);
    const usersBefore = await h.users();
    const nodesBefore = [h.node('https://n1'), h.node('https://n2')];
    h.now += 1000;
    // Another pick than the creating entry's: a new user would land on the other node.
    const again = await h.login('a@x', VALUES, 1);
    expect(again).toMatchObject({ created: false, allocated: false });
    expect(again.user).toEqual(first.user);
    expect(await h.users()).toEqual(usersBefore);
    expect([h.node('https://n1'), h.node('https://n2')]).toEqual(nodesBefore);
    await h.checkInvariants();
  });

  it('moves generation and keys-changed-at forward in place; treats 0 as absent', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    await h.login('a@x', { generation: 10, keysChangedAt: 5, clientState: 'aaaa' });
    const moved = await h.login('a@x', { generation: 20, keysChangedAt: 5, clientState: 'aaaa' });
    expect(moved.user).toMatchObject({ uid: 1, generation: 20, keysChangedAt: 5 });
    // No generation reported (OAuth): a newer keys-changed-at stands in for it, never lowering it.
    const oauth = await h.login('a@x', { keysChangedAt: 15, clientState: 'aaaa' });
    expect(oauth.user).toMatchObject({ uid: 1, generation: 20, keysChangedAt: 15 });
    const later = await h.login('a@x', { keysChangedAt: 25, clientState: 'aaaa' });
    expect(later.user).toMatchObject({ uid: 1, generation: 25, keysChangedAt: 25 });
    expect(await h.users()).toHaveLength(1);
  });

  it('a new client state makes a new record on the same node, replaces the old one and lists the old state', async () => {
    const h = await harness();
    await h.addNode('https://n1', 10);
    await h.addNode('https://n2', 10);
    const first = await h.login('a@x', { generation: 1, keysChangedAt: 1, clientState: 'aaaa' });
    h.now += 10;
    const second = await h.login('a@x', { generation: 2, keysChangedAt: 2, clientState: 'bbbb' });
    expect(second.user).toMatchObject({ uid: 2, node: first.user.node, clientState: 'bbbb', generation: 2, keysChangedAt: 2, oldClientStates: ['aaaa'], firstSeenAt: first.user.createdAt });
    h.now += 10;
    const third = await h.login('a@x', { generation: 3, keysChangedAt: 3, clientState: 'cccc' });
    expect(third.user).toMatchObject({ uid: 3, oldClientStates: ['bbbb', 'aaaa'], firstSeenAt: first.user.createdAt });
    const records = await h.users();
    expect(records.map((r) => [r.uid, r.replacedAt])).toEqual([
      [1, first.user.createdAt + 10],
      [2, first.user.createdAt + 20],
      [3, 0],
    ]);
    // The node's load counts current records: still one user.
    expect(h.node(first.user.node)!.load).toBe(1);
    await h.checkInvariants();
  });

  describe('refusals, in Tokenserver order, each changing nothing', () => {
    async function user(): Promise<AssignHarness> {
      const h = await harness();
      await h.addNode('https://n', 10);
      await h.login('a@x', { generation: 10, keysChangedAt: 10, clientState: 'aaaa' });
      await h.login('a@x', { generation: 30, keysChangedAt: 20, clientState: 'bbbb' });
      return h;
    }
    // Stored: generation 30, keys-changed-at 20, client state bbbb (aaaa before it).
    const cases: Array<[string, { generation?: number; keysChangedAt?: number; clientState?: string }, string, RegExp]> = [
      ['a newer keys-changed-at above the reported generation', { generation: 25, keysChangedAt: 26, clientState: 'bbbb' }, 'invalid-keysChangedAt', /greater than generation/],
      ['an empty client state after a non-empty one', { generation: 40, keysChangedAt: 40, clientState: '' }, 'invalid-client-state', /empty string/],
      ['a client state used before (stale)', { generation: 40, keysChangedAt: 40, clientState: 'aaaa' }, 'invalid-client-state', /stale value/],
      ['a new client state with no generation change', { generation: 30, keysChangedAt: 30, clientState: 'cccc' }, 'invalid-client-state', /no generation change/],
      ['a new client state with no keys-changed-at change', { generation: 40, keysChangedAt: 20, clientState: 'cccc' }, 'invalid-client-state', /no keys_changed_at change/],
      ['a generation below the one seen', { generation: 25, keysChangedAt: 20, clientState: 'bbbb' }, 'invalid-generation', /less than previously-seen/],
      ['a keys-changed-at below the one seen', { keysChangedAt: 19, clientState: 'bbbb' }, 'invalid-keysChangedAt', /less than previously seen/],
      ['no keys-changed-at when one was seen', { generation: 30, clientState: 'bbbb' }, 'invalid-keysChangedAt', /absent but previously seen/],
    ];
    for (const [what, req, reason, message] of cases) {
      it(`refuses ${what} with ${reason}`, async () => {
        const h = await user();
        const before = await h.users();
        const beforeNode = h.node('https://n');
        const r = await h.refused('a@x', req);
        expect(r.refused).toBe(reason);
        expect(r.message).toMatch(message);
        expect(await h.users()).toEqual(before);
        expect(h.node('https://n')).toEqual(beforeNode);
      });
    }
  });

  it('accepts a new client state with both generation and keys-changed-at moving forward', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    await h.login('a@x', { generation: 10, keysChangedAt: 10, clientState: 'aaaa' });
    expect((await h.login('a@x', { generation: 11, keysChangedAt: 11, clientState: 'bbbb' })).user).toMatchObject({ uid: 2, clientState: 'bbbb' });
  });
});

describe('retire, decommission, remove', () => {
  it('retire sets the generation to the maximum and replaces every record; later requests are invalid-generation', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    await h.login('a@x', { generation: 10, clientState: 'aaaa' });
    await h.login('a@x', { generation: 11, clientState: 'bbbb' });
    expect(await h.ok({ op: 'retire', email: 'a@x' })).toMatchObject({ services: 1 });
    const records = await h.users();
    expect(records.every((r) => r.replacedAt !== 0)).toBe(true);
    expect(records.find((r) => r.uid === 2)!.generation).toBe(MAX_GENERATION);
    expect(h.node('https://n')!.load).toBe(0);
    expect(await h.refused('a@x', { generation: 12, clientState: 'bbbb' })).toMatchObject({ refused: 'invalid-generation' });
    // For good: not with no generation, not with a new client state (which would make a current record again).
    const before = JSON.stringify(await h.users());
    expect(await h.refused('a@x', { clientState: 'bbbb' })).toMatchObject({ refused: 'invalid-generation' });
    expect(await h.refused('a@x', { clientState: 'cccc' })).toMatchObject({ refused: 'invalid-generation' });
    expect(JSON.stringify(await h.users())).toBe(before);
    expect(h.node('https://n')!.load).toBe(0);
    // No request may claim the retired generation itself.
    expect(await h.runRaw({ op: 'login', service: SERVICE, email: 'b@x', generation: MAX_GENERATION, keysChangedAt: 0, clientState: '', pick: 0 })).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    await h.checkInvariants();
  });

  it('a user has at most MAX_RECORDS_PER_USER records: one more key change (or move) is refused until purge', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    for (let g = 1; g <= MAX_RECORDS_PER_USER; g++) await h.login('a@x', { generation: g, keysChangedAt: g, clientState: `s${g}` });
    const before = JSON.stringify(await h.users());
    expect(await h.refused('a@x', { generation: 1000, keysChangedAt: 1000, clientState: 'new' })).toMatchObject({ refused: 'too-many-records' });
    await h.ok({ op: 'decommission', service: SERVICE, node: 'https://n', max: 10 });
    expect(await h.refused('a@x', { generation: 100, keysChangedAt: 100, clientState: `s${MAX_RECORDS_PER_USER}` })).toMatchObject({ refused: 'too-many-records' });
    expect(JSON.stringify((await h.users()).map((u) => ({ ...u, replacedAt: u.uid === MAX_RECORDS_PER_USER ? 0 : u.replacedAt })))).toBe(before);
    // Purging the replaced records makes room again.
    h.now += 10;
    const uids = (await h.users()).map((u) => u.uid);
    await h.ok({ op: 'purge', service: SERVICE, before: h.now, uids: uids.slice(0, 50), force: false });
    expect((await h.login('a@x', { generation: 1000, keysChangedAt: 1000, clientState: 'new' })).user.oldClientStates).toHaveLength(50);
    await h.checkInvariants();
  });

  it('decommission replaces the node\'s users; their next request allocates another node and keeps their values', async () => {
    const h = await harness();
    await h.addNode('https://old', 100);
    for (let i = 0; i < 5; i++) await h.login(`u${i}@x`, { generation: 7, keysChangedAt: 3, clientState: 'aaaa' });
    await h.ok({ op: 'updateNode', service: SERVICE, node: 'https://old', downed: true });
    await h.addNode('https://new', 100);
    expect(await h.ok({ op: 'decommission', service: SERVICE, node: 'https://old', max: 2 })).toMatchObject({ replaced: 2, more: true });
    expect(await h.ok({ op: 'decommission', service: SERVICE, node: 'https://old', max: 1000 })).toMatchObject({ replaced: 3, more: false });
    expect(h.node('https://old')!.load).toBe(0);
    h.now += 5;
    const moved = await h.login('u0@x', { generation: 7, keysChangedAt: 3, clientState: 'aaaa' });
    expect(moved).toMatchObject({ allocated: true, created: false });
    expect(moved.user).toMatchObject({ node: 'https://new', generation: 7, keysChangedAt: 3, clientState: 'aaaa', oldClientStates: [], uid: 6 });
    expect(h.node('https://new')!.load).toBe(1);
    await h.checkInvariants();
  });

  it('decommission of a list of uids replaces only those on that node', async () => {
    const h = await harness();
    await h.addNode('https://n', 100);
    for (let i = 0; i < 3; i++) await h.login(`u${i}@x`);
    expect(await h.ok({ op: 'decommission', service: SERVICE, node: 'https://n', uids: [1, 3, 99], max: 1000 })).toMatchObject({ replaced: 2 });
    expect((await h.users()).map((u) => u.replacedAt !== 0)).toEqual([true, false, true]);
    await h.checkInvariants();
  });

  it('a node is removed only once it has no current users; its users move on their next request', async () => {
    const h = await harness();
    await h.addNode('https://a', 100);
    await h.login('u@x');
    expect(await h.run({ op: 'removeNode', service: SERVICE, node: 'https://a' })).toMatchObject({ ok: false, code: 'CONFLICT' });
    await h.ok({ op: 'decommission', service: SERVICE, node: 'https://a', max: 1000 });
    await h.ok({ op: 'removeNode', service: SERVICE, node: 'https://a' });
    expect(h.node('https://a')).toBeUndefined();
    await h.addNode('https://b', 100);
    expect((await h.login('u@x')).user.node).toBe('https://b');
    await h.checkInvariants();
  });
});

describe('account events', () => {
  it('delete retires the user in every service', async () => {
    const h = await harness();
    await h.service({}, 'sync-1.1');
    await h.addNode('https://n', 10);
    await h.addNode('https://m', 10, {}, 'sync-1.1');
    await h.login('a@x');
    await h.login('a@x', {}, 0, 'sync-1.1');
    expect(await h.ok({ op: 'event', kind: 'delete', email: 'a@x' })).toMatchObject({ changed: 2 });
    expect((await h.users()).every((u) => u.generation === MAX_GENERATION && u.replacedAt !== 0)).toBe(true);
    await h.checkInvariants();
  });

  it('a password change or reset sets the generation to the event\'s - 1, never backwards; an unknown user gets nothing', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    await h.login('a@x', { generation: 10 });
    expect(await h.ok({ op: 'event', kind: 'passwordChange', email: 'a@x', generation: 51 })).toMatchObject({ changed: 1 });
    expect((await h.users())[0]!.generation).toBe(50);
    expect(await h.ok({ op: 'event', kind: 'reset', email: 'a@x', generation: 30 })).toMatchObject({ changed: 0 });
    expect((await h.users())[0]!.generation).toBe(50);
    expect(await h.ok({ op: 'event', kind: 'reset', email: 'nobody@x', generation: 30 })).toMatchObject({ changed: 0 });
    expect(await h.users()).toHaveLength(1);
    // The client's old generation is now refused.
    expect(await h.refused('a@x', { generation: 49 })).toMatchObject({ refused: 'invalid-generation' });
  });

  it('a password change reaches a user whose record is replaced and not yet moved: the move keeps it, the old device is locked out', async () => {
    const h = await harness();
    await h.addNode('https://n', 10);
    await h.addNode('https://m', 10);
    const before = await h.login('a@x', { generation: 10, keysChangedAt: 10, clientState: 'aa' });
    await h.ok({ op: 'decommission', service: SERVICE, node: before.user.node, uids: [before.user.uid], max: 1000 });
    expect(await h.ok({ op: 'event', kind: 'passwordChange', email: 'a@x', generation: 21 })).toMatchObject({ changed: 1 });
    const stored = await h.users();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ uid: before.user.uid, generation: 20 });
    expect(stored[0]!.replacedAt).not.toBe(0); // still replaced: the event moves nobody
    // A device still on the pre-reset generation is refused, and nothing is allocated for it.
    expect(await h.refused('a@x', { generation: 10, keysChangedAt: 10, clientState: 'aa' })).toMatchObject({ refused: 'invalid-generation' });
    expect(await h.users()).toHaveLength(1);
    // The device with the new generation moves, carrying it.
    expect((await h.login('a@x', { generation: 21, keysChangedAt: 10, clientState: 'aa' })).user).toMatchObject({ generation: 21 });
    // A retired user keeps its maximum; an unknown one gets nothing.
    await h.ok({ op: 'retire', email: 'a@x' });
    expect(await h.ok({ op: 'event', kind: 'reset', email: 'a@x', generation: 99 })).toMatchObject({ changed: 0 });
    expect(await h.ok({ op: 'event', kind: 'reset', email: 'nobody@x', generation: 99 })).toMatchObject({ changed: 0 });
    expect(await h.users()).toHaveLength(2);
    await h.checkInvariants();
  });
});

describe('purge', () => {
  it('deletes records replaced before the cutoff, skips downed nodes unless forced, and frees a slot', async () => {
    const h = await harness();
    await h.addNode('https://n', 10, { available: 1 });
    await h.addNode('https://d', 10);
    await h.login('a@x', { generation: 1, clientState: 'aaaa' }); // uid 1 on d (both empty: by URL)
    await h.login('b@x', { generation: 1, clientState: 'aaaa' }); // uid 2 on n
    h.now += 100;
    await h.login('a@x', { generation: 2, clientState: 'bbbb' }); // uid 3, uid 1 replaced at t+100
    await h.login('b@x', { generation: 2, clientState: 'bbbb' }); // uid 4, uid 2 replaced at t+100
    await h.ok({ op: 'updateNode', service: SERVICE, node: 'https://d', downed: true });
    const availableBefore = h.node('https://n')!.available;
    // Not yet past the grace cutoff.
    expect(await h.ok({ op: 'purge', service: SERVICE, before: h.now, uids: [1, 2], force: false })).toMatchObject({ purged: [], skipped: 0 });
    // Past it: the one on the downed node is skipped; current records are never purged.
    expect(await h.ok({ op: 'purge', service: SERVICE, before: h.now + 1, uids: [1, 2, 3], force: false })).toMatchObject({ purged: [{ uid: 2, email: 'b@x', node: 'https://n' }], skipped: 1 });
    // A freed slot, never past capacity - load.
    expect(availableBefore).toBe(0);
    expect(h.node('https://n')!.available).toBe(1);
    expect(await h.ok({ op: 'purge', service: SERVICE, before: h.now + 1, uids: [1], force: true })).toMatchObject({ purged: [{ uid: 1 }], skipped: 0 });
    expect((await h.users()).map((u) => u.uid)).toEqual([3, 4]);
    // Every index entry of the purged records is gone: 2 records, 2 lookups, 2 by-node, no replaced.
    expect(await h.keys(AssignBucket.lookup)).toHaveLength(2);
    expect(await h.keys(AssignBucket.byNode)).toHaveLength(2);
    expect(await h.keys(AssignBucket.replaced)).toHaveLength(0);
    // The purged client state is no longer "old": the record that knew it is gone (as in Tokenserver).
    expect((await h.login('a@x', { generation: 2, clientState: 'bbbb' })).user.oldClientStates).toEqual([]);
    await h.checkInvariants();
  });
});

describe('bad input in entries', () => {
  it('a malformed command is refused on every member with the same verdict', async () => {
    const h = await harness();
    for (const bad of [
      { op: 'login', service: SERVICE, email: '', generation: 0, keysChangedAt: 0, clientState: '', pick: 0 },
      { op: 'login', service: SERVICE, email: 'a@x', generation: -1, keysChangedAt: 0, clientState: '', pick: 0 },
      { op: 'login', service: SERVICE, email: 'a@x', generation: 0, keysChangedAt: 0, clientState: 'not hex!', pick: 0 },
      { op: 'addNode', service: SERVICE, node: 'n', capacity: 1.5, available: 0, downed: false, backoff: 0 },
      { op: 'service', service: 'bad name', settings: { pattern: '', releaseRate: 0.1, newUsers: true, topN: 1 } },
      { op: 'service', service: SERVICE, settings: { pattern: '', releaseRate: 2, newUsers: true, topN: 1 } },
    ]) {
      expect(await h.runRaw(bad), JSON.stringify(bad)).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    }
    expect(await h.users()).toEqual([]);
  });
});
