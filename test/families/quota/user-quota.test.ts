// Per-user storage quotas judged in apply (issue 31, item 7): a user past its
// items or bytes is refused with QUOTA_EXCEEDED and nothing changes, others go
// on, deleting gives the room back, settings per user and role raise it, and the
// counts are the same however entries were batched, after a restart and after a
// snapshot install (a copy of the store's replicated keys). Journal items count
// the same way, charged to the user whose add gave them their data.
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Bucket, bucketPrefix } from '../../../src/keys/index.js';
import { itemRange, ListsBucket } from '../../../src/families/lists/keys.js';
import { quota } from '../../../src/families/quota/index.js';
import type { Entry } from '../../../src/raft/types.js';
import { encodeCommand, requiredVersion } from '../../../src/families/commands.js';
import { type AnyCommand } from '../../../src/families/core-commands.js';
import { decodeChargedItem } from '../../../src/families/lists/codec.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import type { ApplyOutcome, VeraDb } from '../../../src/statemachine/types.js';
import { dumpDb, openTempDb, type TempDb } from '../../statemachine/helpers.js';
import { JournalBucket } from '../../../src/families/journal/keys.js';
import { chargeOf, decodeFlagged, decodeItem, encodeItem, type JournalItem } from '../../../src/families/journal/records.js';
import { pack } from '../../../src/statemachine/codec.js';
import { REGISTRY } from '../../../src/families/registry.js';

const LOOSE = { watches: 1000, items: 1000, bytes: 1 << 30, listItems: 1000 };
const BIG = { items: 1_000_000, bytes: 1 << 30 };

let tmp: TempDb;
let sm: StateMachine;
let last = 0;

beforeEach(async () => {
  tmp = await openTempDb();
  sm = await StateMachine.open(tmp.db, REGISTRY);
  last = 0;
});
afterEach(async () => {
  await tmp.cleanup();
});

const entry = (c: object): Entry => ({ index: ++last, term: 1, kind: 'command', data: encodeCommand(c as AnyCommand, 1000 + last) });
const run = (c: object): Promise<ApplyOutcome> => sm.apply(entry(c));
const authOp = (c: object): object => ({ family: 'auth', ...c });
const open = (session: string, principal?: string): object => ({ op: 'openSession', session, timeoutMs: 5000, remote: '10.0.0.1:1', ...(principal === undefined ? {} : { principal }) });
const push = (session: string, path: string, userQuota: object | undefined, extra: { persistent?: boolean; data?: unknown } = {}): object => ({
  op: 'push',
  session,
  path,
  data: extra.data ?? 'x',
  persistent: extra.persistent ?? true,
  watch: false,
  quota: LOOSE,
  ...(userQuota === undefined ? {} : { userQuota }),
});
const del = (session: string, path: string, index: number): object => ({ op: 'delete', session, path, index });
const txn = (session: string, success: object[], userQuota: object = BIG): object => ({ family: 'kv', op: 'txn', session, compare: [], success, failure: [], quota: LOOSE, userQuota });

/** Users alice and bob, root, authentication on, and a session for each of alice and bob. */
async function setUp(): Promise<void> {
  for (const name of ['root', 'alice', 'bob']) await run(authOp({ op: 'addUser', name, hash: null }));
  await run(authOp({ op: 'grantRole', user: 'root', role: 'root' }));
  await run(authOp({ op: 'enable', tokenKey: 'ab'.repeat(32) }));
  await run(open('A', 'alice'));
  await run(open('B', 'bob'));
}

function usage(user: string): { items: number; bytes: number } {
  return sm.stateOf(quota).of(user);
}

function refused(outcome: ApplyOutcome, pattern: RegExp): void {
  expect(outcome.result).toMatchObject({ ok: false, code: 'QUOTA_EXCEEDED' });
  if (!outcome.result.ok) expect(outcome.result.message).toMatch(pattern);
}

const ok = (outcome: ApplyOutcome): ApplyOutcome => (expect(outcome.result).toMatchObject({ ok: true }), outcome);
const indexOf = (outcome: ApplyOutcome): number => (outcome.result.ok && outcome.result.op === 'push' ? outcome.result.item.index : -1);

