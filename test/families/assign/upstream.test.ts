// Tokenserver's behaviours, restated as black-box tests against a real `vera`
// process through the client library: what the upstream suites check
// (syncstorage-rs's tokenserver-db tests and the older tokenserver's
// test_backend / test_node_assignment), in our own words. Allocation is checked
// against an oracle written here from the rule (least log(load)/log(capacity),
// empty nodes first, ties by URL), not against the server's own code. Each test
// has a service of its own on one shared server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { AssignClient, type LoginInput, type NodeInfo } from '../../../src/families/assign/client.js';
import { startLeader, untilCommandVersion } from '../../server/fixture.js';
import type { VeraProcess } from '../../support/vera-process.js';

let vp: VeraProcess;
let client: VeraClient;
let assign: AssignClient;
let services = 0;

beforeAll(async () => {
  vp = await startLeader();
  client = await connect(vp.url, { timeoutMs: 10_000 });
  assign = new AssignClient(client);
  await untilCommandVersion(() => assign.services());
}, 30_000);

afterAll(async () => {
  await client?.close();
  await vp?.stop();
});

async function service(settings: Parameters<AssignClient['service']>[1] = {}): Promise<string> {
  const name = `svc-${++services}`;
  await assign.service(name, settings);
  return name;
}

async function refusal(s: string, email: string, login: LoginInput): Promise<{ code: string; reason: string | undefined }> {
  try {
    await assign.user(s, email, login);
  } catch (err) {
    const e = err as { code: string; hints: { reason?: string } };
    return { code: e.code, reason: e.hints.reason };
  }
  throw new Error(`${email} ${JSON.stringify(login)} was accepted`);
}

/** The oracle: the node a new user should get, from the nodes as they are. */
function expectedNode(nodes: readonly NodeInfo[]): string | null {
  const ratio = (n: NodeInfo): number => (n.load === 0 ? -Infinity : Math.log(n.load) / Math.log(n.capacity));
  const eligible = nodes.filter((n) => n.available > 0 && n.capacity > n.load && !n.downed && n.backoff === 0);
  eligible.sort((a, b) => ratio(a) - ratio(b) || (a.node < b.node ? -1 : 1));
  return eligible[0]?.node ?? null;
}

