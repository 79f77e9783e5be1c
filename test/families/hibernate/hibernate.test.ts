// The hibernation family on a real state machine over a real LevelDB and a real
// cold directory: freeze moves a unit's items to its cold file and thaw brings
// them back byte for byte; a freeze is cancelled by any change after the leader
// looked, by ephemeral items, by an empty or nested unit; lists refuse changes
// in a frozen unit; a restarted member agrees with one that never stopped; and
// each crash point of freeze and thaw (a step failing, then the entry applied
// again as a restart does) leaves the hot copy or a verified cold copy.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ColdStore, type HeldColdUnit } from '../../../src/families/hibernate/cold-store.js';
import { hibernate, type HibernateValue } from '../../../src/families/hibernate/index.js';
import { coldDirOf, MAX_HELD_THAW_READS } from '../../../src/families/hibernate/state.js';
import { FrozenSpanCompactor } from '../../../src/families/hibernate/compactor.js';
import { newestIndexIn, ownerIsNil, readUnit, sameList } from '../../../src/families/hibernate/freezing.js';
import { decodeItemValue, encodeItemValue } from '../../../src/families/lists/codec.js';
import { Breather, PACK_SLICE, READ_PAGE_PAUSE_MS, SlicedEntries } from '../../../src/families/hibernate/cold-store.js';
import { lists } from '../../../src/families/lists/index.js';
import { encodeCommand } from '../../../src/families/commands.js';
import { type Command } from '../../../src/families/core-commands.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import type { ApplyResult } from '../../../src/statemachine/types.js';
import { captureState, readRecords, replaceState } from '../../../src/raft/state-transfer.js';
import { APPLIED_INDEX } from '../../../src/statemachine/applied.js';
import { stateExtras } from '../../../src/statemachine/state-extras.js';
import { dumpDb, openTempDb, type TempDb } from '../../statemachine/helpers.js';
import { failNextBatch, recordBatches } from '../../support/batches.js';
import { bucketPrefix } from '../../../src/keys/index.js';
import { ListsBucket } from '../../../src/families/lists/keys.js';
import type { BatchOp } from '../../../src/statemachine/family.js';
import { getList } from '../../../src/families/lists/queries.js';
import { decodeItemKey, itemKey } from '../../../src/families/lists/keys.js';
import { FAMILIES, REGISTRY } from '../../../src/families/registry.js';
import { unitItemRanges } from '../../../src/families/hibernate/keys.js';

class Member {
  /** The index of the last entry applied. */
  index = 0;
  now = 1_000_000;

  constructor(
    readonly temp: TempDb,
    public sm: StateMachine,
  ) {}

  static async open(): Promise<Member> {
    const temp = await openTempDb();
    return new Member(temp, await StateMachine.open(temp.db, REGISTRY));
  }

  async run(command: Command | Record<string, unknown>): Promise<ApplyResult> {
    return (await this.sm.apply({ index: ++this.index, term: 1, kind: 'command', data: encodeCommand(command as Command, this.now) })).result;
  }

  /** Applies the same entry again, as a member does at restart when its batch was never written. */
  async again(command: Command | Record<string, unknown>): Promise<ApplyResult> {
    return (await this.sm.apply({ index: this.index, term: 1, kind: 'command', data: encodeCommand(command as Command, this.now) })).result;
  }

  /** A restart: the db closed and opened, the state machine loaded from it. */
  async restart(): Promise<void> {
    this.sm = await StateMachine.open(await this.temp.reopen(), REGISTRY);
  }

  async push(path: string, data: unknown, persistent = true): Promise<number> {
    const r = await this.run({ op: 'push', session: 's1', path, data, persistent, watch: false });
    if (!r.ok || r.op !== 'push') throw new Error(`push to ${path}: ${JSON.stringify(r)}`);
    return r.item.index;
  }

  async hibernate(command: Record<string, unknown>): Promise<HibernateValue> {
    const r = await this.run({ family: 'hibernate', ...command });
    if (!r.ok || r.op !== 'family') throw new Error(`${String(command.op)}: ${JSON.stringify(r)}`);
    return r.value as HibernateValue;
  }

  async items(path: string): Promise<unknown[]> {
    return (await getList(this.sm, path)).items.map((i) => i.data);
  }
}

/** The cold directory's files (it is made with the first one). */
function coldFiles(m: Member): string[] {
  const dir = coldDirOf(m.temp.db);
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** The bytes of every distinct ArrayBuffer reachable from `root` through its fields (private ones too), arrays and maps. */
function reachableBytes(root: unknown): number {
  const buffers = new Set<ArrayBufferLike>();
  const seen = new Set<object>();
  const visit = (v: unknown): void => {
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (ArrayBuffer.isView(v)) buffers.add(v.buffer);
    else if (v instanceof ArrayBuffer) buffers.add(v);
    else if (v instanceof Map) for (const [k, x] of v) (visit(k), visit(x));
    else for (const x of Object.values(v)) visit(x);
  };
  visit(root);
  return [...buffers].reduce((sum, b) => sum + b.byteLength, 0);
}

const members: Member[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const m of members.splice(0)) await m.temp.cleanup();
});

async function member(): Promise<Member> {
  const m = await Member.open();
  members.push(m);
  await m.run({ op: 'openSession', session: 's1', timeoutMs: 60_000, remote: 'test' });
  return m;
}

/** A unit /users/alice of two lists, and a neighbour /users/alice2 that must stay out of it. */
async function aliceUnit(m: Member): Promise<number> {
  await m.push('/users/alice', { n: 1 });
  await m.push('/users/alice/bookmarks', 'b1');
  await m.push('/users/alice2', 'not alice');
  return m.push('/users/alice/bookmarks', 'b2');
}