async function keysIn(db: VeraDb, path: string): Promise<number> {
  let n = 0;
  for await (const _ of db.keys(itemRange(path))) n++;
  return n;
}

/** Each user's items and bytes counted from the stored items themselves: list items, journal items and flagged journal items. */
async function recount(db: VeraDb): Promise<Array<[string, { items: number; bytes: number }]>> {
  const by = new Map<string, { items: number; bytes: number }>();
  const add = (user: string | undefined, bytes: number): void => {
    if (user === undefined) return;
    const u = by.get(user) ?? { items: 0, bytes: 0 };
    u.items++;
    u.bytes += bytes;
    by.set(user, u);
  };
  for await (const [, value] of db.iterator({ gte: bucketPrefix(ListsBucket.item), lt: bucketPrefix(ListsBucket.item + 1) })) add(decodeChargedItem(value).user, value.byteLength);
  const journalItem = (item: JournalItem): void => {
    // What is charged is a function of the content alone, whatever the record's history.
    if (item.user !== undefined) expect(item.chargedBytes).toBe(chargeOf(item));
    add(item.user, chargeOf(item));
  };
  for await (const value of db.values({ gte: bucketPrefix(JournalBucket.item), lt: bucketPrefix(JournalBucket.item + 1) })) journalItem(decodeItem(value));
  for await (const value of db.values({ gte: bucketPrefix(JournalBucket.flagged), lt: bucketPrefix(JournalBucket.flagged + 1) })) journalItem(decodeFlagged(value).item);
  return [...by].sort(([a], [b]) => (a < b ? -1 : 1));
}

const journalOp = (c: object): object => ({ family: 'journal', ...c });
const JSETTINGS = { timeoutMs: 1000, maxTimeouts: 0, priority: 100, expiresInMs: 0, maxItems: 1_000_000 };
/** A journal add of `keys` by `user` (undefined: an add that names no user, as before command version 9). */
const jadd = (name: string, keys: string[], user: string | undefined, limits: object = BIG, data: unknown = 'job'): object =>
  journalOp({ op: 'add', name, items: keys.map((key) => ({ key, data })), ...(user === undefined ? {} : { user, userQuota: limits }) });