describe('allocation (upstream: get_best_node, add_user_to_node)', () => {
  it('gives each new user the least loaded node by log(load)/log(capacity), empty nodes first', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 100 });
    await assign.addNode(s, 'https://b', { capacity: 10 });
    await assign.addNode(s, 'https://c', { capacity: 1000 });
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const want = expectedNode(await assign.nodes(s));
      const got = await assign.user(s, `u${i}@x`);
      expect(got.node, `user ${i}`).toBe(want);
      seen.add(got.node);
    }
    expect(seen.size).toBe(3);
    // Each allocation took a slot and added one to load.
    const nodes = await assign.nodes(s);
    expect(nodes.reduce((n, x) => n + x.load, 0)).toBe(40);
    for (const n of nodes) expect(n.available).toBe(n.capacity - n.load);
  });

  it('never picks a downed node, one backing off, a full one or one with no slot; nothing left is no-node-available', async () => {
    const s = await service();
    await assign.addNode(s, 'https://down', { capacity: 100, downed: true });
    await assign.addNode(s, 'https://backoff', { capacity: 100, backoff: 1 });
    await assign.addNode(s, 'https://noslot', { capacity: 100, available: 0 });
    await assign.addNode(s, 'https://ok', { capacity: 2 });
    expect((await assign.user(s, 'a@x')).node).toBe('https://ok');
    expect((await assign.user(s, 'b@x')).node).toBe('https://ok');
    // ok is full; noslot gets capacity released (it is up, has room, no slot); down and backoff never.
    expect((await assign.user(s, 'c@x')).node).toBe('https://noslot');
    await assign.updateNode(s, 'https://noslot', { downed: true });
    expect(await refusal(s, 'd@x', {})).toEqual({ code: 'UNAVAILABLE', reason: 'no-node-available' });
    await expect(assign.lookup(s, 'd@x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('releases capacity gradually when every node is out of slots: min(capacity x rate, capacity - load)', async () => {
    const s = await service({ releaseRate: 0.5 });
    await assign.addNode(s, 'https://a', { capacity: 10, available: 1 });
    await assign.addNode(s, 'https://b', { capacity: 4, available: 0 });
    expect((await assign.user(s, 'u0@x')).node).toBe('https://a'); // the only slot
    // No slot anywhere: a gets min(5, 9) = 5, b min(2, 4) = 2, then b (empty) wins.
    expect((await assign.user(s, 'u1@x')).node).toBe('https://b');
    expect(Object.fromEntries((await assign.nodes(s)).map((n) => [n.node, n.available]))).toEqual({ 'https://a': 5, 'https://b': 1 });
    for (let i = 2; i < 14; i++) await assign.user(s, `u${i}@x`);
    const nodes = Object.fromEntries((await assign.nodes(s)).map((n) => [n.node, n]));
    expect(nodes['https://a']!.load + nodes['https://b']!.load).toBe(14);
    expect(nodes['https://b']!.load).toBe(4); // full: never past capacity
    expect(await refusal(s, 'over@x', {})).toEqual({ code: 'UNAVAILABLE', reason: 'no-node-available' });
  });

  it('with topN, each user goes to one of the N best nodes', async () => {
    const s = await service({ topN: 2 });
    for (const n of ['https://a', 'https://b', 'https://c', 'https://d']) await assign.addNode(s, n, { capacity: 50 });
    const chosen = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const before = await assign.nodes(s);
      const ratio = (n: NodeInfo): number => (n.load === 0 ? -Infinity : Math.log(n.load) / Math.log(n.capacity));
      const best = [...before].sort((a, b) => ratio(a) - ratio(b) || (a.node < b.node ? -1 : 1)).slice(0, 2).map((n) => n.node);
      const got = await assign.user(s, `u${i}@x`);
      expect(best, `user ${i}`).toContain(got.node);
      chosen.add(got.node);
    }
    expect(chosen.size).toBe(4);
  });

  it('refuses new users when the service allocates none, and knows no unknown service', async () => {
    const s = await service({ newUsers: false });
    await assign.addNode(s, 'https://a', { capacity: 10 });
    expect(await refusal(s, 'new@x', {})).toEqual({ code: 'FORBIDDEN', reason: 'new-users-disabled' });
    await expect(assign.user('no-such-service', 'x@x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('get or create with update (upstream: get_or_create_user, update_user, the request checks)', () => {
  it('returns the same record to a returning user, and moves generation and keys-changed-at forward only', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    const first = await assign.user(s, 'u@x', { generation: 10, keysChangedAt: 8, clientState: 'aa' });
    expect(first).toMatchObject({ generation: 10, keysChangedAt: 8, clientState: 'aa', oldClientStates: [], created: true, allocated: true, firstSeenAt: first.createdAt });
    expect(await assign.user(s, 'u@x', { generation: 10, keysChangedAt: 8, clientState: 'aa' })).toMatchObject({ uid: first.uid, created: false, allocated: false });
    expect(await assign.user(s, 'u@x', { generation: 12, keysChangedAt: 9, clientState: 'aa' })).toMatchObject({ uid: first.uid, generation: 12, keysChangedAt: 9 });
    // Zero is "not reported": it changes nothing.
    expect(await assign.user(s, 'u@x', { keysChangedAt: 9, clientState: 'aa' })).toMatchObject({ uid: first.uid, generation: 12 });
  });

  it('a new client state is a new record on the same node; the old states are listed and can never come back', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    await assign.addNode(s, 'https://b', { capacity: 10 });
    const one = await assign.user(s, 'u@x', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const two = await assign.user(s, 'u@x', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    expect(two.uid).toBeGreaterThan(one.uid);
    expect(two).toMatchObject({ node: one.node, oldClientStates: ['aa'], firstSeenAt: one.createdAt });
    const three = await assign.user(s, 'u@x', { generation: 3, keysChangedAt: 3, clientState: 'cc' });
    expect(three.oldClientStates).toEqual(['bb', 'aa']);
    expect(await refusal(s, 'u@x', { generation: 4, keysChangedAt: 4, clientState: 'aa' })).toEqual({ code: 'CONFLICT', reason: 'invalid-client-state' });
    const l = await assign.lookup(s, 'u@x');
    expect(l.records.map((r) => [r.uid, r.replacedAt === 0])).toEqual([[three.uid, true], [two.uid, false], [one.uid, false]]);
    // Load counts the one current record.
    expect((await assign.nodes(s)).find((n) => n.node === one.node)!.load).toBe(1);
  });

  // Stored: generation 10, keys-changed-at 8, client state 'aa', old state 'zz'.
  const cases: Array<[string, LoginInput, string]> = [
    ['a newer keys-changed-at above the reported generation', { generation: 11, keysChangedAt: 12, clientState: 'aa' }, 'invalid-keysChangedAt'],
    ['an empty client state after a set one', { generation: 11, keysChangedAt: 11, clientState: '' }, 'invalid-client-state'],
    ['an old client state', { generation: 11, keysChangedAt: 11, clientState: 'zz' }, 'invalid-client-state'],
    ['a new client state without a generation change', { generation: 10, keysChangedAt: 10, clientState: 'bb' }, 'invalid-client-state'],
    ['a new client state without a keys-changed-at change', { generation: 11, keysChangedAt: 8, clientState: 'bb' }, 'invalid-client-state'],
    ['a generation that goes back', { generation: 9, keysChangedAt: 8, clientState: 'aa' }, 'invalid-generation'],
    ['a keys-changed-at that goes back', { generation: 10, keysChangedAt: 7, clientState: 'aa' }, 'invalid-keysChangedAt'],
    ['no keys-changed-at after one was seen', { generation: 11, clientState: 'aa' }, 'invalid-keysChangedAt'],
  ];
  for (const [what, login, reason] of cases) {
    it(`refuses ${what} with ${reason}, changing nothing`, async () => {
      const s = await service();
      await assign.addNode(s, 'https://a', { capacity: 10 });
      await assign.user(s, 'u@x', { generation: 5, keysChangedAt: 5, clientState: 'zz' });
      await assign.user(s, 'u@x', { generation: 10, keysChangedAt: 8, clientState: 'aa' });
      const before = await assign.lookup(s, 'u@x');
      expect(await refusal(s, 'u@x', login)).toEqual({ code: 'CONFLICT', reason });
      expect(await assign.lookup(s, 'u@x')).toEqual(before);
    });
  }
});

describe('retire, decommission, remove (upstream: retire_user, replace_user(s), unassign_node, remove_node)', () => {
  it('retire: generation to the maximum, every record replaced; the user is refused from then on', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    await assign.user(s, 'u@x', { generation: 3, keysChangedAt: 3, clientState: 'aa' });
    expect(await assign.retire('u@x', s)).toEqual({ services: 1 });
    const l = await assign.lookup(s, 'u@x');
    expect(l.records.every((r) => r.replacedAt !== 0)).toBe(true);
    expect(l.current.generation).toBe(Number.MAX_SAFE_INTEGER);
    expect(await refusal(s, 'u@x', { generation: 4, keysChangedAt: 4, clientState: 'aa' })).toEqual({ code: 'CONFLICT', reason: 'invalid-generation' });
    expect((await assign.nodes(s))[0]!.load).toBe(0);
  });

  it('decommission: the users move to another node on their next request, keeping their values; a uid list moves only those', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    const u = await assign.user(s, 'u@x', { generation: 7, keysChangedAt: 6, clientState: 'aa' });
    const v = await assign.user(s, 'v@x', { generation: 1, keysChangedAt: 1, clientState: 'bb' });
    await assign.addNode(s, 'https://b', { capacity: 10 });
    await assign.updateNode(s, 'https://a', { downed: true });
    expect(await assign.decommission(s, 'https://a', [u.uid])).toEqual({ replaced: 1 });
    const moved = await assign.user(s, 'u@x', { generation: 7, keysChangedAt: 6, clientState: 'aa' });
    expect(moved).toMatchObject({ node: 'https://b', generation: 7, keysChangedAt: 6, clientState: 'aa', allocated: true, firstSeenAt: u.firstSeenAt });
    expect(moved.uid).toBeGreaterThan(v.uid);
    expect((await assign.user(s, 'v@x', { generation: 1, keysChangedAt: 1, clientState: 'bb' })).node).toBe('https://a');
    expect(await assign.decommission(s, 'https://a')).toEqual({ replaced: 1, closed: false });
    expect((await assign.user(s, 'v@x', { generation: 1, keysChangedAt: 1, clientState: 'bb' })).node).toBe('https://b');
    expect(Object.fromEntries((await assign.nodes(s)).map((n) => [n.node, n.load]))).toEqual({ 'https://a': 0, 'https://b': 2 });
  });

  it('removing a node replaces its users first; they are allocated elsewhere next time', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    await assign.user(s, 'u@x');
    await assign.addNode(s, 'https://b', { capacity: 10 });
    expect(await assign.removeNode(s, 'https://a')).toEqual({ replaced: 1 });
    expect((await assign.nodes(s)).map((n) => n.node)).toEqual(['https://b']);
    expect(await assign.user(s, 'u@x')).toMatchObject({ node: 'https://b', allocated: true });
  });
});

