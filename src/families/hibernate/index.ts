// The hibernation family (issue 15, seed 004; design in docs/hibernation.md):
// a unit (a list and every list below it) moves to the cold store and back in
// entries, so the log orders both against every write. Thaw reads and verifies
// the unit's file before the batch that puts its entries back. Freezing takes
// two entries so that the slow part, writing and syncing the cold file, runs
// beside the log rather than in it:
// - `freezeUnits` marks each idle unit Freezing (a record with a digest of its
//   entries) and every member starts writing its cold file in the background;
// - `commitFreeze`, proposed once the leader's files are durable, reads each
//   Freezing unit again: unchanged, it waits for its file (writing it there and
//   then if this member restarted since) and deletes the hot copy in one batch
//   with the Frozen record; changed (a write got in), the freeze is cancelled.
// `freeze` (command version 4) does both in one entry, for one unit.
// A crash anywhere leaves the hot copy or a verified cold copy: nothing hot is
// deleted before the file is durable, and an entry whose batch was not written
// is applied again at restart. Freeze and thaw change no item as a client
// sees it, so they emit no events.
import { decodeItemKey } from '../../keys/index.js';
import { decodeItemValue } from '../../statemachine/codec.js';
import type { ApplyError } from '../../statemachine/types.js';
import { CommandError, failure, type BatchOp, type Family, type Plan, type PlanContext, type States } from '../family.js';
import { indexField, pathField } from '../fields.js';
import { lists } from '../lists/index.js';
import { ColdStoreError } from './cold-store.js';
import { crashPoint } from './crash-points.js';
import { freezingKey, HibernateBucket, inUnit, unitItemRanges, unitKey } from './keys.js';
import { encodeFreezing, encodeFrozen, entriesDigest, type FreezingUnit, type FrozenList, type FrozenUnit } from './records.js';
import { coldFilesAt, HibernateState } from './state.js';

export const HIBERNATE_SINCE = 4;
/** `freezeUnits` and `commitFreeze`: freezing in two entries, several units at a time. */
export const FREEZE_UNITS_SINCE = 5;
/** The most items one unit may hold and still be frozen: a larger unit stays hot. */
export const MAX_UNIT_ITEMS = 100_000;
/** The most units one `freezeUnits` or `commitFreeze` entry names. */
export const MAX_UNITS_PER_FREEZE = 64;
/** The most items one entry reads in all (what one apply holds in memory); the units past it wait for another entry. */
export const MAX_ITEMS_PER_FREEZE = MAX_UNIT_ITEMS;

/** A unit to freeze, with `seen`: the newest index among its lists when the leader chose to freeze it. */
export interface FreezeTarget {
  readonly unit: string;
  readonly seen: number;
}

export type HibernateCommand =
  | ({ readonly op: 'freeze' } & FreezeTarget)
  /** Distinct units, none inside another, at most MAX_UNITS_PER_FREEZE. */
  | { readonly op: 'freezeUnits'; readonly units: readonly FreezeTarget[] }
  /** Freezing units (as freezeUnits names them). */
  | { readonly op: 'commitFreeze'; readonly units: readonly string[] }
  | { readonly op: 'thaw'; readonly unit: string };

/**
 * Why a unit was not frozen. `entry-full`: the entry had read MAX_ITEMS_PER_FREEZE items
 * before it (ask again); `freezing`: a freeze of it is under way; `not-freezing`: a commit
 * for a unit no freeze began (or one already committed or cancelled).
 */
export type FreezeCancel = 'frozen' | 'inside-frozen' | 'holds-frozen' | 'empty' | 'changed' | 'ephemeral' | 'too-large' | 'entry-full' | 'freezing' | 'not-freezing';

export type FreezeValue =
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: true; readonly items: number; readonly bytes: number }
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: false; readonly why: FreezeCancel };

export type FreezeStart =
  | { readonly unit: string; readonly freezing: true; readonly items: number }
  | { readonly unit: string; readonly freezing: false; readonly why: FreezeCancel };

export type HibernateValue =
  | FreezeValue
  | { readonly op: 'freezeUnits'; readonly units: readonly FreezeStart[] }
  | { readonly op: 'commitFreeze'; readonly units: readonly FreezeValue[] }
  | { readonly op: 'thaw'; readonly unit: string; readonly thawed: boolean; readonly items: number };

function answer(value: HibernateValue, ops: BatchOp[] = [], after: Array<() => void> = []): Plan {
  return { result: { ok: true, op: 'family', family: 'hibernate', value }, ops, events: [], after };
}

type Entries = Array<readonly [Buffer, Buffer]>;