describe('per-user storage quotas judged in apply', () => {
  it('refuses the item past a user’s limit, naming the user, the limit and how to raise it; others still write; a delete gives room back', async () => {
    await setUp();
    const limits = { items: 3, bytes: 1 << 20 };
    const pushed: number[] = [];
    for (let i = 0; i < 3; i++) pushed.push(indexOf(ok(await run(push('A', '/a', limits)))));
    const before = await dumpDb(tmp.db);
    refused(await run(push('A', '/a', limits)), /user alice stores 3 items and may store at most 3 .*vera user quota alice --items N/);
    // Nothing changed but the applied index.
    expect((await dumpDb(tmp.db)).filter(([k]) => !k.startsWith('0001'))).toEqual(before.filter(([k]) => !k.startsWith('0001')));
    expect(usage('alice').items).toBe(3);
    // Bob is not held back by alice's items.
    ok(await run(push('B', '/b', limits)));
    // Bob deleting alice's persistent item gives the room back to alice.
    ok(await run(del('B', '/a', pushed[0]!)));
    expect(usage('alice').items).toBe(2);
    ok(await run(push('A', '/a', limits)));
    expect(await recount(tmp.db)).toEqual(sm.stateOf(quota).dump());
  });

  it('bytes: the push that would pass the limit is refused, smaller ones fit', async () => {
    await setUp();
    ok(await run(push('A', '/a', BIG, { data: 'x'.repeat(100) })));
    const held = usage('alice').bytes;
    const limits = { items: 100, bytes: held + 50 };
    refused(await run(push('A', '/a', limits, { data: 'y'.repeat(100) })), new RegExp(`user alice stores ${held} bytes; \\d+ more would pass its limit of ${held + 50} bytes`));
    ok(await run(push('A', '/a', limits, { data: 'z' })));
  });

  it('ephemeral items count too and come back when their session ends; items of a session without a user are not counted', async () => {
    await setUp();
    await run(open('A2', 'alice'));
    for (let i = 0; i < 2; i++) ok(await run(push('A2', `/e${i}`, BIG, { persistent: false })));
    ok(await run(push('A', '/p', BIG)));
    expect(usage('alice').items).toBe(3);
    ok(await run({ op: 'closeSession', session: 'A2', reason: 'expired' }));
    expect(usage('alice').items).toBe(1);
    await run(open('anon'));
    ok(await run(push('anon', '/n', { items: 1, bytes: 1 })));
    expect(sm.stateOf(quota).dump().map(([u]) => u)).toEqual(['alice']);
  });

  it('a transaction is judged whole: its credits first, and a refusal anywhere changes nothing', async () => {
    await setUp();
    const limits = { items: 2, bytes: 1 << 20 };
    ok(await run(push('A', '/k', limits)));
    ok(await run(push('A', '/k', limits)));
    // A put replaces both: one item after it, within the limit.
    const put = ok(await run(txn('A', [{ op: 'put', path: '/k', data: 'v', owner: null, keep: 1 }], limits)));
    expect(put.result.ok).toBe(true);
    expect(usage('alice').items).toBe(1);
    const before = usage('alice');
    refused(await run(txn('A', [{ op: 'push', path: '/t1', data: 1, owner: null }, { op: 'push', path: '/t2', data: 2, owner: null }], limits)), /user alice stores 2 items and may store at most 2/);
    expect(usage('alice')).toEqual(before);
    expect(await keysIn(tmp.db, '/t1')).toBe(0);
  });

  it('settings: the user’s own wins, else the largest of its roles, else the leader’s default; removing the user drops its setting', async () => {
    await setUp();
    const tight = { items: 1, bytes: 1 << 20 };
    ok(await run(push('A', '/a', tight)));
    refused(await run(push('A', '/a', tight)), /may store at most 1 /);
    await run(authOp({ op: 'addRole', name: 'big' }));
    await run(authOp({ op: 'addRole', name: 'bigger' }));
    await run(authOp({ op: 'grantRole', user: 'alice', role: 'big' }));
    await run(authOp({ op: 'grantRole', user: 'alice', role: 'bigger' }));
    ok(await run(authOp({ op: 'setQuota', target: 'role', name: 'big', items: 2, bytes: null })));
    ok(await run(authOp({ op: 'setQuota', target: 'role', name: 'bigger', items: 3, bytes: null })));
    ok(await run(push('A', '/a', tight)));
    ok(await run(push('A', '/a', tight)));
    refused(await run(push('A', '/a', tight)), /may store at most 3 /);
    ok(await run(authOp({ op: 'setQuota', target: 'user', name: 'alice', items: 4, bytes: null })));
    ok(await run(push('A', '/a', tight)));
    refused(await run(push('A', '/a', tight)), /may store at most 4 /);
    expect((await run(authOp({ op: 'setQuota', target: 'user', name: 'nobody', items: 4, bytes: null }))).result).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    // Removing the setting (both null) falls back to the roles.
    ok(await run(authOp({ op: 'setQuota', target: 'user', name: 'alice', items: null, bytes: null })));
    refused(await run(push('A', '/a', tight)), /may store at most 3 /);
    await run({ op: 'closeSession', session: 'A', reason: 'bye' });
    ok(await run(authOp({ op: 'setQuota', target: 'user', name: 'alice', items: 9, bytes: null })));
    ok(await run(authOp({ op: 'removeUser', name: 'alice' })));
    sm = await StateMachine.open(await tmp.reopen(), REGISTRY);
    expect(sm.stateOf((await import('../../../src/families/auth/index.js')).auth).quotas.users.has('alice')).toBe(false);
  });

  it('with authentication off nothing is refused, but what is stored is still counted', async () => {
    await setUp();
    await run(authOp({ op: 'disable' }));
    for (let i = 0; i < 3; i++) ok(await run(push('A', '/a', { items: 1, bytes: 1 })));
    expect(usage('alice').items).toBe(3);
  });

  // The push's watch is the watches family's join, judged after the push's own plan charged the
  // user: its refusal must take the charge back with everything else, also for the next entry
  // in the same batch. And when both limits break, the user's is named.
  it('a push refused for its watch after its user was charged leaves no charge, in a batch too; the user quota is named first', async () => {
    await setUp();
    const watching = (session: string, path: string, watches: number, userQuota: object): object => ({ ...push(session, path, userQuota), watch: true, quota: { ...LOOSE, watches } });
    ok(await run(watching('A', '/w1', 1, BIG)));
    expect(usage('alice')).toEqual({ items: 1, bytes: expect.any(Number) });
    const before = usage('alice');
    const [refusedWatch, next] = await sm.applyMany([entry(watching('A', '/w2', 1, BIG)), entry(push('A', '/w3', BIG))]);
    refused(refusedWatch!, /holds 1 watches/);
    ok(next!);
    // Only the next push is charged, and the counts are what the stored items say.
    expect(usage('alice').items).toBe(before.items + 1);
    expect(await keysIn(tmp.db, '/w2')).toBe(0);
    expect(await recount(tmp.db)).toEqual(sm.stateOf(quota).dump());
    refused(await run(watching('A', '/w4', 1, { items: 1, bytes: 1 << 30 })), /user alice stores/);
  });

  it('a push carrying the user quota needs command version 9, so an older member stops on it rather than misapplying it', () => {
    expect(requiredVersion(push('A', '/a', undefined) as AnyCommand)).toBeLessThan(9);
    expect(requiredVersion(push('A', '/a', BIG) as AnyCommand)).toBe(9);
    expect(requiredVersion(txn('A', []) as AnyCommand)).toBe(9);
    expect(requiredVersion(authOp({ op: 'setQuota', target: 'user', name: 'a', items: 1, bytes: null }) as AnyCommand)).toBe(9);
  });

  it('counts survive a restart and a snapshot install, and equal a recount of the stored items', async () => {
    await setUp();
    for (let i = 0; i < 5; i++) ok(await run(push(i % 2 === 0 ? 'A' : 'B', `/l${i % 3}`, BIG, { persistent: i < 3, data: 'd'.repeat(i * 10) })));
    ok(await run(journalOp({ op: 'create', name: 'j', settings: JSETTINGS })));
    ok(await run(jadd('j', ['a', 'b', 'c'], 'alice', BIG, 'e'.repeat(7))));
    ok(await run(jadd('j', ['c', 'd'], 'bob')));
    const counts = sm.stateOf(quota).dump();
    // Alice's c was merged by bob: three list items and two journal items are hers.
    expect(counts.find(([u]) => u === 'alice')![1].items).toBe(5);
    expect(counts).toEqual(await recount(tmp.db));
    sm = await StateMachine.open(await tmp.reopen(), REGISTRY);
    expect(sm.stateOf(quota).dump()).toEqual(counts);
    // A snapshot is every key from 0x0001 on; the installing member loads from it.
    const other = await openTempDb();
    try {
      const ops: Array<{ type: 'put'; key: Buffer; value: Buffer }> = [];
      for await (const [key, value] of tmp.db.iterator({ gte: bucketPrefix(Bucket.internal) })) ops.push({ type: 'put', key, value });
      await other.db.batch(ops);
      const installed = await StateMachine.open(other.db, REGISTRY);
      expect(installed.stateOf(quota).dump()).toEqual(counts);
      expect(await installed.digest()).toBe(await sm.digest());
    } finally {
      await other.cleanup();
    }
  });
});