describe('freeze and thaw', () => {
  it('moves a unit to its cold file and back byte for byte, leaving its neighbours and no events', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    const before = await dumpDb(m.temp.db);
    const r = await m.run({ family: 'hibernate', op: 'freeze', unit: '/users/alice', seen: newest });
    expect(r).toMatchObject({ ok: true, value: { frozen: true, items: 3 } });
    expect(await m.items('/users/alice')).toEqual([]);
    expect(await m.items('/users/alice/bookmarks')).toEqual([]);
    expect(await m.items('/users/alice2')).toEqual(['not alice']);
    expect(coldFiles(m)).toHaveLength(1);
    expect(m.sm.stateOf(hibernate).frozen.get('/users/alice')).toMatchObject({ lists: [{ path: '/users/alice', items: 1 }, { path: '/users/alice/bookmarks', newest, items: 2 }] });
    expect(m.sm.stateOf(lists).lastIndexOf('/users/alice/bookmarks')).toBe(0);
    // The lengths quotas are judged against follow the items (kept in memory, never counted at a push).
    expect(m.sm.stateOf(lists).usage.listLength('/users/alice/bookmarks')).toBe(0);

    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toEqual({ op: 'thaw', unit: '/users/alice', thawed: true, items: 3 });
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
    expect(m.sm.stateOf(lists).lastIndexOf('/users/alice/bookmarks')).toBe(newest);
    expect(m.sm.stateOf(lists).usage.listLength('/users/alice/bookmarks')).toBe(2);
    expect(m.sm.stateOf(lists).usage.listLength('/users/alice')).toBe(1);
    // Every key as it was, but the applied index and clock the two entries moved.
    const after = await dumpDb(m.temp.db);
    const data = (rows: Array<[string, string]>): Array<[string, string]> => rows.filter(([k]) => k.startsWith('0003'));
    expect(data(after)).toEqual(data(before));
    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: false });
  });

  it('is cancelled by a change after the leader looked, ephemeral items, an empty unit, or a frozen unit around or inside it', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    expect(await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest - 1 })).toMatchObject({ frozen: false, why: 'changed' });
    expect(await m.hibernate({ op: 'freeze', unit: '/users/nobody', seen: 0 })).toMatchObject({ frozen: false, why: 'empty' });
    const eph = await m.push('/users/bob/presence', 'here', false);
    expect(await m.hibernate({ op: 'freeze', unit: '/users/bob', seen: eph })).toMatchObject({ frozen: false, why: 'ephemeral' });
    const inner = await m.push('/users/carol/inner', 'x');
    await m.push('/users/carol', 'y');
    expect(await m.hibernate({ op: 'freeze', unit: '/users/carol/inner', seen: inner })).toMatchObject({ frozen: true });
    expect(await m.hibernate({ op: 'freeze', unit: '/users/carol', seen: inner + 1 })).toMatchObject({ frozen: false, why: 'holds-frozen' });
    expect(await m.hibernate({ op: 'freeze', unit: '/users/carol/inner', seen: inner })).toMatchObject({ frozen: false, why: 'frozen' });
    expect(await m.items('/users/alice')).toEqual([{ n: 1 }]);
  });

  it('a list change or a watch in a frozen unit is refused and changes nothing; the thawed unit takes it', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest });
    expect(await m.run({ op: 'push', session: 's1', path: '/users/alice/bookmarks', data: 'b3', persistent: true, watch: false })).toMatchObject({ ok: false, code: 'CONFLICT', message: expect.stringContaining('hibernated unit /users/alice') });
    expect(await m.run({ op: 'delete', session: 's1', path: '/users/alice/bookmarks', index: newest })).toMatchObject({ ok: false, code: 'CONFLICT' });
    // A watch would read the list from the hot store, where it has no items.
    expect(await m.run({ op: 'watch', session: 's1', path: '/users/alice/bookmarks', prefix: false })).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect(await m.run({ op: 'watch', session: 's1', path: '/users', prefix: true })).toMatchObject({ ok: true });
    expect(await m.push('/users/alice2', 'next door is fine')).toBeGreaterThan(newest);
    await m.hibernate({ op: 'thaw', unit: '/users/alice' });
    await m.push('/users/alice/bookmarks', 'b3');
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2', 'b3']);
  });

  it('a restarted member holds what one that never stopped holds, frozen or thawed', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest });
    const frozen = m.sm.stateOf(hibernate).frozen.get('/users/alice');
    const listsDump = m.sm.stateOf(lists).dump();
    await m.restart();
    expect(m.sm.stateOf(hibernate).frozen.get('/users/alice')).toEqual(frozen);
    expect(m.sm.stateOf(lists).dump()).toEqual(listsDump);
    await m.hibernate({ op: 'thaw', unit: '/users/alice' });
    const thawedDump = m.sm.stateOf(lists).dump();
    await m.restart();
    expect(m.sm.stateOf(lists).dump()).toEqual(thawedDump);
    // The thawed unit's file was left for the sweep at start, which removed it.
    expect(coldFiles(m)).toEqual([]);
  });
});