/** A unit read for freezing: its entries and lists, or why it is not frozen. */
type Gathered = { readonly entries: Entries; readonly lists: FrozenList[]; readonly newest: number } | { readonly why: FreezeCancel };

/** Reads a unit's entries, if it may be frozen at all; `room`: how many more items this entry may read. */
async function gather(unit: string, ctx: PlanContext, room: number): Promise<Gathered> {
  const state = ctx.states.of(hibernate);
  if (state.frozen.has(unit)) return { why: 'frozen' };
  if (state.unitOf(unit) !== null) return { why: 'inside-frozen' };
  if (state.frozenBelow(unit) !== null) return { why: 'holds-frozen' };
  const entries: Entries = [];
  const byPath = new Map<string, { newest: number; items: number }>();
  let newest = 0;
  for (const range of unitItemRanges(unit)) {
    for await (const [key, value] of ctx.db.iterator(range)) {
      // An ephemeral item belongs to a live session: the unit is in use.
      if (decodeItemValue(value).owner !== null) return { why: 'ephemeral' };
      if (entries.length >= MAX_UNIT_ITEMS) return { why: 'too-large' };
      if (entries.length >= room) return { why: 'entry-full' };
      const { path, index } = decodeItemKey(key);
      entries.push([key, value]);
      const list = byPath.get(path) ?? { newest: 0, items: 0 };
      list.newest = Math.max(list.newest, index);
      list.items++;
      byPath.set(path, list);
      newest = Math.max(newest, index);
    }
  }
  if (entries.length === 0) return { why: 'empty' };
  return { entries, newest, lists: [...byPath].map(([path, l]) => ({ path, newest: l.newest, items: l.items })) };
}

/** What the batch that freezes a unit holds: its hot entries deleted, its Frozen record put, its Freezing one (if any) deleted. */
function frozenOps(unit: string, entries: Entries, record: FrozenUnit): BatchOp[] {
  const ops: BatchOp[] = entries.map(([key]) => ({ type: 'del', key }));
  ops.push({ type: 'del', key: freezingKey(unit) });
  ops.push({ type: 'put', key: unitKey(unit), value: encodeFrozen(record) });
  return ops;
}

/** The in-memory side of a committed freeze, run once its batch is durable. */
function frozenAfter(ctx: PlanContext, unit: string, record: FrozenUnit): () => void {
  const state = ctx.states.of(hibernate);
  const listsState = ctx.states.of(lists);
  return () => {
    state.frozen.set(unit, record);
    state.freezing.delete(unit);
    state.writing.delete(unit);
    // The lists index holds what the db holds: a restarted member rebuilds it without the frozen lists.
    for (const l of record.lists) {
      listsState.setLastIndex(l.path, 0);
      listsState.usage.removedFromList(l.path, l.items);
    }
    state.compactor.frozen(unitItemRanges(unit));
  };
}