describe('journal items counted per user', () => {
  const create = (name: string, settings: object = JSETTINGS): object => journalOp({ op: 'create', name, settings });
  const leaseOf = (o: ApplyOutcome): number => ((o.result as { value: { lease: number } }).value.lease);
  const match = async (): Promise<void> => expect(await recount(tmp.db)).toEqual(sm.stateOf(quota).dump());

  it('charges the adding user; an add past its quota is refused whole and changes nothing while another user adds; done frees room', async () => {
    await setUp();
    await run(create('j'));
    const limits = { items: 3, bytes: 1 << 20 };
    ok(await run(jadd('j', ['a', 'b'], 'alice', limits)));
    expect(usage('alice').items).toBe(2);
    const before = await dumpDb(tmp.db);
    refused(await run(jadd('j', ['c', 'd'], 'alice', limits)), /user alice stores 2 items and may store at most 3 .*vera user quota alice --items N/);
    expect((await dumpDb(tmp.db)).filter(([k]) => !k.startsWith('0001'))).toEqual(before.filter(([k]) => !k.startsWith('0001')));
    ok(await run(jadd('j', ['x', 'y', 'z'], 'bob', limits)));
    expect(usage('bob').items).toBe(3);
    // A claim charges no one (and writes no usage record); the done gives alice's room back.
    const usageRecords = async (): Promise<string[][]> => (await dumpDb(tmp.db)).filter(([k]) => k.startsWith('001f'));
    const held = await usageRecords();
    const claim = ok(await run(journalOp({ op: 'claim', name: 'j', max: 1 })));
    expect(await usageRecords()).toEqual(held);
    ok(await run(journalOp({ op: 'done', name: 'j', key: 'a', lease: leaseOf(claim) })));
    expect(usage('alice').items).toBe(1);
    ok(await run(jadd('j', ['c', 'd'], 'alice', limits)));
    refused(await run(jadd('j', ['e'], 'alice', limits)), /user alice stores 3 items/);
    await match();
  });

  it('a merge charges the user who added the new data and gives the earlier adder its room back; bytes follow the data', async () => {
    await setUp();
    await run(create('j'));
    ok(await run(jadd('j', ['k'], 'alice', BIG, 'x')));
    const small = usage('alice').bytes;
    ok(await run(jadd('j', ['k'], 'bob', BIG, 'y'.repeat(50))));
    expect(usage('alice')).toEqual({ items: 0, bytes: 0 });
    expect(usage('bob')).toEqual({ items: 1, bytes: small + 50 });
    const limits = { items: 10, bytes: usage('bob').bytes + 10 };
    refused(await run(jadd('j', ['k'], 'bob', limits, 'z'.repeat(100))), /user bob stores \d+ bytes; \d+ more would pass its limit/);
    // A smaller version fits, and shrinks what bob is charged.
    ok(await run(jadd('j', ['k'], 'bob', limits, 'z')));
    expect(usage('bob')).toEqual({ items: 1, bytes: small });
    // An add while the item is processed keeps the version aside, charged with it.
    const claim = ok(await run(journalOp({ op: 'claim', name: 'j', max: 1 })));
    ok(await run(jadd('j', ['k'], 'alice', BIG, 'n'.repeat(20))));
    expect(usage('bob')).toEqual({ items: 0, bytes: 0 });
    expect(usage('alice').items).toBe(1);
    await match();
    // The done makes the version the item: alice is charged for it alone.
    ok(await run(journalOp({ op: 'done', name: 'j', key: 'k', lease: leaseOf(claim) })));
    expect(usage('alice')).toEqual({ items: 1, bytes: small + 19 });
    await match();
  });

  it('a flagged item stays charged until forgotten; expiry and a drop give the room back', async () => {
    await setUp();
    await run(create('j', { ...JSETTINGS, timeoutMs: 1 }));
    ok(await run(jadd('j', ['f'], 'alice')));
    const claim = ok(await run(journalOp({ op: 'claim', name: 'j', max: 1 })));
    const timedOut = ok(await run(journalOp({ op: 'timeout', name: 'j', claims: [['f', leaseOf(claim)]] })));
    expect(timedOut.result).toMatchObject({ value: { flagged: ['f'] } });
    expect(usage('alice').items).toBe(1);
    await match();
    ok(await run(journalOp({ op: 'requeue', name: 'j', key: 'f' })));
    expect(usage('alice').items).toBe(1);
    const again = ok(await run(journalOp({ op: 'claim', name: 'j', max: 1 })));
    ok(await run(journalOp({ op: 'timeout', name: 'j', claims: [['f', leaseOf(again)]] })));
    ok(await run(journalOp({ op: 'forget', name: 'j', key: 'f' })));
    expect(usage('alice')).toEqual({ items: 0, bytes: 0 });
    ok(await run(journalOp({ op: 'add', name: 'j', items: [{ key: 'old', data: 1, expiresAt: 1 }], user: 'alice', userQuota: BIG })));
    expect(usage('alice').items).toBe(1);
    ok(await run(journalOp({ op: 'expire', name: 'j', max: 10 })));
    expect(usage('alice').items).toBe(0);
    ok(await run(jadd('j', ['p', 'q'], 'alice')));
    ok(await run(jadd('j', ['r'], 'bob')));
    const c3 = ok(await run(journalOp({ op: 'claim', name: 'j', max: 1 })));
    ok(await run(journalOp({ op: 'timeout', name: 'j', claims: [['p', leaseOf(c3)]] })));
    expect(usage('alice').items).toBe(2);
    ok(await run(journalOp({ op: 'drop', name: 'j' })));
    expect(sm.stateOf(quota).dump()).toEqual([]);
    await match();
  });

  it('with authentication off nothing is refused; an add that names no user charges no one', async () => {
    await setUp();
    await run(create('j'));
    await run(authOp({ op: 'disable' }));
    ok(await run(jadd('j', ['a', 'b', 'c'], 'alice', { items: 1, bytes: 1 })));
    expect(usage('alice').items).toBe(3);
    ok(await run(jadd('j', ['d'], undefined)));
    expect(usage('alice').items).toBe(3);
    await match();
  });

  it('a journal item charged to no one is written byte for byte as before; a charged one keeps its user and charge', () => {
    const item: JournalItem = { key: 'k', data: { a: 1 }, priority: 3, processAt: 5, insertedAt: 4, expiresAt: 0, status: 'waiting', startedAt: 0, timeouts: 0, failures: 0, lease: 0, next: null };
    expect(encodeItem(item)).toEqual(pack(['k', { a: 1 }, 3, 5, 4, 0, 0, 0, 0, 0, null]));
    const charged = { ...item, user: 'alice', chargedBytes: chargeOf(item) };
    expect(decodeItem(encodeItem(charged))).toEqual(charged);
    expect(decodeItem(encodeItem({ ...charged, failures: 2 }))).toEqual({ ...charged, failures: 2 });
  });

  it('an add naming its user needs command version 9, and names both user and limits or neither', () => {
    expect(requiredVersion(jadd('j', ['a'], undefined) as AnyCommand)).toBeLessThan(9);
    expect(requiredVersion(jadd('j', ['a'], 'alice') as AnyCommand)).toBe(9);
    expect(() => encodeCommand(journalOp({ op: 'add', name: 'j', items: [{ key: 'a', data: 1 }], user: 'alice' }) as AnyCommand, 1)).toThrow(/user goes with userQuota/);
    expect(() => encodeCommand(journalOp({ op: 'add', name: 'j', items: [{ key: 'a', data: 1 }], userQuota: BIG }) as AnyCommand, 1)).toThrow(/user must be a user name/);
  });
});