describe('freezing in two entries (freezeUnits, then commitFreeze)', () => {
  it('marks idle units Freezing without moving an item, then freezes those unchanged in one batch; a written one goes back to Hot', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    const bob = await m.push('/users/bob/notes', 'n1');
    const carol = await m.push('/users/carol', 'c1');
    const start = await m.hibernate({
      op: 'freezeUnits',
      units: [
        { unit: '/users/alice', seen: newest },
        { unit: '/users/bob', seen: bob - 1 },
        { unit: '/users/carol', seen: carol },
        { unit: '/users/nobody', seen: 0 },
      ],
    });
    const began = m.index;
    expect(start).toEqual({
      op: 'freezeUnits',
      units: [
        { unit: '/users/alice', freezing: true },
        { unit: '/users/bob', freezing: true },
        { unit: '/users/carol', freezing: true },
        { unit: '/users/nobody', freezing: true },
      ],
    });
    const state = m.sm.stateOf(hibernate);
    expect([...state.freezing.keys()].sort()).toEqual(['/users/alice', '/users/bob', '/users/carol', '/users/nobody']);
    expect(state.frozen.size).toBe(0);
    // A second freeze of a Freezing unit is held back.
    expect(await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/alice', seen: newest }] })).toEqual({ op: 'freezeUnits', units: [{ unit: '/users/alice', freezing: false, why: 'freezing' }] });
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
    // A one-entry freeze of a Freezing unit is refused: one freeze at a time.
    expect(await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest })).toMatchObject({ frozen: false, why: 'freezing' });
    // A write while Freezing is taken, and cancels that unit's freeze in its own batch.
    await m.push('/users/carol', 'c2');
    expect(state.freezing.has('/users/carol')).toBe(false);
    await Promise.all([...state.writing.values()].map((w) => w.done));

    const commit = await m.hibernate({ op: 'commitFreeze', units: ['/users/alice', '/users/carol', '/users/bob', '/users/nobody'] });
    expect(commit).toEqual({
      op: 'commitFreeze',
      units: [
        { op: 'freeze', unit: '/users/alice', frozen: true, items: 3, bytes: expect.any(Number) },
        { op: 'freeze', unit: '/users/carol', frozen: false, why: 'not-freezing' },
        // Written after the leader looked (seen is older than its newest item).
        { op: 'freeze', unit: '/users/bob', frozen: false, why: 'changed' },
        { op: 'freeze', unit: '/users/nobody', frozen: false, why: 'empty' },
      ],
    });
    expect(state.freezing.size).toBe(0);
    expect(state.frozen.get('/users/alice')).toMatchObject({ frozenAt: began, lists: [{ path: '/users/alice', items: 1 }, { path: '/users/alice/bookmarks', newest, items: 2 }] });
    expect(await m.items('/users/alice/bookmarks')).toEqual([]);
    expect(await m.items('/users/alice2')).toEqual(['not alice']);
    expect(await m.items('/users/carol')).toEqual(['c1', 'c2']);
    await m.restart();
    // The sweep kept the Frozen unit's file and took carol's, whose freeze was cancelled.
    expect(coldFiles(m)).toHaveLength(1);
    expect(m.sm.stateOf(hibernate).freezing.size).toBe(0);
    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: true, items: 3 });
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
  });

  it('once its file is written, a Freezing unit holds nothing of its entries until the commit, which reads the keys it deletes', async () => {
    const m = await member();
    const big = 'v'.repeat(20_000);
    for (let n = 0; n < 6; n++) await m.push('/users/alice', { n, big });
    const newest = await m.push('/users/alice/bookmarks', { big });
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/alice', seen: newest }] });
    const state = m.sm.stateOf(hibernate);
    const prepared = await state.writing.get('/users/alice')!.done;
    if ('why' in prepared) throw new Error(prepared.why);
    // Not its values (140,000 bytes), nor its keys: copying a 100,000-item unit's keys held each member's thread for 0.1 to 0.2 s.
    expect(reachableBytes(prepared)).toBe(0);
    expect(prepared.items).toBe(7);
    expect(await m.hibernate({ op: 'commitFreeze', units: ['/users/alice'], step: 250 })).toMatchObject({ units: [{ unit: '/users/alice', frozen: true, items: 7 }] });
    expect(await m.items('/users/alice')).toEqual([]);
    expect(await m.items('/users/alice/bookmarks')).toEqual([]);
    const read = await readUnit(m.temp.db, '/users/alice');
    expect(read).toEqual({ why: 'empty' });
    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: true, items: 7 });
    expect(await m.items('/users/alice/bookmarks')).toEqual([{ big }]);
  });

  it('a delete, or a session ending with items in the unit, cancels its freeze in the same batch', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    await m.run({ op: 'openSession', session: 's2', timeoutMs: 60_000, remote: 'test' });
    const here = await m.run({ op: 'push', session: 's2', path: '/users/erin/presence', data: 'here', persistent: false, watch: false });
    const erinNewest = (here as { item: { index: number } }).item.index;
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/alice', seen: newest }, { unit: '/users/erin', seen: erinNewest }] });
    expect([...m.sm.stateOf(hibernate).freezing.keys()].sort()).toEqual(['/users/alice', '/users/erin']);
    expect(await m.run({ op: 'delete', session: 's1', path: '/users/alice/bookmarks', index: newest })).toMatchObject({ ok: true });
    expect(await m.run({ op: 'closeSession', session: 's2', reason: 'expired' })).toMatchObject({ ok: true });
    expect(m.sm.stateOf(hibernate).freezing.size).toBe(0);
    await m.restart();
    expect(m.sm.stateOf(hibernate).freezing.size).toBe(0);
    expect(await m.hibernate({ op: 'commitFreeze', units: ['/users/alice', '/users/erin'] })).toMatchObject({ units: [{ why: 'not-freezing' }, { why: 'not-freezing' }] });
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1']);
  });

  it('a cancelled freeze\'s file, written late in the background, never lands on a newer freeze\'s file (found by a chaos trial)', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    // The background write of the first freeze is held until a newer freeze of the unit has written its file.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const reached = new Promise<void>((r) => (entered = r));
    const write = ColdStore.prototype.write;
    const spy = vi.spyOn(ColdStore.prototype, 'write').mockImplementationOnce(async function (this: ColdStore, cold, wanted) {
      entered();
      await held;
      return write.call(this, cold, wanted);
    });
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/alice', seen: newest }] });
    const background = m.sm.stateOf(hibernate).writing.get('/users/alice')!;
    // The background prepare reads the unit in paced slices before it writes: wait until its write is
    // the one held, or (on a busy machine) the newer freeze's own write would take the held mock and wait forever.
    await reached;
    // A write cancels that freeze; a one-entry freeze then freezes the unit with its own file.
    const b3 = await m.push('/users/alice/bookmarks', 'b3');
    expect(await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: b3 })).toMatchObject({ frozen: true, items: 4 });
    const frozenAt = m.sm.stateOf(hibernate).frozen.get('/users/alice')!.frozenAt;
    release();
    await expect(background.done).rejects.toThrow(/no longer wanted/);
    spy.mockRestore();
    const file = await (await ColdStore.open(coldDirOf(m.temp.db))).read('/users/alice');
    expect(file.meta.frozenAt).toBe(frozenAt);
    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: true, items: 4 });
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2', 'b3']);
  });

  it('a member that restarts between the two entries, or whose background write failed, writes the file at the commit and ends as one that did not', async () => {
    const a = await member();
    const b = await member();
    const c = await member();
    const entries: Array<Record<string, unknown>> = [];
    for (const m of [a, b, c]) {
      const newest = await aliceUnit(m);
      const carol = await m.push('/users/carol', 'c1');
      entries.push({ family: 'hibernate', op: 'freezeUnits', units: [{ unit: '/users/alice', seen: newest }, { unit: '/users/carol', seen: carol }] });
    }
    expect(entries[1]).toEqual(entries[0]);
    await a.run(entries[0]!);
    await b.run(entries[0]!);
    // c's background writes fail (a full disk for a moment): its commit does the work itself.
    const write = vi.spyOn(ColdStore.prototype, 'write').mockRejectedValueOnce(new Error('disk full')).mockRejectedValueOnce(new Error('disk full'));
    await c.run(entries[0]!);
    write.mockRestore();
    await b.restart();
    expect([...b.sm.stateOf(hibernate).freezing.keys()].sort()).toEqual(['/users/alice', '/users/carol']);
    expect(b.sm.stateOf(hibernate).writing.size).toBe(0);
    const commit = { family: 'hibernate', op: 'commitFreeze', units: ['/users/alice', '/users/carol'] };
    for (const m of [a, b, c]) expect(await m.run(commit)).toMatchObject({ ok: true, value: { units: [{ frozen: true }, { frozen: true }] } });
    const hibernated = async (m: Member): Promise<Array<[string, string]>> => (await dumpDb(m.temp.db)).filter(([k]) => k.startsWith('0017') || k.startsWith('0019') || k.startsWith('0003'));
    expect((await hibernated(a)).filter(([k]) => k.startsWith('0017'))).toHaveLength(2);
    expect(await hibernated(b)).toEqual(await hibernated(a));
    expect(await hibernated(c)).toEqual(await hibernated(a));
    for (const m of [a, b, c]) {
      expect(await m.hibernate({ op: 'thaw', unit: '/users/carol' })).toMatchObject({ thawed: true, items: 1 });
      expect(await m.items('/users/carol')).toEqual(['c1']);
    }
  });

  it('commit, crash with the cold files durable and the batch unwritten: every unit stays hot and Freezing, and the commit applied again freezes them', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    const carol = await m.push('/users/carol', 'c1');
    await m.run({ family: 'hibernate', op: 'freezeUnits', units: [{ unit: '/users/alice', seen: newest }, { unit: '/users/carol', seen: carol }] });
    failNextBatch(m.temp.db, new Error('crash before the batch'));
    const commit = { family: 'hibernate', op: 'commitFreeze', units: ['/users/alice', '/users/carol'] };
    await expect(m.run(commit)).rejects.toThrow(/crash before the batch/);
    vi.restoreAllMocks();
    await m.restart();
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
    expect(m.sm.stateOf(hibernate).frozen.size).toBe(0);
    expect(m.sm.stateOf(hibernate).freezing.size).toBe(2);
    expect(await m.again(commit)).toMatchObject({ ok: true, value: { units: [{ frozen: true }, { frozen: true }] } });
    await m.restart();
    expect(coldFiles(m)).toHaveLength(2);
    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: true, items: 3 });
  });

  it('refuses an empty, too long, repeated or nested list of units, and changes nothing', () => {
    const bad: unknown[] = [
      [],
      Array.from({ length: 65 }, (_, n) => ({ unit: `/u/${n}`, seen: 0 })),
      [{ unit: '/users/alice', seen: 1 }, { unit: '/users/alice', seen: 1 }],
      [{ unit: '/users/alice', seen: 1 }, { unit: '/users/alice/bookmarks', seen: 1 }],
      [{ unit: '/users/alice', seen: 1, extra: 1 }],
      [{ unit: 'users', seen: 0 }],
    ];
    for (const units of bad) expect(() => encodeCommand({ family: 'hibernate', op: 'freezeUnits', units } as never)).toThrow(/units|path must/);
    for (const units of [[], ['/a', '/a'], ['/a', '/a/b'], [1]]) expect(() => encodeCommand({ family: 'hibernate', op: 'commitFreeze', units } as never)).toThrow(/units|path/);
  });

  it('compacts the span the freezes deleted once they go quiet', async () => {
    const m = await member();
    const units = 16;
    const seen: number[] = [];
    for (let u = 0; u < units; u++) for (let n = 0; n < 50; n++) seen[u] = await m.push(`/users/u${u}/items`, { n, pad: 'x'.repeat(200) });
    const compactor = m.sm.stateOf(hibernate).compactor;
    const compactRange = vi.spyOn(m.temp.db, 'compactRange');
    expect(compactor.compactions).toBe(0);
    await m.hibernate({ op: 'freezeUnits', units: Array.from({ length: units }, (_, u) => ({ unit: `/users/u${u}`, seen: seen[u]! })) });
    // The compaction waits for the freezes to go quiet (10 s): the test moves the clock instead.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      expect(await m.hibernate({ op: 'commitFreeze', units: Array.from({ length: units }, (_, u) => `/users/u${u}`) })).toMatchObject({ units: Array.from({ length: units }, () => ({ frozen: true })) });
      vi.advanceTimersByTime(9_000);
      expect(compactRange).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1_000);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(() => expect(compactor.compactions).toBe(1), { timeout: 10_000 });
    // One compaction, from the first unit's items to past the last's (u0 < u15 < u9 as bytes).
    expect(compactRange).toHaveBeenCalledTimes(1);
    const [gte, lt] = compactRange.mock.calls[0]! as unknown as [Buffer, Buffer];
    expect(gte.toString('latin1')).toContain('/users/u0');
    expect(lt.toString('latin1')).toContain('/users/u9');
  });
});