describe('account events (upstream: the FxA event handling)', () => {
  it('delete retires the user in every service; an unknown user gets nothing', async () => {
    const s1 = await service();
    const s2 = await service();
    for (const s of [s1, s2]) {
      await assign.addNode(s, 'https://a', { capacity: 10 });
      await assign.user(s, 'gone@x', { generation: 2, keysChangedAt: 2, clientState: 'aa' });
    }
    await assign.event('delete', 'gone@x');
    for (const s of [s1, s2]) expect(await refusal(s, 'gone@x', { generation: 3, keysChangedAt: 3, clientState: 'aa' })).toEqual({ code: 'CONFLICT', reason: 'invalid-generation' });
    expect(await assign.event('delete', 'nobody@x')).toEqual({ changed: 0 });
    await expect(assign.lookup(s1, 'nobody@x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a password change or reset sets the generation to the event\'s - 1, never backwards', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    await assign.user(s, 'u@x', { generation: 10, keysChangedAt: 10, clientState: 'aa' });
    await assign.event('passwordChange', 'u@x', 21);
    expect((await assign.lookup(s, 'u@x')).current.generation).toBe(20);
    expect(await refusal(s, 'u@x', { generation: 19, keysChangedAt: 10, clientState: 'aa' })).toEqual({ code: 'CONFLICT', reason: 'invalid-generation' });
    expect((await assign.user(s, 'u@x', { generation: 21, keysChangedAt: 10, clientState: 'aa' })).generation).toBe(21);
    await assign.event('reset', 'u@x', 5);
    expect((await assign.lookup(s, 'u@x')).current.generation).toBe(21);
  });
});

describe('purge (upstream: purge_old_records)', () => {
  it('deletes replaced records past the grace period, skips downed nodes unless forced, lists them on a dry run', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    await assign.addNode(s, 'https://d', { capacity: 10 });
    await assign.updateNode(s, 'https://d', { backoff: 1 });
    const old = await assign.user(s, 'u@x', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const current = await assign.user(s, 'u@x', { generation: 2, keysChangedAt: 2, clientState: 'bb' });
    await assign.updateNode(s, 'https://d', { backoff: 0 });
    await assign.updateNode(s, 'https://a', { backoff: 1 });
    const onD = await assign.user(s, 'w@x', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    await assign.user(s, 'w@x', { generation: 2, keysChangedAt: 2, clientState: 'cc' });
    await assign.updateNode(s, 'https://d', { downed: true });
    // Within an hour's grace: nothing yet.
    expect(await assign.purge(s, { graceMs: 3_600_000 })).toMatchObject({ purged: [], skipped: 0 });
    expect(await assign.purge(s, { graceMs: 0, dryRun: true })).toMatchObject({ dryRun: true, purged: [{ uid: old.uid }], skipped: 1 });
    expect((await assign.lookup(s, 'u@x')).records).toHaveLength(2);
    expect(await assign.purge(s, { graceMs: 0 })).toMatchObject({ dryRun: false, purged: [{ uid: old.uid, email: 'u@x', node: 'https://a' }], skipped: 1 });
    expect((await assign.lookup(s, 'u@x')).records.map((r) => r.uid)).toEqual([current.uid]);
    expect(await assign.purge(s, { graceMs: 0, force: true })).toMatchObject({ purged: [{ uid: onD.uid }], skipped: 0 });
    expect(await assign.purge(s, { graceMs: 0, force: true })).toMatchObject({ purged: [], skipped: 0 });
  });

  it('a batch passes over records on downed nodes and says where it stopped, so the next goes on past them', async () => {
    const s = await service();
    await assign.addNode(s, 'https://d', { capacity: 100 });
    for (let g = 1; g <= 12; g++) await assign.user(s, 'u@x', { generation: g, keysChangedAt: g, clientState: `s${g}` }); // 11 replaced on d
    await assign.updateNode(s, 'https://d', { downed: true });
    await assign.addNode(s, 'https://a', { capacity: 100 });
    await assign.user(s, 'w@x', { generation: 1, keysChangedAt: 1, clientState: 'x' });
    await assign.user(s, 'w@x', { generation: 2, keysChangedAt: 2, clientState: 'y' }); // replaced on a, after all of u's
    const first = await assign.purge(s, { graceMs: 0, max: 1 });
    expect(first).toMatchObject({ purged: [], skipped: 10 }); // it looks at ten times the batch, no further
    expect(first.next).not.toBeNull();
    const second = await assign.purge(s, { graceMs: 0, max: 1, after: first.next! });
    expect(second).toMatchObject({ purged: [{ email: 'w@x', node: 'https://a' }], skipped: 1, next: null });
    await expect(assign.purge(s, { after: 'nonsense' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    // A grace longer than all time: nothing is due, and that is no error.
    expect(await assign.purge(s, { graceMs: 2 ** 48 })).toMatchObject({ purged: [], skipped: 0, next: null });
  });

  it('count gives the users assigned at a time', async () => {
    const s = await service();
    await assign.addNode(s, 'https://a', { capacity: 10 });
    const a = await assign.user(s, 'a@x', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const b = await assign.user(s, 'b@x');
    await assign.user(s, 'a@x', { generation: 2, keysChangedAt: 2, clientState: 'bb' }); // a replaced by a newer record: still one user
    expect(await assign.count(s)).toBe(2);
    expect(await assign.count(s, a.createdAt - 1)).toBe(0);
    // b may have been created in a's millisecond: just before b, only a (or no one yet) was there.
    expect(await assign.count(s, b.createdAt - 1)).toBe(a.createdAt < b.createdAt ? 1 : 0);
    expect(await assign.count(s, b.createdAt)).toBe(2);
  });
});