/** `freeze` (version 4): one unit, read, written and committed in one entry. */
async function freeze(c: Extract<HibernateCommand, { op: 'freeze' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  const cancelled = (why: FreezeCancel): Plan => answer({ op: 'freeze', unit: c.unit, frozen: false, why });
  if (state.freezing.has(c.unit)) return cancelled('freezing');
  const g = await gather(c.unit, ctx, MAX_UNIT_ITEMS);
  if ('why' in g) return cancelled(g.why);
  // A write (or delete of the newest item) after the leader looked: the unit is not idle.
  if (g.newest !== c.seen) return cancelled('changed');
  // Durable before the batch that deletes the hot copy: a crash from here on leaves both, then the cold one.
  crashPoint('freeze-before-cold');
  const bytes = await state.cold.write({ unit: c.unit, meta: { frozenAt: ctx.index }, entries: g.entries });
  crashPoint('freeze-cold-durable');
  const record: FrozenUnit = { frozenAt: ctx.index, lists: g.lists, bytes };
  return answer({ op: 'freeze', unit: c.unit, frozen: true, items: g.entries.length, bytes }, frozenOps(c.unit, g.entries, record), [frozenAfter(ctx, c.unit, record)]);
}

/** `freezeUnits`: each idle unit becomes Freezing, and its cold file starts being written beside the log. */
async function startFreezes(c: Extract<HibernateCommand, { op: 'freezeUnits' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  const values: FreezeStart[] = [];
  const ops: BatchOp[] = [];
  const started: Array<{ unit: string; record: FreezingUnit; entries: Entries }> = [];
  let read = 0;
  for (const t of c.units) {
    const g = state.freezing.has(t.unit) ? ({ why: 'freezing' } as const) : await gather(t.unit, ctx, MAX_ITEMS_PER_FREEZE - read);
    if ('why' in g) {
      values.push({ unit: t.unit, freezing: false, why: g.why });
      continue;
    }
    // A write (or delete of the newest item) after the leader looked: the unit is not idle.
    if (g.newest !== t.seen) {
      values.push({ unit: t.unit, freezing: false, why: 'changed' });
      continue;
    }
    read += g.entries.length;
    const record: FreezingUnit = { since: ctx.index, digest: entriesDigest(g.entries), items: g.entries.length };
    ops.push({ type: 'put', key: freezingKey(t.unit), value: encodeFreezing(record) });
    started.push({ unit: t.unit, record, entries: g.entries });
    values.push({ unit: t.unit, freezing: true, items: g.entries.length });
  }
  const after = started.map(({ unit, record, entries }) => () => {
    state.freezing.set(unit, record);
    state.writeInBackground({ unit, meta: { frozenAt: record.since }, entries }, record.since);
  });
  return answer({ op: 'freezeUnits', units: values }, ops, after);
}

/**
 * `commitFreeze`: each Freezing unit whose entries are still those its freeze began with
 * is frozen, its file durable before the one batch that deletes the hot copies; a changed
 * or no longer freezable one goes back to Hot.
 */
async function commitFreezes(c: Extract<HibernateCommand, { op: 'commitFreeze' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  const values: FreezeValue[] = [];
  const ops: BatchOp[] = [];
  const after: Array<() => void> = [];
  const commits: Array<{ unit: string; record: FreezingUnit; g: Extract<Gathered, { entries: Entries }> }> = [];
  let read = 0;
  for (const unit of c.units) {
    const record = state.freezing.get(unit);
    if (record === undefined) {
      values.push({ op: 'freeze', unit, frozen: false, why: 'not-freezing' });
      continue;
    }
    const g = await gather(unit, ctx, MAX_ITEMS_PER_FREEZE - read);
    // Any change since the freeze began (a write, a delete, a session's item): not idle, or not the file's content.
    if ('why' in g || !entriesDigest(g.entries).equals(record.digest)) {
      // Back to Hot: the leader may begin a new freeze of it later.
      values.push({ op: 'freeze', unit, frozen: false, why: 'why' in g ? g.why : 'changed' });
      ops.push({ type: 'del', key: freezingKey(unit) });
      after.push(() => {
        state.freezing.delete(unit);
        state.writing.delete(unit);
      });
      continue;
    }
    read += g.entries.length;
    commits.push({ unit, record, g });
  }
  // Durable before the batch that deletes the hot copies: a crash from here on leaves both, then the cold ones.
  crashPoint('freeze-before-cold');
  const bytes = await Promise.all(commits.map(({ unit, record, g }) => fileWritten(state, unit, record, g.entries)));
  crashPoint('freeze-cold-durable');
  commits.forEach(({ unit, record, g }, n) => {
    const frozen: FrozenUnit = { frozenAt: record.since, lists: g.lists, bytes: bytes[n]! };
    ops.push(...frozenOps(unit, g.entries, frozen));
    after.push(frozenAfter(ctx, unit, frozen));
    values.push({ op: 'freeze', unit, frozen: true, items: g.entries.length, bytes: frozen.bytes });
  });
  // In the order the entry named them.
  values.sort((a, b) => c.units.indexOf(a.unit) - c.units.indexOf(b.unit));
  return answer({ op: 'commitFreeze', units: values }, ops, after);
}

/** The Freezing unit's cold file, durable: the one written in the background, or (after a restart or a failed write) written now. */
async function fileWritten(state: HibernateState, unit: string, record: FreezingUnit, entries: Entries): Promise<number> {
  const background = state.writing.get(unit);
  if (background !== undefined && background.since === record.since) {
    try {
      return await background.done;
    } catch {
      // Written again below; if the disk still fails, this member stops there.
    }
  }
  return state.cold.write({ unit, meta: { frozenAt: record.since }, entries });
}

/** Checks a list of units: 1 to MAX_UNITS_PER_FREEZE distinct ones, none inside another. */
function distinctUnits(units: readonly string[]): void {
  const sorted = [...units].sort();
  for (let n = 1; n < sorted.length; n++) {
    if (inUnit(sorted[n]!, sorted[n - 1]!)) throw new CommandError(`units overlap: ${sorted[n]} is in ${sorted[n - 1]}`);
  }
}

function unitList(raw: unknown): unknown[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_UNITS_PER_FREEZE) throw new CommandError(`units must be an array of 1 to ${MAX_UNITS_PER_FREEZE} units`);
  return raw;
}

function freezeTargets(raw: unknown): FreezeTarget[] {
  const targets = unitList(raw).map((t: unknown): FreezeTarget => {
    if (typeof t !== 'object' || t === null || Array.isArray(t)) throw new CommandError('each of units must be {unit, seen}');
    const { unit, seen, ...rest } = t as Record<string, unknown>;
    if (Object.keys(rest).length > 0) throw new CommandError(`unexpected field in units: ${Object.keys(rest).join(', ')}`);
    return { unit: pathField(unit, false), seen: indexField(seen, 'seen') };
  });
  distinctUnits(targets.map((t) => t.unit));
  return targets;
}

function commitUnits(raw: unknown): string[] {
  const units = unitList(raw).map((u) => pathField(u, false));
  distinctUnits(units);
  return units;
}

async function thaw(c: Extract<HibernateCommand, { op: 'thaw' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  const record = state.frozen.get(c.unit);
  if (record === undefined) return answer({ op: 'thaw', unit: c.unit, thawed: false, items: 0 });
  // A missing or damaged file stops this member here (ColdStoreError names the unit): going on would lose the unit.
  const cold = await state.cold.read(c.unit);
  crashPoint('thaw-cold-read');
  if (cold.meta.frozenAt !== record.frozenAt) throw new ColdStoreError(c.unit, 'foreign', `the file is from the freeze at ${String(cold.meta.frozenAt)}, the unit froze at ${record.frozenAt}`);
  const ops: BatchOp[] = cold.entries.map(([key, value]) => ({ type: 'put', key, value }));
  ops.push({ type: 'del', key: unitKey(c.unit) });
  const listsState = ctx.states.of(lists);
  // The file stays until the sweep at the next start (or the unit's next freeze replaces it): removing it
  // here could race a later freeze of the same unit, and a leftover file of a Hot unit is harmless.
  return answer({ op: 'thaw', unit: c.unit, thawed: true, items: cold.entries.length }, ops, [
    () => {
      crashPoint('thaw-batch-written');
      state.frozen.delete(c.unit);
      for (const l of record.lists) listsState.setLastIndex(l.path, l.newest);
    },
  ]);
}

/**
 * A list in a hibernated unit is in the cold store: a change to it, or a watch (which
 * reads it), waits for the unit's thaw. The server thaws before it proposes; this
 * catches an entry ordered after a freeze the server did not know of, and changes
 * nothing, so asking again (after the thaw) is safe.
 */
export function frozenPathProblem(states: States, path: string): ApplyError | null {
  const unit = states.of(hibernate).unitOf(path);
  return unit === null ? null : failure('CONFLICT', `${path} is in the hibernated unit ${unit}; it is being thawed: ask again`);
}

export const hibernate: Family<HibernateCommand, HibernateState> = {
  name: 'hibernate',
  since: HIBERNATE_SINCE,
  buckets: [
    { id: HibernateBucket.unit, name: 'hibernated units' },
    { id: HibernateBucket.transit, name: 'cold files in a snapshot' },
    { id: HibernateBucket.freezing, name: 'freezing units' },
  ],
  ops: {
    freeze: {
      fields: ['unit', 'seen'],
      since: HIBERNATE_SINCE,
      decode: (c) => ({ op: 'freeze', unit: pathField(c.unit, false), seen: indexField(c.seen, 'seen') }),
    },
    freezeUnits: {
      fields: ['units'],
      since: FREEZE_UNITS_SINCE,
      decode: (c) => ({ op: 'freezeUnits', units: freezeTargets(c.units) }),
    },
    commitFreeze: {
      fields: ['units'],
      since: FREEZE_UNITS_SINCE,
      decode: (c) => ({ op: 'commitFreeze', units: commitUnits(c.units) }),
    },
    thaw: {
      fields: ['unit'],
      since: HIBERNATE_SINCE,
      decode: (c) => {
        if (c.unit === undefined) throw new CommandError('thaw needs a unit');
        return { op: 'thaw', unit: pathField(c.unit, false) };
      },
    },
  },
  load: (db, snapshot) => HibernateState.load(db, snapshot),
  filesInState: coldFilesAt,
  plan: (command, ctx) => {
    switch (command.op) {
      case 'freeze':
        return freeze(command, ctx);
      case 'freezeUnits':
        return startFreezes(command, ctx);
      case 'commitFreeze':
        return commitFreezes(command, ctx);
      case 'thaw':
        return thaw(command, ctx);
    }
  },
  // Each reads the db (the units' items, the cold file) and must see every write before it.
  goesAlone: () => true,
  server: async () => (await import('./server.js')).server,
};