describe('compaction waits for the steps of a large freeze or thaw (issue 34)', () => {
  it('never compacts while a unit drains: the drain notes its span when its last step is done', async () => {
    const m = await member();
    const small = await m.push('/users/small/items', 'one');
    let big = 0;
    for (let n = 0; n < 300; n++) big = await m.push('/users/big/items', { n });
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/small', seen: small }, { unit: '/users/big', seen: big }] });
    await Promise.all([...m.sm.stateOf(hibernate).writing.values()].map((w) => w.done));
    const state = m.sm.stateOf(hibernate);
    const compactRange = vi.spyOn(m.temp.db, 'compactRange');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      // The small unit's hot copy goes in the commit's batch; the large one drains, 100 a step.
      expect(await m.hibernate({ op: 'commitFreeze', units: ['/users/small', '/users/big'], step: 100 })).toMatchObject({ units: [{ frozen: true }, { frozen: true }] });
      expect(state.draining.has('/users/big')).toBe(true);
      const frozenAt = state.frozen.get('/users/big')!.frozenAt;
      for (let done = false; !done; ) {
        vi.advanceTimersByTime(10_000);
        expect(compactRange).not.toHaveBeenCalled();
        done = ((await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: 100 })) as { done: boolean }).done;
      }
      vi.advanceTimersByTime(9_000);
      expect(compactRange).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1_000);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(() => expect(state.compactor.compactions).toBe(1), { timeout: 10_000 });
    expect(compactRange).toHaveBeenCalledTimes(1);
  });
});

describe('review of the paced freeze (issue 34)', () => {
  // A follower catching up applies a freeze and its commit back to back: the commit's apply then
  // waits for the read beside the log, which must stop pausing 50 ms a page for it.
  it('stops pacing a unit\u2019s read once its commit is applied and waits for it', async () => {
    const m = await member();
    let big = 0;
    for (let n = 0; n < 5 * PACK_SLICE + 10; n++) big = await m.push('/users/big/items', { n });
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/big', seen: big }] });
    // Applied at once: the commit finds the read under way (five pages, four paced pauses) and
    // hurries it; at most the pause under way when it was proposed is a paced one.
    const timeouts = vi.spyOn(globalThis, 'setTimeout');
    expect(await m.hibernate({ op: 'commitFreeze', units: ['/users/big'] })).toMatchObject({ units: [{ frozen: true }] });
    const paced = timeouts.mock.calls.filter(([, ms]) => ms === READ_PAGE_PAUSE_MS).length;
    expect(paced).toBeLessThanOrEqual(1);
    const breather = new Breather(READ_PAGE_PAUSE_MS);
    breather.hurry();
    timeouts.mockClear();
    await breather.pause();
    expect(timeouts).not.toHaveBeenCalled();
  });

  // The compaction waits while a unit drains; a state replaced (a snapshot installed) or a db closed
  // meanwhile would leave it waiting, rescheduling every 10 s, for good.
  it('the compactor stops for a closed db and when stopped, instead of waiting on for good', async () => {
    const m = await member();
    const compactor = m.sm.stateOf(hibernate).compactor;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      compactor.frozen([{ gte: Buffer.from([0x00, 0x03]), lt: Buffer.from([0x00, 0x04]) }]);
      expect(vi.getTimerCount()).toBe(1);
      compactor.stop();
      expect(vi.getTimerCount()).toBe(0);
      compactor.frozen([{ gte: Buffer.from([0x00, 0x03]), lt: Buffer.from([0x00, 0x04]) }]);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    const closed = new FrozenSpanCompactor({ status: 'closed' } as never, 10, () => true);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      closed.frozen([{ gte: Buffer.from([0x00, 0x03]), lt: Buffer.from([0x00, 0x04]) }]);
      await vi.advanceTimersByTimeAsync(10);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  // Every change to a unit's items cancels its freeze through an event; a change that skipped its
  // event (a future write path's bug) must not have the commit delete items its cold file lacks.
  it('refuses a commit whose unit holds other keys than the freeze read, deleting nothing', async () => {
    const m = await member();
    let seen = 0;
    for (let n = 0; n < 5; n++) seen = await m.push('/users/quiet/items', { n });
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/quiet', seen }] });
    await Promise.all([...m.sm.stateOf(hibernate).writing.values()].map((w) => w.done));
    // An item written behind apply's back: no event, so nothing cancelled the freeze.
    await m.temp.db.put(itemKey('/users/quiet/items', 999), encodeItemValue({ owner: null, data: 'stray' }));
    expect(await m.hibernate({ op: 'commitFreeze', units: ['/users/quiet'] })).toMatchObject({ units: [{ unit: '/users/quiet', frozen: false, why: 'changed' }] });
    expect(m.sm.stateOf(hibernate).frozen.has('/users/quiet')).toBe(false);
    expect((await getList(m.sm, '/users/quiet/items')).items).toHaveLength(6);
  });
});

describe('the hot store shrinks by itself (issue 34, defect 7)', () => {
  /** The bytes of the db's files on disk (tables and the write-ahead log). */
  const dbBytes = (m: Member): number => readdirSync(m.temp.db.location).reduce((n, f) => n + statSync(join(m.temp.db.location, f)).size, 0);

  it('after freezing 90% of the data, the db on disk is several times smaller, with no operator step', async () => {
    const m = await member();
    const units = 10;
    const seen: number[] = [];
    for (let u = 0; u < units; u++) for (let n = 0; n < 300; n++) seen[u] = await m.push(`/users/u${String(u).padStart(2, '0')}/items`, { n, pad: 'x'.repeat(1000) });
    // LevelDB as it settles by itself after a load (tables, not a write-ahead log holding everything).
    await m.temp.db.compactRange(Buffer.alloc(0), Buffer.alloc(1, 0xff));
    const before = dbBytes(m);
    const frozen = Array.from({ length: 9 }, (_, u) => `/users/u${String(u).padStart(2, '0')}`);
    await m.hibernate({ op: 'freezeUnits', units: frozen.map((unit, u) => ({ unit, seen: seen[u]! })) });
    await Promise.all([...m.sm.stateOf(hibernate).writing.values()].map((w) => w.done));
    const compactor = m.sm.stateOf(hibernate).compactor;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      // A step that fits every unit: the hot copies go in the commit's batch.
      await m.hibernate({ op: 'commitFreeze', units: frozen, step: 100_000 });
      vi.advanceTimersByTime(10_000);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(() => expect(compactor.compactions).toBe(1), { timeout: 20_000 });
    const after = dbBytes(m);
    expect(after).toBeLessThan(before / 4);
    expect(await m.items('/users/u09/items')).toHaveLength(300);
  });
});

describe('crash points', () => {
  /** Makes ColdStore.write fail at one step (the crash), leaving what a crash there leaves. */
  function failWrite(at: 'before' | 'after-temp'): void {
    vi.spyOn(ColdStore.prototype, 'write').mockImplementationOnce(async function (this: ColdStore, cold) {
      if (at === 'after-temp') {
        mkdirSync(this.dir, { recursive: true });
        writeFileSync(`${this.fileOf(cold.unit)}.tmp-crashed`, 'half');
      }
      throw new Error(`crash ${at}`);
    });
  }

  for (const at of ['before', 'after-temp'] as const) {
    it(`freeze, crash ${at === 'before' ? 'before the cold file' : 'with a temporary file written'}: the hot copy stays, and the entry applied again freezes`, async () => {
      const m = await member();
      const newest = await aliceUnit(m);
      failWrite(at);
      const freeze = { family: 'hibernate', op: 'freeze', unit: '/users/alice', seen: newest };
      await expect(m.run(freeze)).rejects.toThrow(/crash/);
      await m.restart();
      expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
      expect(m.sm.stateOf(hibernate).frozen.size).toBe(0);
      expect(coldFiles(m)).toEqual([]); // the sweep took the leftover
      expect(await m.again(freeze)).toMatchObject({ ok: true, value: { frozen: true } });
      expect(await m.items('/users/alice/bookmarks')).toEqual([]);
    });
  }

  it('freeze, crash with the cold file durable but the batch unwritten: the hot copy stays, the file is swept, the entry applied again freezes', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    // The batch write fails after the file is in place: the db keeps the hot copy.
    failNextBatch(m.temp.db, new Error('crash before the batch'));
    const freeze = { family: 'hibernate', op: 'freeze', unit: '/users/alice', seen: newest };
    await expect(m.run(freeze)).rejects.toThrow(/crash before the batch/);
    vi.restoreAllMocks();
    // The failed apply reloaded the state from the db, as a restart does: the unit is Hot (its batch never
    // happened), so the sweep removed the file, and the items are there.
    await m.restart();
    expect(coldFiles(m)).toEqual([]);
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
    expect(await m.again(freeze)).toMatchObject({ ok: true, value: { frozen: true } });
    await m.restart();
    expect(m.sm.stateOf(hibernate).frozen.has('/users/alice')).toBe(true);
    expect(await m.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: true, items: 3 });
  });

  it('thaw, crash before its batch: still frozen with its file, and the entry applied again thaws', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest });
    failNextBatch(m.temp.db, new Error('crash before the batch'));
    const thaw = { family: 'hibernate', op: 'thaw', unit: '/users/alice' };
    await expect(m.run(thaw)).rejects.toThrow(/crash/);
    vi.restoreAllMocks();
    await m.restart();
    expect(m.sm.stateOf(hibernate).frozen.has('/users/alice')).toBe(true);
    expect(coldFiles(m)).toHaveLength(1);
    expect(await m.again(thaw)).toMatchObject({ ok: true, value: { thawed: true, items: 3 } });
    expect(await m.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
  });

  it('a missing or damaged cold file stops the thaw, naming the unit, and changes nothing', async () => {
    const m = await member();
    const newest = await aliceUnit(m);
    await m.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest });
    const file = (await ColdStore.open(coldDirOf(m.temp.db))).fileOf('/users/alice');
    const good = readFileSync(file);
    const bad = Buffer.from(good);
    bad[bad.length - 1]! ^= 0xff;
    writeFileSync(file, bad);
    await expect(m.run({ family: 'hibernate', op: 'thaw', unit: '/users/alice' })).rejects.toThrow(/unit \/users\/alice: corrupt/);
    rmSync(file);
    await expect(m.again({ family: 'hibernate', op: 'thaw', unit: '/users/alice' })).rejects.toThrow(/unit \/users\/alice: missing/);
    expect(m.sm.stateOf(hibernate).frozen.has('/users/alice')).toBe(true);
    // Put back, the same entry thaws.
    writeFileSync(file, good);
    expect(await m.again({ family: 'hibernate', op: 'thaw', unit: '/users/alice' })).toMatchObject({ ok: true, value: { thawed: true } });
  });
});

