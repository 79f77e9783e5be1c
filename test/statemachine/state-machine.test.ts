import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pack, unpack } from 'msgpackr';
import { bucketRange, internalPropertyKey } from '../../src/keys/index.js';
import { clientDataKey, itemKey, ListsBucket } from '../../src/families/lists/keys.js';
import { clientKey } from '../../src/families/sessions/keys.js';
import { lagKey } from '../../src/families/lag/keys.js';
import { watchKey, WatchesBucket } from '../../src/families/watches/keys.js';
import type { Command } from '../../src/families/core-commands.js';
import { MAX_BATCH_BYTES, StateMachine } from '../../src/statemachine/state-machine.js';
import { StateMachineError, type ApplyOutcome } from '../../src/statemachine/types.js';
import { EntryFeed, openTempDb, type TempDb } from './helpers.js';
import { failNextBatch, holdNextBatch, recordBatches } from '../support/batches.js';
import { lagOf } from '../../src/families/lag/queries.js';
import { watchersOf, watchesOf } from '../../src/families/watches/queries.js';
import { liveSessions } from '../../src/families/sessions/queries.js';
import { inspectIndexes } from '../../src/families/index-dump.js';
import { children, childrenStep, getList, lastIndexOf } from '../../src/families/lists/queries.js';
import { REGISTRY } from '../../src/families/registry.js';

let tmp: TempDb;
let sm: StateMachine;
let feed: EntryFeed;

beforeEach(async () => {
  tmp = await openTempDb();
  sm = await StateMachine.open(tmp.db, REGISTRY);
  feed = new EntryFeed();
});
afterEach(async () => {
  await tmp.cleanup();
});

const run = (c: Command): Promise<ApplyOutcome> => sm.apply(feed.command(c));
const open = (session: string): Promise<ApplyOutcome> => run({ op: 'openSession', session, timeoutMs: 5000, remote: `ip-${session}` });
const push = (session: string, path: string, data: unknown, extra: Partial<Command> = {}): Promise<ApplyOutcome> =>
  run({ op: 'push', session, path, data, persistent: false, watch: true, ...extra } as Command);
const has = async (key: Buffer): Promise<boolean> => (await tmp.db.get(key)) !== undefined;

async function bucketKeys(bucket: number): Promise<string[]> {
  const out: string[] = [];
  for await (const k of tmp.db.keys(bucketRange(bucket))) out.push(k.toString('hex'));
  return out;
}

describe('entries and the applied index', () => {
  it('starts at 0 and advances on noop and config entries without touching state', async () => {
    expect(sm.appliedIndex).toBe(0);
    const digest = await sm.digest();
    const a = await sm.apply(feed.noop());
    const b = await sm.apply(feed.config());
    expect(a).toEqual({ index: 1, ignored: false, result: { ok: true, op: 'noop' }, events: [] });
    expect(b.result).toEqual({ ok: true, op: 'config' });
    expect(sm.appliedIndex).toBe(2);
    expect(await sm.digest()).toBe(digest);
    expect(unpack((await tmp.db.get(internalPropertyKey('applied')))!)).toBe(2);
  });

  it('ignores an entry at or below the applied index and reports it', async () => {
    const first = feed.command({ op: 'openSession', session: 'A', timeoutMs: 1, remote: '' });
    await sm.apply(first);
    const again = await sm.apply(first);
    expect(again).toEqual({ index: 1, ignored: true, result: { ok: true, op: 'noop' }, events: [] });
    expect(sm.appliedIndex).toBe(1);
  });

  it('throws on a gap in the entry sequence', async () => {
    await expect(sm.apply({ index: 2, term: 1, kind: 'noop', data: new Uint8Array() })).rejects.toThrow(StateMachineError);
    expect(sm.appliedIndex).toBe(0);
  });

  it('answers BAD_REQUEST for undecodable bytes, changing only the applied index', async () => {
    await open('A');
    const digest = await sm.digest();
    const out = await sm.apply(feed.raw(new Uint8Array([0xc1, 0x00])));
    expect(out.result).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    const shape = await sm.apply(feed.raw(pack({ op: 'push', session: 'A', path: 'bad' })));
    expect(shape.result).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(sm.appliedIndex).toBe(3);
    expect(await sm.digest()).toBe(digest);
  });

  it('writes state and applied index in exactly one batch per entry', async () => {
    const writes = recordBatches(tmp.db);
    await open('A');
    await push('A', '/x', 1);
    await sm.apply(feed.raw(new Uint8Array([0xc1])));
    expect(writes).toHaveLength(3);
    for (const ops of writes) {
      const keys = ops.map((o) => o.key.toString('hex'));
      expect(keys).toContain(internalPropertyKey('applied').toString('hex'));
    }
    expect(writes[1]?.length).toBe(4); // item, cdata, watch, applied
  });
});