describe('per-user usage under any batching', () => {
  it('gives the outcomes, db bytes and counts of the same entries applied one at a time, and counts equal a recount', async () => {
    const session = fc.constantFrom('A', 'B', 'A2');
    const path = fc.constantFrom('/x', '/y', '/z');
    const small = { items: 4, bytes: 400 };
    const journalName = fc.constantFrom('j1', 'j2');
    /** A lease that is the index of the entry before (the claim just before a done or timeout). */
    const PREVIOUS = -1;
    const withLease = (c: object, index: number): object => {
      const v = c as { lease?: number; claims?: Array<[string, number]> };
      if (v.lease === PREVIOUS) return { ...c, lease: index - 1 };
      if (v.claims?.[0]?.[1] === PREVIOUS) return { ...c, claims: [[v.claims[0][0], index - 1]] };
      return c;
    };
    const step = fc.oneof(
      fc.tuple(session, path, fc.boolean(), fc.nat(60)).map(([s, p, persistent, n]) => push(s, p, small, { persistent, data: 'q'.repeat(n) })),
      fc.tuple(session, path, fc.integer({ min: 1, max: 40 })).map(([s, p, i]) => del(s, p, i)),
      fc.tuple(session, path, fc.integer({ min: 1, max: 3 })).map(([s, p, keep]) => txn(s, [{ op: 'put', path: p, data: 'p', owner: null, keep }], small)),
      fc.tuple(session, path).map(([s, p]) => txn(s, [{ op: 'clear', path: p }], small)),
      session.map((s) => ({ op: 'closeSession', session: s, reason: 'bye' })),
      session.map((s) => open(s, s.startsWith('A') ? 'alice' : 'bob')),
      // Journal items: adds (merges, deferred versions), a claim and the done or timeout of what it took, expiry, flags, drops.
      fc
        .tuple(journalName, fc.array(fc.constantFrom('k1', 'k2', 'k3', 'k4'), { minLength: 1, maxLength: 3 }), fc.constantFrom('alice', 'bob', undefined), fc.nat(60), fc.boolean())
        .map(([j, keys, user, n, expires]) => journalOp({ op: 'add', name: j, items: keys.map((key) => ({ key, data: 'j'.repeat(n), ...(expires ? { expiresAt: 1 } : {}) })), ...(user === undefined ? {} : { user, userQuota: small }) })),
      fc.tuple(journalName, fc.constantFrom('k1', 'k2', 'k3', 'k4'), fc.constantFrom('done', 'timeout')).map(([j, key, end]) => [
        journalOp({ op: 'claim', name: j, max: 2 }),
        journalOp(end === 'done' ? { op: 'done', name: j, key, lease: PREVIOUS } : { op: 'timeout', name: j, claims: [[key, PREVIOUS]] }),
      ]),
      journalName.map((j) => journalOp({ op: 'expire', name: j, max: 10 })),
      fc.tuple(journalName, fc.constantFrom('k1', 'k2', 'k3', 'k4'), fc.boolean()).map(([j, key, back]) => journalOp({ op: back ? 'requeue' : 'forget', name: j, key })),
      journalName.map((j) => [journalOp({ op: 'drop', name: j }), journalOp({ op: 'create', name: j, settings: { ...JSETTINGS, timeoutMs: 1 } })]),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 40 }), fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 4 }), fc.array(fc.boolean(), { maxLength: 4 }), async (steps, sizes, restarts) => {
        const setup = [
          ...['root', 'alice', 'bob'].map((name) => authOp({ op: 'addUser', name, hash: null })),
          authOp({ op: 'grantRole', user: 'root', role: 'root' }),
          authOp({ op: 'enable', tokenKey: 'ab'.repeat(32) }),
          open('A', 'alice'),
          open('B', 'bob'),
          open('A2', 'alice'),
          ...['j1', 'j2'].map((name) => journalOp({ op: 'create', name, settings: { ...JSETTINGS, timeoutMs: 1 } })),
        ];
        const all: Entry[] = [...setup, ...steps.flat()].map((c, i) => ({ index: i + 1, term: 1, kind: 'command', data: encodeCommand(withLease(c, i + 1) as AnyCommand, 1000 + i) }));
        const copy = (e: Entry): Entry => ({ ...e, data: Buffer.from(e.data) });
        const [a, b] = [await openTempDb(), await openTempDb()];
        try {
          const one = await StateMachine.open(a.db, REGISTRY);
          let many = await StateMachine.open(b.db, REGISTRY);
          const expected = [];
          for (const e of all) expected.push(await one.apply(copy(e)));
          const actual = [];
          for (let k = 0, chunk = 0; k < all.length; chunk++) {
            const size = sizes[chunk % sizes.length]!;
            actual.push(...(await many.applyMany(all.slice(k, k + size).map(copy))));
            k += size;
            if (restarts[chunk % Math.max(1, restarts.length)] === true) many = await StateMachine.open(b.db, REGISTRY);
          }
          expect(actual.map((o) => o.result)).toEqual(expected.map((o) => o.result));
          expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
          expect(many.stateOf(quota).dump()).toEqual(one.stateOf(quota).dump());
          expect(one.stateOf(quota).dump()).toEqual(await recount(a.db));
          for (const [, u] of one.stateOf(quota).dump()) expect(u.items).toBeLessThanOrEqual(small.items);
        } finally {
          await a.cleanup();
          await b.cleanup();
        }
      }),
      { numRuns: 40 },
    );
  });
});