describe('cold files travel with the state', () => {
  async function transfer(from: Member, to: Member): Promise<void> {
    const captured = await captureState(from.temp.db, APPLIED_INDEX, stateExtras(from.temp.db, FAMILIES));
    try {
      await replaceState(to.temp.db, readRecords(captured.chunks()));
    } finally {
      await captured.release();
    }
    await to.restart();
    to.index = from.index; // the next entry follows the snapshot's
  }

  it('a snapshot carries each Frozen unit\'s cold file; the member that installs it can thaw the unit', async () => {
    const a = await member();
    const newest = await aliceUnit(a);
    await a.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest });
    const b = await member();
    await b.push('/users/zed', 'overwritten by the install');
    await transfer(a, b);
    expect(b.sm.stateOf(hibernate).frozen.get('/users/alice')).toEqual(a.sm.stateOf(hibernate).frozen.get('/users/alice'));
    expect(coldFiles(b)).toHaveLength(1);
    // The transit records were turned into the file and deleted.
    expect((await dumpDb(b.temp.db)).filter(([k]) => k.startsWith('0018'))).toEqual([]);
    expect(await b.items('/users/zed')).toEqual([]);
    expect(await b.hibernate({ op: 'thaw', unit: '/users/alice' })).toMatchObject({ thawed: true, items: 3 });
    expect(await b.items('/users/alice/bookmarks')).toEqual(['b1', 'b2']);
  });

  it('a capture whose cold file is missing or from another freeze fails, naming the unit', async () => {
    const a = await member();
    const newest = await aliceUnit(a);
    await a.hibernate({ op: 'freeze', unit: '/users/alice', seen: newest });
    const file = (await ColdStore.open(coldDirOf(a.temp.db))).fileOf('/users/alice');
    rmSync(file);
    const captured = await captureState(a.temp.db, APPLIED_INDEX, stateExtras(a.temp.db, FAMILIES));
    try {
      await expect(async () => {
        for await (const _ of captured.chunks());
      }).rejects.toThrow(/unit \/users\/alice: missing/);
    } finally {
      await captured.release();
    }
  });
});