describe('applyMany', () => {
  it('writes a run of entries that plan from memory as one batch, and applies an entry that reads the db alone, after everything before it', async () => {
    const entries = [
      feed.command({ op: 'openSession', session: 'A', timeoutMs: 5000, remote: 'ip' }),
      feed.command({ op: 'push', session: 'A', path: '/x', data: 1, persistent: true, watch: false }),
      feed.command({ op: 'push', session: 'A', path: '/x', data: 2, persistent: true, watch: false }),
      feed.command({ op: 'delete', session: 'A', path: '/x', index: 3 }), // reads item 3 from the db
      feed.command({ op: 'push', session: 'A', path: '/x', data: 3, persistent: true, watch: false, ifLastIndex: 2 }),
      feed.command({ op: 'watch', session: 'A', path: '/x', prefix: false }), // reads the list from the db
    ];
    const planned: number[] = [];
    // When each outcome is reported written: how many batches were in the db by then.
    const writtenAfter: number[] = [];
    const writes = recordBatches(tmp.db);
    const outcomes = await sm.applyMany(entries, { onPlanned: (o) => planned.push(o.index), onWritten: () => writtenAfter.push(writes.length) });
    expect(planned).toEqual([1, 2, 3, 4, 5, 6]);
    expect(writtenAfter).toEqual([1, 1, 1, 2, 3, 4]);
    expect(outcomes.map((o) => o.result.ok)).toEqual([true, true, true, true, true, true]);
    const watched = outcomes[5]!.result;
    expect(watched.ok && watched.op === 'watch' ? watched.items?.map((i) => i.data) : null).toEqual([1, 3]);
    expect(writes).toHaveLength(4);
    const applied = internalPropertyKey('applied').toString('hex');
    // open + 2 pushes + the applied index; the delete alone; the last push; the watch alone (each + the applied index).
    expect(writes.map((ops) => ops.length)).toEqual([4, 2, 2, 2]);
    for (const ops of writes) expect(ops.filter((o) => o.key.toString('hex') === applied)).toHaveLength(1);
    expect(sm.appliedIndex).toBe(6);
    expect((await getList(sm, '/x')).items.map((i) => i.data)).toEqual([1, 3]);
  });
  it('cuts a run of entries into batches of about MAX_BATCH_BYTES, whatever the ops count', async () => {
    // Five pushes of 400 KB each plan from memory and would share one batch of 2 MB.
    const big = 'x'.repeat(400_000);
    const entries = [
      feed.command({ op: 'openSession', session: 'A', timeoutMs: 5000, remote: 'ip' }),
      ...Array.from({ length: 5 }, () => feed.command({ op: 'push', session: 'A', path: '/big', data: big, persistent: true, watch: false })),
    ];
    const writes = recordBatches(tmp.db);
    const outcomes = await sm.applyMany(entries);
    expect(outcomes.map((o) => o.result.ok)).toEqual([true, true, true, true, true, true]);
    const sizes = writes.map((ops) => ops.reduce((n, o) => n + o.key.byteLength + (o.type === 'put' ? o.value.byteLength : 0), 0));
    // No batch holds more than one entry's bytes past the bound.
    expect(writes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThan(MAX_BATCH_BYTES + 500_000);
    expect((await getList(sm, '/big')).items).toHaveLength(5);
  });

  it('reports an entry as its batch goes to the db; a read begun then waits for the batch and sees the entry', async () => {
    await open('A');
    const release = holdNextBatch(tmp.db);
    const entry = feed.command({ op: 'push', session: 'A', path: '/x', data: 7, persistent: true, watch: false });
    let readList: Promise<unknown[]> | null = null;
    let readItem: Promise<boolean> | null = null;
    const applying = sm.applyMany([entry], {
      onWritten: () => {
        readList = getList(sm, '/x').then((view) => view.items.map((i) => i.data));
        readItem = sm.readNow('a test', (db, snapshot) => db.getSync(itemKey('/x', entry.index), { snapshot }) !== undefined);
      },
    });
    for (let turn = 0; turn < 20 && readList === null; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(readList).not.toBeNull(); // reported while the batch is still held back
    expect(sm.appliedIndex).toBe(entry.index - 1);
    release();
    await applying;
    expect(await readList).toEqual([7]);
    expect(await readItem).toBe(true);
    expect(sm.appliedIndex).toBe(entry.index);
  });

  it('a read begun while an answered batch is written fails when that write fails, rather than miss the entry', async () => {
    await open('A');
    failNextBatch(tmp.db, new Error('disk full'));
    let read: Promise<unknown> | null = null;
    const applying = sm.applyMany([feed.command({ op: 'push', session: 'A', path: '/x', data: 7, persistent: true, watch: false })], {
      onWritten: () => {
        read = getList(sm, '/x');
        read.catch(() => undefined); // awaited below, after the apply settles
      },
    });
    await expect(applying).rejects.toThrow('disk full');
    expect(read).not.toBeNull();
    await expect(read).rejects.toThrow('disk full');
  });

  it('after an answered batch failed, reads begun later fail too, until a later batch has written its entries', async () => {
    await open('A');
    const entry = feed.command({ op: 'push', session: 'A', path: '/x', data: 7, persistent: true, watch: false });
    failNextBatch(tmp.db, new Error('disk full'));
    await expect(sm.applyMany([entry])).rejects.toThrow('disk full');
    vi.restoreAllMocks();
    await expect(getList(sm, '/x')).rejects.toThrow('disk full'); // begun after the failure: the writer may have been answered
    await sm.applyMany([entry]); // applied again (as a restarted member would)
    expect((await getList(sm, '/x')).items.map((i) => i.data)).toEqual([7]);
  });

  it('after a failed apply, the in-memory indexes are what the db holds again', async () => {
    await open('A');
    const entries = [
      feed.command({ op: 'push', session: 'A', path: '/x', data: 1, persistent: true, watch: false, ifLastIndex: 0 }),
      feed.command({ op: 'push', session: 'A', path: '/x', data: 2, persistent: true, watch: false }),
    ];
    failNextBatch(tmp.db, new Error('disk full'));
    await expect(sm.applyMany(entries)).rejects.toThrow('disk full');
    vi.restoreAllMocks();
    expect(sm.appliedIndex).toBe(1);
    expect(inspectIndexes(sm)).toEqual(inspectIndexes(await StateMachine.open(tmp.db, REGISTRY)));
    // The same entries apply cleanly afterwards (the push's compare-and-set sees the list as the db does).
    expect((await sm.applyMany(entries)).map((o) => o.result.ok)).toEqual([true, true]);
  });
});

describe('openSession', () => {
  it('creates the client record', async () => {
    const out = await open('A');
    expect(out.result).toEqual({ ok: true, op: 'openSession', session: 'A' });
    expect([...liveSessions(sm)]).toEqual([['A', { timeoutMs: 5000, remote: 'ip-A' }]]);
    expect(unpack((await tmp.db.get(clientKey('A')))!)).toEqual({ timeoutMs: 5000, remote: 'ip-A' });
  });

  it('refuses an id that already exists', async () => {
    await open('A');
    const out = await run({ op: 'openSession', session: 'A', timeoutMs: 1, remote: 'other' });
    expect(out.result).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect(liveSessions(sm).get('A')).toEqual({ timeoutMs: 5000, remote: 'ip-A' });
  });
});

describe('push', () => {
  beforeEach(async () => {
    await open('A');
  });

  it('writes the item, its reverse entry and the implicit watch, and reports one event', async () => {
    const out = await push('A', '/foo/bar', { x: 1 });
    const item = { index: 2, owner: 'A', data: { x: 1 } };
    expect(out.result).toEqual({ ok: true, op: 'push', item });
    expect(out.events).toEqual([{ index: 2, type: 'push', path: '/foo/bar', item }]);
    expect(await has(itemKey('/foo/bar', 2))).toBe(true);
    expect(await has(clientDataKey('A', '/foo/bar', 2))).toBe(true);
    expect(await has(watchKey({ prefix: false, path: '/foo/bar', session: 'A' }))).toBe(true);
    expect(await getList(sm, '/foo/bar')).toEqual({ index: 2, items: [item] });
    expect(lastIndexOf(sm, '/foo/bar')).toBe(2);
    expect(watchersOf(sm, '/foo/bar')).toEqual(new Set(['A']));
  });

  it('stores persistent items with no owner and no reverse entry; watch:false adds no watch', async () => {
    const out = await push('A', '/p', 'v', { persistent: true, watch: false });
    expect(out.result).toEqual({ ok: true, op: 'push', item: { index: 2, owner: null, data: 'v' } });
    expect(await bucketKeys(ListsBucket.clientData)).toEqual([]);
    expect(await bucketKeys(WatchesBucket.watch)).toEqual([]);
    expect(watchersOf(sm, '/p').size).toBe(0);
  });

  it('keeps items in index order', async () => {
    await push('A', '/l', 'a');
    await push('A', '/l', 'b');
    await push('A', '/l', 'c');
    const list = await getList(sm, '/l');
    expect(list.items.map((i) => [i.index, i.data])).toEqual([
      [2, 'a'],
      [3, 'b'],
      [4, 'c'],
    ]);
  });

  it('checks ifLastIndex: 0 means empty, otherwise the newest index; a stale one is a CONFLICT', async () => {
    expect((await push('A', '/lock', 'me', { ifLastIndex: 0 })).result.ok).toBe(true);
    const digest = await sm.digest();
    const stale = await push('A', '/lock', 'me too', { ifLastIndex: 0 });
    expect(stale.result).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect(stale.events).toEqual([]);
    expect(await sm.digest()).toBe(digest);
    expect((await push('A', '/lock', 'next', { ifLastIndex: 2 })).result.ok).toBe(true);
  });

  it('refuses an unknown session', async () => {
    const out = await push('B', '/x', 1);
    expect(out.result).toMatchObject({ ok: false, code: 'SESSION_EXPIRED' });
    expect(await bucketKeys(ListsBucket.item)).toEqual([]);
  });
});

describe('delete', () => {
  beforeEach(async () => {
    await open('A'); // 1
    await open('B'); // 2
    await push('A', '/l', 'a1'); // 3
    await push('A', '/l', 'p', { persistent: true }); // 4
    await push('A', '/l', 'a2'); // 5
  });

  it('removes an own ephemeral item and its reverse entry, reporting the item', async () => {
    const out = await run({ op: 'delete', session: 'A', path: '/l', index: 3 });
    expect(out.result).toEqual({ ok: true, op: 'delete' });
    expect(out.events).toEqual([{ index: 6, type: 'delete', path: '/l', item: { index: 3, owner: 'A', data: 'a1' } }]);
    expect(await has(itemKey('/l', 3))).toBe(false);
    expect(await has(clientDataKey('A', '/l', 3))).toBe(false);
    expect(lastIndexOf(sm, '/l')).toBe(5);
  });

  it('lets any session delete a persistent item', async () => {
    const out = await run({ op: 'delete', session: 'B', path: '/l', index: 4 });
    expect(out.result.ok).toBe(true);
    expect((await getList(sm, '/l')).items.map((i) => i.index)).toEqual([3, 5]);
  });

  it('moves the newest index back when the newest item goes, to 0 when the list empties', async () => {
    await run({ op: 'delete', session: 'A', path: '/l', index: 5 });
    expect(lastIndexOf(sm, '/l')).toBe(4);
    await run({ op: 'delete', session: 'A', path: '/l', index: 3 });
    await run({ op: 'delete', session: 'A', path: '/l', index: 4 });
    expect(lastIndexOf(sm, '/l')).toBe(0);
    expect((await push('A', '/l', 'again', { ifLastIndex: 0 })).result.ok).toBe(true);
  });

  it('answers NOT_FOUND for a missing item and FORBIDDEN for another session’s ephemeral item', async () => {
    const digest = await sm.digest();
    const missing = await run({ op: 'delete', session: 'A', path: '/l', index: 99 });
    expect(missing.result).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    const forbidden = await run({ op: 'delete', session: 'B', path: '/l', index: 3 });
    expect(forbidden.result).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(forbidden.events).toEqual([]);
    expect(await sm.digest()).toBe(digest);
    expect(sm.appliedIndex).toBe(7);
  });

  it('answers SESSION_EXPIRED for an unknown session', async () => {
    const out = await run({ op: 'delete', session: 'Z', path: '/l', index: 4 });
    expect(out.result).toMatchObject({ ok: false, code: 'SESSION_EXPIRED' });
  });
});

describe('watch and unwatch', () => {
  beforeEach(async () => {
    await open('A'); // 1
    await open('B'); // 2
    await push('A', '/a/b', 'x', { watch: false }); // 3
  });

  it('an exact watch returns the list as of its entry', async () => {
    const out = await run({ op: 'watch', session: 'B', path: '/a/b', prefix: false });
    expect(out.result).toEqual({ ok: true, op: 'watch', index: 4, items: [{ index: 3, owner: 'A', data: 'x' }] });
    expect(watchersOf(sm, '/a/b')).toEqual(new Set(['B']));
    expect(watchersOf(sm, '/a')).toEqual(new Set());
  });

  it('a prefix watch returns only the index and covers the path and everything below it', async () => {
    const out = await run({ op: 'watch', session: 'B', path: '/a', prefix: true });
    expect(out.result).toEqual({ ok: true, op: 'watch', index: 4 });
    expect(watchersOf(sm, '/a')).toEqual(new Set(['B']));
    expect(watchersOf(sm, '/a/b/c')).toEqual(new Set(['B']));
    expect(watchersOf(sm, '/ab')).toEqual(new Set());
    await run({ op: 'watch', session: 'A', path: '/', prefix: true });
    expect(watchersOf(sm, '/ab')).toEqual(new Set(['A']));
    expect(watchesOf(sm, 'B')).toEqual([{ prefix: true, path: '/a', session: 'B' }]);
  });

  it('unwatch removes only the named kind, and is harmless when absent', async () => {
    await run({ op: 'watch', session: 'B', path: '/a/b', prefix: false });
    await run({ op: 'watch', session: 'B', path: '/a/b', prefix: true });
    const out = await run({ op: 'unwatch', session: 'B', path: '/a/b', prefix: false });
    expect(out.result).toEqual({ ok: true, op: 'unwatch' });
    expect(watchesOf(sm, 'B')).toEqual([{ prefix: true, path: '/a/b', session: 'B' }]);
    expect((await run({ op: 'unwatch', session: 'B', path: '/zzz', prefix: false })).result.ok).toBe(true);
    expect(await bucketKeys(WatchesBucket.watch)).toEqual([watchKey({ prefix: true, path: '/a/b', session: 'B' }).toString('hex')]);
  });

  it('answers SESSION_EXPIRED for an unknown session', async () => {
    const out = await run({ op: 'watch', session: 'Z', path: '/a', prefix: true });
    expect(out.result).toMatchObject({ ok: false, code: 'SESSION_EXPIRED' });
    expect(watchersOf(sm, '/a').size).toBe(0);
  });
});

describe('ack', () => {
  it('raises each live session’s acknowledged index, never lowers it, and skips unknown sessions', async () => {
    await open('A');
    await open('B');
    const out = await run({ op: 'ack', acks: [['A', 7], ['B', 3], ['Z', 9], ['A', 5]] });
    expect(out.result).toEqual({ ok: true, op: 'ack' });
    expect(lagOf(sm, 'A')).toBe(7);
    expect(lagOf(sm, 'B')).toBe(3);
    expect(lagOf(sm, 'Z')).toBe(0);
    await run({ op: 'ack', acks: [['A', 2]] });
    expect(lagOf(sm, 'A')).toBe(7);
    expect(unpack((await tmp.db.get(lagKey('A')))!)).toEqual({ index: 7 });
    expect(await has(lagKey('Z'))).toBe(false);
  });
});

describe('closeSession', () => {
  it('deletes everything the session owns in one entry and leaves the rest', async () => {
    await open('A'); // 1
    await open('B'); // 2
    await push('A', '/b', 'a-b'); // 3
    await push('A', '/a', 'a-a'); // 4
    await push('A', '/a', 'kept', { persistent: true }); // 5
    await push('B', '/a', 'b-a'); // 6
    await push('A', '/a', 'a-a2'); // 7
    await run({ op: 'watch', session: 'A', path: '/', prefix: true }); // 8
    await run({ op: 'ack', acks: [['A', 8]] }); // 9

    const out = await run({ op: 'closeSession', session: 'A', reason: 'expired' }); // 10
    expect(out.result).toEqual({ ok: true, op: 'closeSession' });
    // Events follow key order: path first, then index.
    expect(out.events).toEqual([
      { index: 10, type: 'delete', path: '/a', item: { index: 4, owner: 'A', data: 'a-a' } },
      { index: 10, type: 'delete', path: '/a', item: { index: 7, owner: 'A', data: 'a-a2' } },
      { index: 10, type: 'delete', path: '/b', item: { index: 3, owner: 'A', data: 'a-b' } },
    ]);
    expect((await getList(sm, '/a')).items.map((i) => i.data)).toEqual(['kept', 'b-a']);
    expect((await getList(sm, '/b')).items).toEqual([]);
    expect(lastIndexOf(sm, '/a')).toBe(6);
    expect(lastIndexOf(sm, '/b')).toBe(0);
    expect([...liveSessions(sm).keys()]).toEqual(['B']);
    expect(watchesOf(sm, 'A')).toEqual([]);
    expect(lagOf(sm, 'A')).toBe(0);
    expect(await has(clientKey('A'))).toBe(false);
    expect(await has(lagKey('A'))).toBe(false);
    expect(await bucketKeys(ListsBucket.clientData)).toEqual([clientDataKey('B', '/a', 6).toString('hex')]);
    expect(await bucketKeys(WatchesBucket.watch)).toEqual([watchKey({ prefix: false, path: '/a', session: 'B' }).toString('hex')]);

    const after = await push('A', '/a', 'ghost');
    expect(after.result).toMatchObject({ ok: false, code: 'SESSION_EXPIRED' });
  });

  it('reads the items of a session it ends a chunk at a time, not one trip to LevelDB per item', async () => {
    await open('A');
    const owned = 1_300;
    for (let n = 0; n < owned; n++) await push('A', `/p${n % 3}`, n, { watch: false });
    const gets = vi.spyOn(tmp.db, 'get');
    const getMany = vi.spyOn(tmp.db, 'getMany');
    const out = await run({ op: 'closeSession', session: 'A', reason: 'bye' });
    expect(out.events).toHaveLength(owned);
    // In key order: /p0's items, then /p1's, then /p2's, each oldest first.
    expect(out.events.map((e) => e.path)).toEqual(['/p0', '/p1', '/p2'].flatMap((p, k) => Array.from({ length: Math.ceil((owned - k) / 3) }, () => p)));
    expect(gets).not.toHaveBeenCalled();
    expect(getMany.mock.calls.length).toBe(Math.ceil(owned / 512));
    expect((await getList(sm, '/p1')).items).toEqual([]);
  });

  it("walks back a list for its new newest item only where the ended session owned that list's newest", async () => {
    await open('A');
    await open('B');
    const lists = 300;
    for (let n = 0; n < lists; n++) await push('A', `/q${n}`, n, { watch: false });
    // B pushes after A in two lists of three: there A's item is not the newest, and the newest stays.
    for (let n = 0; n < lists; n++) if (n % 3 !== 0) await push('B', `/q${n}`, -n, { watch: false });
    const newestBefore = Array.from({ length: lists }, (_, n) => lastIndexOf(sm, `/q${n}`));
    const keys = vi.spyOn(tmp.db, 'keys');
    await run({ op: 'closeSession', session: 'A', reason: 'bye' });
    const walksBack = keys.mock.calls.filter(([options]) => options?.reverse === true).length;
    expect(walksBack).toBe(lists / 3);
    for (let n = 0; n < lists; n++) expect(lastIndexOf(sm, `/q${n}`), `/q${n}`).toBe(n % 3 === 0 ? 0 : newestBefore[n]);
  });

  it('answers SESSION_EXPIRED for a session that is not open', async () => {
    const out = await run({ op: 'closeSession', session: 'nobody', reason: 'bye' });
    expect(out.result).toMatchObject({ ok: false, code: 'SESSION_EXPIRED' });
  });
});

describe('queries', () => {
  it('children lists each name once, sorted, across paths that interleave in key order', async () => {
    await open('A');
    // '/a' + '-' and '.' sort between '/a' + SEP and '/a/': the seek logic must not skip them.
    for (const p of ['/a', '/a/x', '/a-b', '/a.c/d', '/a/y/z', '/b/q', '/a0', '/\u{1F600}', '/é'])
      await push('A', p, p, { watch: false });
    expect((await children(sm, '/')).children).toEqual(['a', 'a-b', 'a.c', 'a0', 'b', 'é', '\u{1F600}']);
    expect((await children(sm, '/a')).children).toEqual(['x', 'y']);
    expect((await children(sm, '/a/y')).children).toEqual(['z']);
    expect((await children(sm, '/a/x')).children).toEqual([]);
    expect((await children(sm, '/nothing')).children).toEqual([]);
    expect((await children(sm, '/')).index).toBe(sm.appliedIndex);
  });

  it('children in steps reaches every child, whatever the step size, each step starting past the last', async () => {
    await open('A');
    for (const p of ['/a/x', '/a-b', '/a.c/d', '/a/y/z', '/b/q', '/a0', '/\u{1F600}', '/é']) await push('A', p, p, { watch: false });
    const all = (await children(sm, '/')).children;
    for (const limit of [1, 2, 3, 100]) {
      const seen = new Set<string>();
      let from: Buffer | null = null;
      for (let step = 0; step < 50; step++) {
        const { names, next }: { names: readonly string[]; next: Buffer | null } = await childrenStep(sm, '/', from, limit);
        expect(names.length).toBeLessThanOrEqual(limit);
        for (const c of names) seen.add(c);
        if (next === null) break;
        if (from !== null) expect(Buffer.compare(next, from)).toBeGreaterThan(0);
        from = next;
      }
      expect([...seen].sort(), `limit ${limit}`).toEqual([...all].sort());
    }
  });

  it('children forgets a branch once its last list is empty', async () => {
    await open('A');
    await push('A', '/t/u', 1); // 2
    await push('A', '/t/v/w', 2); // 3
    await run({ op: 'delete', session: 'A', path: '/t/v/w', index: 3 });
    expect((await children(sm, '/t')).children).toEqual(['u']);
    await run({ op: 'closeSession', session: 'A', reason: 'bye' });
    expect((await children(sm, '/')).children).toEqual([]);
  });

  it('getList pairs items with the exact applied index they reflect, even while applies run', async () => {
    await open('A');
    const applies: Promise<ApplyOutcome>[] = [];
    for (let i = 0; i < 200; i++) applies.push(push('A', '/race', i, { watch: false }));
    let done = false;
    const all = Promise.all(applies).then(() => (done = true));
    const views: { index: number; items: readonly { index: number }[] }[] = [];
    while (!done) views.push(await getList(sm, '/race'));
    await all;
    views.push(await getList(sm, '/race'));
    for (const view of views) {
      // Entry 1 opened the session; entries 2..index each pushed one item.
      expect(view.items.map((it) => it.index)).toEqual(Array.from({ length: view.index - 1 }, (_, k) => k + 2));
    }
    expect(views.at(-1)?.index).toBe(201);
    expect(new Set(views.map((v) => v.index)).size).toBeGreaterThan(2); // the reads really interleaved
  });

  it('rejects invalid query arguments with a typed error', async () => {
    await expect(getList(sm, '/')).rejects.toThrow(StateMachineError);
    await expect(getList(sm, 'x')).rejects.toThrow(StateMachineError);
    await expect(children(sm, '/a/')).rejects.toThrow(StateMachineError);
    expect(() => watchersOf(sm, '/a//b')).toThrow(StateMachineError);
    expect(() => lagOf(sm, '')).toThrow(StateMachineError);
  });
});