describe('a large unit freezes in bounded steps (issue 34, defect 5)', () => {
  const STEP = 100;
  const itemPrefix = bucketPrefix(ListsBucket.item);
  /** The item entries (hot data) each batch written deleted or put: what would hold the log behind it. */
  const itemOps = (writes: BatchOp[][]): number[] => writes.map((ops) => ops.filter((op) => op.key.subarray(0, itemPrefix.length).equals(itemPrefix)).length);

  /** /users/big: 700 items in its own list and 350 below it; /users/small: 3 items; a neighbour /users/big2. */
  async function bigUnit(m: Member): Promise<{ big: number; small: number }> {
    let big = 0;
    for (let n = 0; n < 700; n++) big = await m.push('/users/big', { n });
    for (let n = 0; n < 350; n++) big = await m.push('/users/big/x', { n });
    await m.push('/users/big2', 'neighbour');
    let small = 0;
    for (const d of ['s1', 's2', 's3']) small = await m.push('/users/small', d);
    return { big, small };
  }

  /** Freezes /users/big (seen at `seen`) and commits the freeze with STEP: what is left of it drains in dropHot steps; the freeze's index. */
  async function freezeBig(m: Member, seen: number): Promise<number> {
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/big', seen }] });
    const frozenAt = m.index;
    await Promise.all([...m.sm.stateOf(hibernate).writing.values()].map((w) => w.done));
    await m.hibernate({ op: 'commitFreeze', units: ['/users/big'], step: STEP });
    return frozenAt;
  }

  it('a commit deletes at most its step of hot entries, dropHot steps the rest, and a restart mid-way agrees with a member that never stopped', async () => {
    const m = await member();
    const seen = await bigUnit(m);
    const bigItems = [...(await m.items('/users/big')), ...(await m.items('/users/big/x'))];
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/big', seen: seen.big }, { unit: '/users/small', seen: seen.small }] });
    const frozenAt = m.index;
    await Promise.all([...m.sm.stateOf(hibernate).writing.values()].map((w) => w.done));
    const writes = recordBatches(m.temp.db);
    // The small unit fits the step and goes in the commit's batch; the big one drains.
    expect(await m.hibernate({ op: 'commitFreeze', units: ['/users/big', '/users/small'], step: STEP })).toMatchObject({ units: [{ unit: '/users/big', frozen: true, items: 1050 }, { unit: '/users/small', frozen: true, items: 3 }] });
    expect([...m.sm.stateOf(hibernate).draining]).toEqual(['/users/big']);
    expect(await m.items('/users/small')).toEqual([]);
    // The lists index holds what a restarted member rebuilds: neither unit's lists.
    const index = (): string[] => m.sm.stateOf(lists).dump().map(([path]) => path);
    expect(index()).toEqual(['/users/big2']);
    let steps = 0;
    for (let done = false; !done; steps++) {
      if (steps === 3) {
        // A restart mid-way: the hot entries left are not hot lists to the member that loads them.
        vi.restoreAllMocks();
        await m.restart();
        expect([...m.sm.stateOf(hibernate).draining]).toEqual(['/users/big']);
        expect(index()).toEqual(['/users/big2']);
        writes.push(...recordBatches(m.temp.db));
      }
      const v = await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP });
      if (v.op !== 'dropHot') throw new Error('not a dropHot');
      done = v.done;
    }
    expect(steps).toBe(11); // 1,050 entries, 100 a step
    // No batch wrote more than a step of hot entries.
    expect(Math.max(...itemOps(writes))).toBe(STEP);
    expect(itemOps(writes).every((n) => n <= STEP)).toBe(true);
    expect(m.sm.stateOf(hibernate).draining.size).toBe(0);
    expect(await m.items('/users/big')).toEqual([]);
    expect(await m.items('/users/big/x')).toEqual([]);
    expect(await m.items('/users/big2')).toEqual(['neighbour']);
    // A step for a freeze already drained (or thawed) is a no-op.
    expect(await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP })).toEqual({ op: 'dropHot', unit: '/users/big', dropped: 0, done: true });
    await m.restart();
    expect(m.sm.stateOf(hibernate).draining.size).toBe(0);
    expect(await m.hibernate({ op: 'thaw', unit: '/users/big' })).toMatchObject({ thawed: true, items: 1050 });
    expect([...(await m.items('/users/big')), ...(await m.items('/users/big/x'))]).toEqual(bigItems);
  });

  it('a thaw in the middle of a drain puts every entry back, and a late step of that freeze deletes nothing', async () => {
    const m = await member();
    const seen = await bigUnit(m);
    const bigItems = [...(await m.items('/users/big')), ...(await m.items('/users/big/x'))];
    const frozenAt = await freezeBig(m, seen.big);
    expect(await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP })).toEqual({ op: 'dropHot', unit: '/users/big', dropped: STEP, done: false });
    expect(await m.hibernate({ op: 'thaw', unit: '/users/big' })).toMatchObject({ thawed: true, items: 1050 });
    expect(m.sm.stateOf(hibernate).draining.size).toBe(0);
    expect(await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP })).toEqual({ op: 'dropHot', unit: '/users/big', dropped: 0, done: true });
    expect([...(await m.items('/users/big')), ...(await m.items('/users/big/x'))]).toEqual(bigItems);
    expect(m.sm.stateOf(lists).lastIndexOf('/users/big/x')).toBe(seen.big);
    await m.restart();
    expect(m.sm.stateOf(hibernate).draining.size).toBe(0);
    expect([...(await m.items('/users/big')), ...(await m.items('/users/big/x'))]).toEqual(bigItems);
  });

  it('each step seeks past the keys earlier steps deleted, rather than over their tombstones', async () => {
    const m = await member();
    const seen = await bigUnit(m);
    const frozenAt = await freezeBig(m, seen.big);
    const keys = vi.spyOn(m.temp.db, 'keys');
    const starts: string[] = [];
    for (let done = false; !done; ) {
      keys.mockClear();
      const v = await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP });
      if (v.op !== 'dropHot') throw new Error('not a dropHot');
      done = v.done;
      const first = keys.mock.calls[0]![0] as { gt?: Buffer; gte?: Buffer };
      starts.push(first.gt === undefined ? 'from the start' : decodeItemKey(first.gt).path + '#' + String(decodeItemKey(first.gt).index));
    }
    // The first step reads from the unit's first key; each later one from just past the last key the step before deleted.
    expect(starts[0]).toBe('from the start');
    expect(starts.slice(1).every((s) => s !== 'from the start')).toBe(true);
    expect(new Set(starts).size).toBe(starts.length);
  });

  it('a large unit thaws in steps of at most its step of entries, Frozen until the last, and a restart mid-way agrees', async () => {
    const m = await member();
    const seen = await bigUnit(m);
    const bigItems = async (): Promise<unknown[]> => [...(await m.items('/users/big')), ...(await m.items('/users/big/x'))];
    const hot = await bigItems();
    const indexBefore = m.sm.stateOf(lists).dump();
    await m.hibernate({ op: 'freezeUnits', units: [{ unit: '/users/big', seen: seen.big }] });
    const frozenAt = m.index;
    await Promise.all([...m.sm.stateOf(hibernate).writing.values()].map((w) => w.done));
    // Frozen and still draining (one dropHot step done) when the thaw begins.
    await m.hibernate({ op: 'commitFreeze', units: ['/users/big'], step: STEP });
    await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP });
    const writes = recordBatches(m.temp.db);
    const step = (from: number): Promise<HibernateValue> => m.hibernate({ op: 'thawStep', unit: '/users/big', frozenAt, from, step: STEP });
    expect(await step(0)).toEqual({ op: 'thawStep', unit: '/users/big', next: STEP, done: false, thawed: false, items: 0 });
    expect(m.sm.stateOf(hibernate).draining.size).toBe(0);
    // A late step of the drain, and a step that does not start where the thaw is, change nothing.
    expect(await m.hibernate({ op: 'dropHot', unit: '/users/big', frozenAt, step: STEP })).toMatchObject({ dropped: 0, done: true });
    expect(await step(5 * STEP)).toEqual({ op: 'thawStep', unit: '/users/big', next: STEP, done: false, thawed: false, items: 0 });
    let from = STEP;
    for (let n = 0; n < 3; n++) from = ((await step(from)) as { next: number }).next;
    // Still Frozen: changes are refused, and the lists are not in the index.
    expect(m.sm.stateOf(hibernate).frozen.has('/users/big')).toBe(true);
    expect(await m.run({ op: 'push', session: 's1', path: '/users/big', data: 'x', persistent: true, watch: false })).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect(m.sm.stateOf(lists).dump().map(([p]) => p)).toEqual(['/users/big2', '/users/small']);
    vi.restoreAllMocks();
    await m.restart();
    writes.push(...recordBatches(m.temp.db));
    expect(m.sm.stateOf(hibernate).thawing.get('/users/big')).toBe(from);
    expect(m.sm.stateOf(lists).dump().map(([p]) => p)).toEqual(['/users/big2', '/users/small']);
    let last: HibernateValue;
    let steps = 0;
    do {
      last = await step(from);
      from = (last as { next: number }).next;
      steps++;
    } while (!(last as { done: boolean }).done);
    expect(last).toEqual({ op: 'thawStep', unit: '/users/big', next: 1050, done: true, thawed: true, items: 1050 });
    expect(steps).toBe(7); // 1,050 entries, 100 a step, 400 of them before the restart
    expect(Math.max(...itemOps(writes))).toBeLessThanOrEqual(STEP);
    expect(await bigItems()).toEqual(hot);
    expect(m.sm.stateOf(lists).dump()).toEqual(indexBefore);
    expect(m.sm.stateOf(hibernate).thawing.size).toBe(0);
    // A step of a thaw already done does nothing.
    expect(await step(0)).toMatchObject({ done: true, thawed: false });
    await m.restart();
    expect(m.sm.stateOf(lists).dump()).toEqual(indexBefore);
  });

  it('keeps at most MAX_HELD_THAW_READS thaw reads decoded, dropping the oldest; a dropped one is read again when asked', async () => {
    const m = await member();
    const state = m.sm.stateOf(hibernate);
    const reads = vi.spyOn(state.cold, 'readInSlices').mockImplementation(async () => ({ meta: { frozenAt: 7 } }) as unknown as HeldColdUnit);
    const units = Array.from({ length: MAX_HELD_THAW_READS + 4 }, (_, i) => `/users/u${i}`);
    for (const u of units) await state.thawRead(u, 7);
    expect(reads).toHaveBeenCalledTimes(units.length);
    // The newest are still held: no read.
    await state.thawRead(units.at(-1)!, 7);
    expect(reads).toHaveBeenCalledTimes(units.length);
    // The oldest was dropped: read again.
    await state.thawRead(units[0]!, 7);
    expect(reads).toHaveBeenCalledTimes(units.length + 1);
    reads.mockRestore();
  });

  it('a dropHot step and a thawStep short of the last share the batch of the client entries around them; the last step goes alone (issue 34)', async () => {
    const m = await member();
    const seen = await bigUnit(m);
    const hot = [...(await m.items('/users/big')), ...(await m.items('/users/big/x'))];
    const frozenAt = await freezeBig(m, seen.big);
    /** Applies the commands as one run of committed entries (as a Ready hands them over); the batches it wrote. */
    const run = async (commands: Array<Record<string, unknown>>): Promise<{ batches: number; results: ApplyResult[] }> => {
      const writes = recordBatches(m.temp.db);
      const outcomes = await m.sm.applyMany(commands.map((c) => ({ index: ++m.index, term: 1, kind: 'command' as const, data: encodeCommand(c as unknown as Command, m.now) })));
      vi.restoreAllMocks();
      return { batches: writes.length, results: outcomes.map((o) => o.result) };
    };
    const push = (data: string): Record<string, unknown> => ({ op: 'push', session: 's1', path: '/users/other', data, persistent: true, watch: false });
    const drop = { family: 'hibernate', op: 'dropHot', unit: '/users/big', frozenAt, step: STEP };
    // Going alone, each step would split the run into three batches, each written in turn.
    const drops = await run([push('p1'), drop, push('p2'), drop, push('p3')]);
    expect(drops.batches).toBe(1);
    expect(drops.results.map((r) => (r.ok && r.op === 'family' ? (r.value as { dropped: number }).dropped : r.ok))).toEqual([true, STEP, true, STEP, true]);
    // The second step read past the first one's deletes, pending in the same batch.
    let left = 0;
    for (const range of unitItemRanges('/users/big')) left += (await m.temp.db.keys(range).all()).length;
    expect(left).toBe(1050 - 2 * STEP);
    for (let done = false; !done; ) done = ((await m.hibernate(drop)) as { done: boolean }).done;

    await m.hibernate({ op: 'thawBegin', unit: '/users/big', frozenAt });
    await m.sm.stateOf(hibernate).thawRead('/users/big', frozenAt);
    const step = (from: number, n = STEP): Record<string, unknown> => ({ family: 'hibernate', op: 'thawStep', unit: '/users/big', frozenAt, from, step: n });
    const middle = await run([push('p4'), step(0), push('p5'), step(STEP), push('p6')]);
    expect(middle.batches).toBe(1);
    expect(m.sm.stateOf(hibernate).thawing.get('/users/big')).toBe(2 * STEP);
    // A push into the unit still waits for its thaw: refused, changing nothing.
    expect((await m.run({ op: 'push', session: 's1', path: '/users/big', data: 'early', persistent: true, watch: false })).ok).toBe(false);
    // A member that does not hold the file's read (restarted, or evicted it) would read the whole file
    // inside the batch, holding the entries planned before the step: such a step goes alone.
    await m.restart();
    const unread = await run([push('p6b'), step(2 * STEP, 1050 - 3 * STEP), push('p6c')]);
    expect(unread.batches).toBe(3);
    // The last step makes the unit Hot: what comes before it is written first, and it is written before what follows is planned.
    const last = await run([push('p7'), step(1050 - STEP), push('p8')]);
    expect(last.batches).toBe(3);
    expect(m.sm.stateOf(hibernate).frozen.has('/users/big')).toBe(false);
    expect([...(await m.items('/users/big')), ...(await m.items('/users/big/x'))]).toEqual(hot);
    expect(await m.items('/users/other')).toEqual(['p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p6b', 'p6c', 'p7', 'p8']);
    // A restarted member loads what was written.
    const digest = await m.sm.digest();
    await m.restart();
    expect(await m.sm.digest()).toBe(digest);
  });

  it('a freeze drained and a thaw stepped write the same db whether their entries come one at a time or in runs with client entries', async () => {
    /** Freezes /users/big, drains it, thaws it in steps, with pushes between; `grouped`: each run as one applyMany. */
    const scenario = async (grouped: boolean): Promise<{ digests: string[]; other: unknown[] }> => {
      const m = await member();
      const seen = await bigUnit(m);
      const frozenAt = await freezeBig(m, seen.big);
      const apply = async (commands: Array<Record<string, unknown>>): Promise<void> => {
        const entries = commands.map((c) => ({ index: ++m.index, term: 1, kind: 'command' as const, data: encodeCommand(c as unknown as Command, m.now) }));
        if (grouped) await m.sm.applyMany(entries);
        else for (const e of entries) await m.sm.applyMany([e]);
      };
      const push = (data: string): Record<string, unknown> => ({ op: 'push', session: 's1', path: '/users/other', data, persistent: true, watch: false });
      const drop = { family: 'hibernate', op: 'dropHot', unit: '/users/big', frozenAt, step: STEP };
      const digests: string[] = [];
      // 1050 items less the commit's step: nine steps drain them, two to a run.
      for (let run = 0; run < 5; run++) await apply([push(`d${run}`), drop, push(`e${run}`), drop]);
      digests.push(await m.sm.digest());
      await m.hibernate({ op: 'thawBegin', unit: '/users/big', frozenAt });
      await m.sm.stateOf(hibernate).thawRead('/users/big', frozenAt);
      const step = (from: number): Record<string, unknown> => ({ family: 'hibernate', op: 'thawStep', unit: '/users/big', frozenAt, from, step: Math.min(STEP, 1050 - from) });
      for (let from = 0; from < 1050; from += 2 * STEP) await apply([push(`t${from}`), step(from), ...(from + STEP < 1050 ? [push(`u${from}`), step(from + STEP)] : [])]);
      digests.push(await m.sm.digest());
      return { digests, other: await m.items('/users/other') };
    };
    const oneByOne = await scenario(false);
    const inRuns = await scenario(true);
    expect(inRuns.digests).toEqual(oneByOne.digests);
    expect(inRuns.other).toEqual(oneByOne.other);
    expect(oneByOne.other).toHaveLength(5 * 2 + 6 + 5);
  });

  it('thawBegin has every member read the file beside the log, so no thawStep reads it in apply; a stale thawBegin changes nothing', async () => {
    const m = await member();
    const seen = await bigUnit(m);
    const hot = [...(await m.items('/users/big')), ...(await m.items('/users/big/x'))];
    const frozenAt = await freezeBig(m, seen.big);
    const state = m.sm.stateOf(hibernate);
    const reads = vi.spyOn(state.cold, 'readInSlices');
    const before = await m.sm.digest();
    // Another freeze's thawBegin, or one of a unit not Frozen, starts nothing.
    expect(await m.hibernate({ op: 'thawBegin', unit: '/users/big', frozenAt: frozenAt + 1 })).toEqual({ op: 'thawBegin', unit: '/users/big', reading: false });
    expect(await m.hibernate({ op: 'thawBegin', unit: '/users/small', frozenAt })).toEqual({ op: 'thawBegin', unit: '/users/small', reading: false });
    expect(reads).not.toHaveBeenCalled();
    expect(await m.hibernate({ op: 'thawBegin', unit: '/users/big', frozenAt })).toEqual({ op: 'thawBegin', unit: '/users/big', reading: true });
    // The read began once the entry was applied; the entries changed no family's data.
    expect(reads).toHaveBeenCalledTimes(1);
    expect(await m.sm.digest()).toBe(before);
    await state.thawRead('/users/big', frozenAt);
    // The steps take the entries read beside the log: none reads the file again.
    let from = 0;
    for (let done = false; !done; ) {
      const v = await m.hibernate({ op: 'thawStep', unit: '/users/big', frozenAt, from, step: STEP });
      if (v.op !== 'thawStep') throw new Error('not a thawStep');
      ({ next: from, done } = v);
    }
    expect(reads).toHaveBeenCalledTimes(1);
    expect([...(await m.items('/users/big')), ...(await m.items('/users/big/x'))]).toEqual(hot);
    expect(await m.hibernate({ op: 'thawBegin', unit: '/users/big', frozenAt })).toMatchObject({ reading: false });
  });

  it('the leader finds a unit\'s newest index with a seek per list, not by reading every item, and finds what reading every item finds', async () => {
    const m = await member();
    await bigUnit(m);
    await m.push('/users/big/x/y', 'deep');
    const newestDeep = await m.push('/users/big/x', 'newest of x');
    await m.push('/users/big2', 'a neighbour pushed later'); // a larger index outside the unit
    await m.push('/users/bigger/z', 'another');
    const keys = vi.spyOn(m.temp.db, 'keys');
    const newest = await m.sm.read('test', (db, snapshot) => newestIndexIn(db, '/users/big', snapshot));
    const seeks = keys.mock.calls.length;
    keys.mockRestore();
    const read = await readUnit(m.temp.db, '/users/big');
    if ('why' in read) throw new Error(read.why);
    expect(newest).toBe(read.newest);
    expect(newest).toBe(newestDeep);
    // Three lists: one seek each, and one more per range to find nothing left (the unit's own list, the lists below it).
    expect(seeks).toBe(3 + 2);
    expect(await m.sm.read('test', (db, snapshot) => newestIndexIn(db, '/users/nobody', snapshot))).toBe(0);
  });

  it('reads each list of a unit with its newest index and item count, decoding a key only where a list ends', async () => {
    const m = await member();
    const expected = new Map<string, { newest: number; items: number }>();
    // Interleaved pushes, lists whose paths share a start, and indexes past one byte and two.
    for (let n = 0; n < 700; n++) {
      const path = ['/users/big', '/users/big/a', '/users/big/ab', '/users/big/a/b'][n % 4]!;
      const index = await m.push(path, n);
      expected.set(path, { newest: index, items: (expected.get(path)?.items ?? 0) + 1 });
    }
    await m.push('/users/big2', 'a neighbour');
    const read = await readUnit(m.temp.db, '/users/big');
    if ('why' in read) throw new Error(read.why);
    expect(read.lists.map((l) => l.path).sort()).toEqual([...expected.keys()].sort());
    for (const l of read.lists) expect({ newest: l.newest, items: l.items }, l.path).toEqual(expected.get(l.path));
    expect(read.newest).toBe(Math.max(...[...expected.values()].map((e) => e.newest)));
    expect(read.entries.length).toBe(700);
    expect(sameList(itemKey('/users/big/a', 1), itemKey('/users/big/a', 2 ** 40))).toBe(true);
    expect(sameList(itemKey('/users/big/a', 1), itemKey('/users/big/b', 1))).toBe(false);
    expect(sameList(itemKey('/users/big/a', 1), itemKey('/users/big/ab', 1))).toBe(false);
  });

  it('beside the log, reads a unit with a pause after each PACK_SLICE entries, at most that many per READ_PAGE_PAUSE_MS', async () => {
    const m = await member();
    for (let n = 0; n < 2 * PACK_SLICE + 500; n++) await m.push('/users/big', n);
    const breather = new Breather(READ_PAGE_PAUSE_MS);
    const pause = vi.spyOn(breather, 'pause');
    const started = performance.now();
    const read = await readUnit(m.temp.db, '/users/big', undefined, breather);
    if ('why' in read) throw new Error(read.why);
    expect(read.entries.length).toBe(2 * PACK_SLICE + 500);
    // After the first 1,000 entries and the next (LevelDB gives pages of its own size): none after the last 500.
    expect(pause).toHaveBeenCalledTimes(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * READ_PAGE_PAUSE_MS - 2);
  });

  it('reads a unit for its freeze a slice at a time, and tells an item with no owner by its first bytes, as decoding it would', async () => {
    const m = await member();
    await bigUnit(m);
    const read = await readUnit(m.temp.db, '/users/big');
    if ('why' in read) throw new Error(read.why);
    expect(read.entries).toBeInstanceOf(SlicedEntries);
    for (const item of [{ owner: null, data: 1 }, { owner: null, data: { deep: ['x'] } }, { owner: 's1', data: null }, { owner: '', data: 2 }]) {
      for (const user of [undefined, 'alice']) {
        const value = encodeItemValue(item, user);
        expect(ownerIsNil(value), JSON.stringify([item, user])).toBe(decodeItemValue(value).owner === null);
      }
    }
    // Bytes it does not recognise are left to the decoder: never taken for no owner.
    for (const bytes of [[], [0x82], [0x81, 0xa5, ...Buffer.from('owner'), 0xc0], [0x82, 0xa4, ...Buffer.from('data'), 0xc0]]) expect(ownerIsNil(Buffer.from(bytes))).toBe(false);
  });

  it('refuses a step out of range', () => {
    for (const step of [0, -1, 1.5, 100_001, '10']) {
      expect(() => encodeCommand({ family: 'hibernate', op: 'dropHot', unit: '/users/big', frozenAt: 1, step } as never)).toThrow(/step must be an integer/);
      expect(() => encodeCommand({ family: 'hibernate', op: 'commitFreeze', units: ['/users/big'], step } as never)).toThrow(/step must be an integer/);
    }
  });
});
