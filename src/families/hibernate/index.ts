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
// Deleting a large unit's hot copy in one batch would hold every later entry
// behind it, so a commit that carries `step` (command version 9) deletes at most
// that many hot entries; a unit with more stays `draining` (Frozen, reads served
// from its file) and `dropHot` entries delete the rest, `step` at a time.
// A crash anywhere leaves the hot copy or a verified cold copy: nothing hot is
// deleted before the file is durable, and an entry whose batch was not written
// is applied again at restart. Freeze and thaw change no item as a client
// sees it, so they emit no events.
import type { ApplyError } from '../../statemachine/types.js';
import { CommandError, failure, type BatchOp, type Family, type ListGuard, type Plan, type PlanContext, type States } from '../../statemachine/family.js';
import { indexField, integerField, pathField } from '../fields.js';
import { lists } from '../lists/public.js';
import { ColdStoreError, type HeldEntries } from './cold-store.js';
import { crashPoint, type CrashPoint } from './crash-points.js';
import { drainingKey, freezingKey, HibernateBucket, inUnit, unitItemRanges, unitKey } from './keys.js';
import { MAX_UNIT_ITEMS, prepareUnit, readUnit, type Prepared, type UnfreezableWhy } from './freezing.js';
import { encodeFreezing, encodeFrozen, type FreezingUnit, type FrozenUnit } from './records.js';
import { coldFilesAt, encodeThawNext, HibernateState } from './state.js';

export const HIBERNATE_SINCE = 4;
/** `freezeUnits` and `commitFreeze`: freezing in two entries, several units at a time. */
export const FREEZE_UNITS_SINCE = 5;
export { MAX_UNIT_ITEMS } from './freezing.js';
/** The most units one `freezeUnits` or `commitFreeze` entry names (each may hold MAX_UNIT_ITEMS, whose keys a commit holds). */
export const MAX_UNITS_PER_FREEZE = 16;
/** `commitFreeze`'s `step` and `dropHot`: deleting a frozen unit's hot entries in bounded steps. */
export const HOT_STEPS_SINCE = 9;
/** The most hot entries one step may delete (what a leader asks is its own choice, up to this). */
export const MAX_HOT_STEP = 100_000;

/** A unit to freeze, with `seen`: the newest index among its lists when the leader chose to freeze it. */
export interface FreezeTarget {
  readonly unit: string;
  readonly seen: number;
}

export type HibernateCommand =
  | ({ readonly op: 'freeze' } & FreezeTarget)
  /** Distinct units, none inside another, at most MAX_UNITS_PER_FREEZE. */
  | { readonly op: 'freezeUnits'; readonly units: readonly FreezeTarget[] }
  /** Freezing units (as freezeUnits names them); with `step`, the entry deletes at most that many hot entries in all. */
  | { readonly op: 'commitFreeze'; readonly units: readonly string[]; readonly step?: number }
  /** Deletes up to `step` more hot entries of a draining unit (Frozen at `frozenAt`). */
  | { readonly op: 'dropHot'; readonly unit: string; readonly frozenAt: number; readonly step: number }
  | { readonly op: 'thaw'; readonly unit: string }
  /** Every member starts reading and decoding the Frozen unit's file beside the log, so no step of its thaw waits for that in apply. */
  | { readonly op: 'thawBegin'; readonly unit: string; readonly frozenAt: number }
  /** Puts back up to `step` of a Frozen unit's entries, from offset `from` of its file's; the last step makes it Hot. */
  | { readonly op: 'thawStep'; readonly unit: string; readonly frozenAt: number; readonly from: number; readonly step: number };

/**
 * Why a unit was not frozen. `freezing`: a freeze of it is under way; `not-freezing`: a
 * commit for a unit no freeze began, or whose freeze a write cancelled.
 */
export type FreezeCancel = 'frozen' | 'inside-frozen' | 'holds-frozen' | 'freezing' | 'not-freezing' | UnfreezableWhy;

export type FreezeValue =
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: true; readonly items: number; readonly bytes: number }
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: false; readonly why: FreezeCancel };

export type FreezeStart = { readonly unit: string; readonly freezing: true } | { readonly unit: string; readonly freezing: false; readonly why: FreezeCancel };

export type HibernateValue =
  | FreezeValue
  | { readonly op: 'freezeUnits'; readonly units: readonly FreezeStart[] }
  | { readonly op: 'commitFreeze'; readonly units: readonly FreezeValue[] }
  /** `done`: no hot entry of the unit is left (or it is no longer draining that freeze). */
  | { readonly op: 'dropHot'; readonly unit: string; readonly dropped: number; readonly done: boolean }
  | { readonly op: 'thaw'; readonly unit: string; readonly thawed: boolean; readonly items: number }
  /** `reading`: the unit is Frozen at that freeze, and each member is reading its file. */
  | { readonly op: 'thawBegin'; readonly unit: string; readonly reading: boolean }
  /** `next`: where the next step starts; `thawed` once the unit is Hot (then `items` is all it holds); `done` when nothing is left to do (thawed, or not that freeze's unit). */
  | { readonly op: 'thawStep'; readonly unit: string; readonly next: number; readonly done: boolean; readonly thawed: boolean; readonly items: number };

function answer(value: HibernateValue, ops: BatchOp[] = [], after: Array<() => void> = []): Plan {
  return { result: { ok: true, op: 'family', family: 'hibernate', value }, ops, events: [], after };
}

/** Why a unit may not begin to freeze, from what every member holds in memory. */
function heldBack(state: HibernateState, unit: string): FreezeCancel | null {
  if (state.frozen.has(unit)) return 'frozen';
  if (state.freezing.has(unit)) return 'freezing';
  if (state.unitOf(unit) !== null) return 'inside-frozen';
  if (state.holdsFrozen(unit)) return 'holds-frozen';
  return null;
}

/**
 * The batch that freezes a unit: its hot entries deleted (or, `draining`, left for
 * dropHot entries and the unit marked), its Frozen record put, its Freezing one (if any) deleted.
 */
function frozenOps(unit: string, keys: readonly Buffer[], record: FrozenUnit, draining = false): BatchOp[] {
  const ops: BatchOp[] = draining ? [{ type: 'put', key: drainingKey(unit), value: Buffer.alloc(0) }] : keys.map((key) => ({ type: 'del', key }));
  ops.push({ type: 'del', key: freezingKey(unit) });
  ops.push({ type: 'put', key: unitKey(unit), value: encodeFrozen(record) });
  return ops;
}

/** The keys of a unit's entries, for the batch that deletes them. */
function keysOf(entries: HeldEntries): Buffer[] {
  return entries.slice(0, entries.length).map(([key]) => key);
}

/** The keys of a unit's entries in the db, at most `max`, one call to LevelDB per range (a commit reads at most a step's worth). */
async function unitKeys(db: PlanContext['db'], unit: string, max: number): Promise<Buffer[]> {
  const keys: Buffer[] = [];
  for (const range of unitItemRanges(unit)) {
    if (keys.length >= max) break;
    for (const key of await db.keys({ ...range, limit: max - keys.length }).all()) keys.push(key);
  }
  return keys;
}

/** The in-memory side of a freeze, run once its batch is written. */
function frozenAfter(ctx: PlanContext, unit: string, record: FrozenUnit, draining = false): () => void {
  const state = ctx.states.of(hibernate);
  const listsState = ctx.states.of(lists);
  return () => {
    state.setFrozen(unit, record);
    if (draining) state.draining.add(unit);
    state.freezing.delete(unit);
    state.writing.delete(unit);
    // The lists index holds what the db holds: a restarted member rebuilds it without the frozen lists.
    for (const l of record.lists) {
      listsState.setLastIndex(l.path, 0);
      listsState.usage.removedFromList(l.path, l.items);
    }
    // A draining unit's span is noted by its last dropHot, once its hot entries are all deleted.
    if (!draining) state.compactor.frozen(unitItemRanges(unit));
  };
}

/** `freeze` (version 4): one unit, read, written and frozen in one entry. */
async function freeze(c: Extract<HibernateCommand, { op: 'freeze' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  // Before the batch that may write a Frozen record (not in an after step: a read's snapshot may see the batch first).
  state.mayHoldFrozen = true;
  const cancelled = (why: FreezeCancel): Plan => answer({ op: 'freeze', unit: c.unit, frozen: false, why });
  const held = heldBack(state, c.unit);
  if (held !== null) return cancelled(held);
  const read = await readUnit(ctx.db, c.unit);
  if ('why' in read) return cancelled(read.why);
  // A write (or delete of the newest item) after the leader looked: the unit is not idle.
  if (read.newest !== c.seen) return cancelled('changed');
  // Durable before the batch that deletes the hot copy: a crash from here on leaves both, then the cold one.
  crashPoint('freeze-before-cold');
  const bytes = await state.cold.write({ unit: c.unit, meta: { frozenAt: ctx.index }, entries: read.entries });
  crashPoint('freeze-cold-durable');
  const record: FrozenUnit = { frozenAt: ctx.index, lists: read.lists, bytes };
  const keys = keysOf(read.entries);
  return answer({ op: 'freeze', unit: c.unit, frozen: true, items: keys.length, bytes }, frozenOps(c.unit, keys, record), [frozenAfter(ctx, c.unit, record)]);
}

/**
 * `freezeUnits`: each unit not held back becomes Freezing. Nothing is read here: right
 * after the entry is written, each member snapshots the db and reads and writes the
 * units beside the log (HibernateState.prepareInBackground).
 */
function startFreezes(c: Extract<HibernateCommand, { op: 'freezeUnits' }>, ctx: PlanContext): Plan {
  const state = ctx.states.of(hibernate);
  const values: FreezeStart[] = [];
  const ops: BatchOp[] = [];
  const started: FreezeTarget[] = [];
  for (const t of c.units) {
    const held = heldBack(state, t.unit);
    if (held !== null) {
      values.push({ unit: t.unit, freezing: false, why: held });
      continue;
    }
    ops.push({ type: 'put', key: freezingKey(t.unit), value: encodeFreezing({ since: ctx.index, seen: t.seen }) });
    started.push(t);
    values.push({ unit: t.unit, freezing: true });
  }
  const after =
    started.length === 0
      ? []
      : [
          () => {
            for (const t of started) state.freezing.set(t.unit, { since: ctx.index, seen: t.seen });
            state.prepareInBackground(ctx.db, started, ctx.index);
          },
        ];
  return answer({ op: 'freezeUnits', units: values }, ops, after);
}

/**
 * `commitFreeze`: each unit still Freezing (no change reached it since its freeze began,
 * or the change would have cancelled it) is frozen if it may be, its file durable before
 * the one batch that deletes the hot copies; one that may not goes back to Hot.
 */
async function commitFreezes(c: Extract<HibernateCommand, { op: 'commitFreeze' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  // Before the batch that may write Frozen records (see HibernateState.mayHoldFrozen).
  state.mayHoldFrozen = true;
  const values: FreezeValue[] = [];
  const ops: BatchOp[] = [];
  const after: Array<() => void> = [];
  const freezing: Array<readonly [string, FreezingUnit]> = [];
  for (const unit of c.units) {
    const record = state.freezing.get(unit);
    if (record === undefined) values.push({ op: 'freeze', unit, frozen: false, why: 'not-freezing' });
    else freezing.push([unit, record]);
  }
  // Durable before the batch that deletes the hot copies: a crash from here on leaves both, then the cold ones.
  crashPoint('freeze-before-cold');
  const prepared = await Promise.all(freezing.map(([unit, record]) => ready(state, ctx, unit, record)));
  crashPoint('freeze-cold-durable');
  // Without `step` (entries before command version 9), every hot entry goes in this batch.
  let budget = c.step ?? Infinity;
  const refuse = (unit: string, why: UnfreezableWhy): void => {
    values.push({ op: 'freeze', unit, frozen: false, why });
    ops.push({ type: 'del', key: freezingKey(unit) });
    after.push(() => forgetFreezing(state, unit));
  };
  for (const [n, [unit, record]] of freezing.entries()) {
    const p = prepared[n]!;
    if ('why' in p) {
      refuse(unit, p.why);
      continue;
    }
    // A unit whose hot entries fit what is left of the step goes in this batch; a larger one drains.
    const draining = p.items > budget;
    // The unit's keys are those it held when its freeze began (a change since would have cancelled it).
    // Counted all the same: a write path that changed the unit without an event would otherwise lose
    // items its cold file does not hold; the freeze is refused instead (every member reads the same keys).
    // One more than the read found, at most: enough to tell a unit that changed, whatever it holds now.
    const keys = draining ? [] : await unitKeys(ctx.db, unit, p.items + 1);
    if (!draining && keys.length !== p.items) {
      refuse(unit, 'changed');
      continue;
    }
    if (!draining) budget -= p.items;
    const frozen: FrozenUnit = { frozenAt: record.since, lists: p.lists, bytes: p.bytes };
    for (const op of frozenOps(unit, keys, frozen, draining)) ops.push(op);
    after.push(frozenAfter(ctx, unit, frozen, draining));
    values.push({ op: 'freeze', unit, frozen: true, items: p.items, bytes: p.bytes });
  }
  // In the order the entry named them.
  values.sort((a, b) => c.units.indexOf(a.unit) - c.units.indexOf(b.unit));
  return answer({ op: 'commitFreeze', units: values }, ops, after);
}

/**
 * `dropHot`: up to `step` more hot entries of a draining unit deleted; with the last of
 * them, its draining mark. A unit thawed (or frozen again) since is left alone: the
 * entry names the freeze it drains.
 */
async function dropHot(c: Extract<HibernateCommand, { op: 'dropHot' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  const done = (dropped: number): Plan => answer({ op: 'dropHot', unit: c.unit, dropped, done: true });
  if (!state.draining.has(c.unit) || state.frozen.get(c.unit)?.frozenAt !== c.frozenAt) return done(0);
  // Every key of the unit up to the last one an earlier step deleted is gone: seek past it, not
  // over its tombstones (read from the start, each step would skip all the steps' before it).
  const cursor = state.drainCursor.get(c.unit);
  const keys: Buffer[] = [];
  for (const range of unitItemRanges(c.unit)) {
    if (cursor !== undefined && Buffer.compare(cursor, range.lt) >= 0) continue;
    const from = cursor !== undefined && Buffer.compare(cursor, range.gte) >= 0 ? { gt: cursor, lt: range.lt } : range;
    // In one call to LevelDB, not one await per key: the step holds the log for as long as this takes.
    // Through the batch's pending writes: the step shares a batch with the entries around it (see goesAlone).
    for (const key of await ctx.reads.keys({ ...from, limit: c.step + 1 - keys.length })) keys.push(key);
    if (keys.length > c.step) break;
  }
  const last = keys.length <= c.step;
  const ops: BatchOp[] = keys.slice(0, c.step).map((key) => ({ type: 'del', key }));
  crashPoint('drop-hot-planned');
  if (!last) {
    const upTo = keys[c.step - 1]!;
    return written(answer({ op: 'dropHot', unit: c.unit, dropped: ops.length, done: false }, ops, [() => state.drainCursor.set(c.unit, upTo)]), 'drop-hot-written');
  }
  ops.push({ type: 'del', key: drainingKey(c.unit) });
  return written(answer({ op: 'dropHot', unit: c.unit, dropped: ops.length - 1, done: true }, ops, [
    () => {
      state.draining.delete(c.unit);
      state.drainCursor.delete(c.unit);
      state.compactor.frozen(unitItemRanges(c.unit));
    },
  ]), 'drop-hot-written');
}

/** The plan with a crash point once its batch is written (a step shares its batch, so its `after` runs before that). */
function written(plan: Plan, point: CrashPoint): Plan {
  return { ...plan, written: [() => crashPoint(point)] };
}

/** The work done beside the log for this freeze, or (after a restart, or if it failed) done now from the db, which still holds the state the freeze began at. */
async function ready(state: HibernateState, ctx: PlanContext, unit: string, record: FreezingUnit): Promise<Prepared> {
  const background = state.writing.get(unit);
  if (background !== undefined && background.since === record.since) {
    // Apply waits on it now (a follower catching up applies the freeze and its commit back to back): no more pauses.
    background.hurry();
    try {
      return await background.done;
    } catch {
      // Done again below; if the disk still fails, this member stops there.
    }
  }
  return prepareUnit(ctx.db, state.cold, unit, record.seen, record.since);
}

function forgetFreezing(state: HibernateState, unit: string): void {
  state.freezing.delete(unit);
  state.writing.delete(unit);
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
  // Puts every entry, over any hot one a drain had not yet deleted.
  const ops: BatchOp[] = cold.entries.map(([key, value]) => ({ type: 'put', key, value }));
  ops.push(...thawedOps(state, c.unit));
  // The file stays until the sweep at the next start (or the unit's next freeze replaces it): removing it
  // here could race a later freeze of the same unit, and a leftover file of a Hot unit is harmless.
  return answer({ op: 'thaw', unit: c.unit, thawed: true, items: cold.entries.length }, ops, [thawedAfter(ctx, c.unit, record)]);
}

/** With a thaw's last entries: the Frozen record gone, and the unit's draining or thawing mark. */
function thawedOps(state: HibernateState, unit: string): BatchOp[] {
  const ops: BatchOp[] = [{ type: 'del', key: unitKey(unit) }];
  if (state.draining.has(unit) || state.thawing.has(unit)) ops.push({ type: 'del', key: drainingKey(unit) });
  return ops;
}

/** The in-memory side of a thaw, run once its last batch is written. */
function thawedAfter(ctx: PlanContext, unit: string, record: FrozenUnit): () => void {
  const state = ctx.states.of(hibernate);
  const listsState = ctx.states.of(lists);
  return () => {
    crashPoint('thaw-batch-written');
    state.setThawed(unit);
    state.draining.delete(unit);
    state.drainCursor.delete(unit);
    state.forgetThaw(unit);
    for (const l of record.lists) {
      listsState.setLastIndex(l.path, l.newest);
      listsState.usage.addedToList(l.path, l.items);
    }
  };
}

/**
 * `thawBegin`: changes nothing in the db. Once it is written, each member starts reading and
 * decoding the unit's file in the background (in slices, the event loop turning between
 * them), as `freezeUnits` starts the writing of files: a member's first `thawStep` would
 * otherwise read the whole file inside its apply, holding every later entry on that member
 * (on a follower, its acknowledgements too) behind the read. A failed read is forgotten
 * here; the step that needs the file reads it again and stops the member if it is bad.
 */
function thawBegin(c: Extract<HibernateCommand, { op: 'thawBegin' }>, ctx: PlanContext): Plan {
  const state = ctx.states.of(hibernate);
  const record = state.frozen.get(c.unit);
  if (record === undefined || record.frozenAt !== c.frozenAt) return answer({ op: 'thawBegin', unit: c.unit, reading: false });
  return answer({ op: 'thawBegin', unit: c.unit, reading: true }, [], [() => void state.thawRead(c.unit, c.frozenAt).catch(() => undefined)]);
}

/**
 * `thawStep`: the entries at [from, from + step) of the unit's file put back. Until the
 * last step the unit stays Frozen (reads keep coming from its file, changes keep waiting)
 * and is marked thawing with where the next step starts, so the entries already back are
 * leftovers no one reads, as a draining unit's are. A step that does not start where the
 * thaw is (a leader's step repeated or lost) puts nothing and says where that is; `from`
 * 0 starts the thaw over, which puts the same entries again.
 */
async function thawStep(c: Extract<HibernateCommand, { op: 'thawStep' }>, ctx: PlanContext): Promise<Plan> {
  const state = ctx.states.of(hibernate);
  const record = state.frozen.get(c.unit);
  const value = (next: number, done: boolean, thawed = false, items = 0): HibernateValue => ({ op: 'thawStep', unit: c.unit, next, done, thawed, items });
  if (record === undefined || record.frozenAt !== c.frozenAt) return answer(value(0, true));
  const at = state.thawing.get(c.unit) ?? 0;
  if (c.from !== at && c.from !== 0) return answer(value(at, false));
  // A missing or damaged file stops this member here, as a thaw in one entry does.
  const cold = await state.thawRead(c.unit, c.frozenAt);
  crashPoint('thaw-cold-read');
  const end = Math.min(cold.entries.length, c.from + c.step);
  const ops: BatchOp[] = cold.entries.slice(c.from, end).map(([key, v]) => ({ type: 'put', key, value: v }));
  if (end === cold.entries.length) {
    ops.push(...thawedOps(state, c.unit));
    return answer(value(end, true, true, cold.entries.length), ops, [thawedAfter(ctx, c.unit, record)]);
  }
  ops.push({ type: 'put', key: drainingKey(c.unit), value: encodeThawNext(end) });
  return written(answer(value(end, false), ops, [
    () => {
      // What a drain had left is put back over by the thaw: the drain stops.
      state.draining.delete(c.unit);
      state.drainCursor.delete(c.unit);
      state.thawing.set(c.unit, end);
    },
  ]), 'thaw-step-written');
}

/**
 * Whether an entry shares the batch of the entries around it. The others read the db (a
 * unit's items, to freeze or thaw it whole) or make a unit Hot, and go alone: what came
 * before is written first, and they are written before anything after them is planned.
 * A dropHot step reads through the batch's pending writes, and a thawStep that is not
 * the last reads only the file and the state in memory (its unit stays Frozen, so no
 * other entry reads what it puts back): going alone, each step would cost every member
 * two more writes to LevelDB, in turn, holding its log (and the client entries planned
 * before it, split into a batch of their own) meanwhile.
 */
function sharesBatch(c: HibernateCommand, state: HibernateState): boolean {
  if (c.op === 'dropHot') return true;
  if (c.op !== 'thawStep') return false;
  const record = state.frozen.get(c.unit);
  // Its file not read yet here (evicted, a restart): reading it inside a shared batch would hold
  // the client entries planned before it, unanswered, for as long as the read takes.
  if (record === undefined || !state.thawReadReady(c.unit, record.frozenAt)) return false;
  return c.from + c.step < record.lists.reduce((n, l) => n + l.items, 0);
}

/**
 * A list in a hibernated unit is in the cold store: a change to it, or a watch (which
 * reads it), waits for the unit's thaw. The server thaws before it proposes; this
 * catches an entry ordered after a freeze the server did not know of, and changes
 * nothing, so asking again (after the thaw) is safe.
 */
export function frozenPathProblem(states: States, path: string): ApplyError | null {
  const unit = states.of(hibernate).unitOf(path);
  return unit === null ? null : failure('CONFLICT', `${path} is in the hibernated unit ${unit}; ${FROZEN_REFUSAL}`);
}

/** How a refusal of a change in a Frozen unit ends: the server's path guard knows it by this, thaws, and asks again. */
export const FROZEN_REFUSAL = 'it is being thawed: ask again';

/**
 * Hibernation's rule over every other family's entry (the kernel runs it; no family's plan
 * calls it): a list in a Frozen unit is used only after a thaw (the server's path guard
 * thaws and asks again on this refusal), and a change to a Freezing unit cancels its freeze
 * in the same batch, so a write always wins over a freeze that has not committed.
 */
const listGuard: ListGuard = {
  use: frozenPathProblem,
  changed: (states, events) => {
    const state = states.of(hibernate);
    if (state.freezing.size === 0) return null; // the common case: nothing to cancel, nothing to look up
    const units = new Set<string>();
    for (const { path } of events) {
      const unit = state.freezingUnitOf(path);
      if (unit !== null) units.add(unit);
    }
    if (units.size === 0) return null;
    return { ops: [...units].map((unit) => ({ type: 'del' as const, key: freezingKey(unit) })), after: [...units].map((unit) => () => forgetFreezing(state, unit)) };
  },
};

export const hibernate: Family<HibernateCommand, HibernateState> = {
  name: 'hibernate',
  since: HIBERNATE_SINCE,
  buckets: [
    { id: HibernateBucket.unit, name: 'hibernated units' },
    { id: HibernateBucket.transit, name: 'cold files in a snapshot' },
    { id: HibernateBucket.freezing, name: 'freezing units' },
    { id: HibernateBucket.draining, name: 'frozen units whose hot entries are being deleted' },
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
      fields: ['units', 'step'],
      since: FREEZE_UNITS_SINCE,
      fieldsSince: { step: HOT_STEPS_SINCE },
      decode: (c) => (c.step === undefined ? { op: 'commitFreeze', units: commitUnits(c.units) } : { op: 'commitFreeze', units: commitUnits(c.units), step: integerField(c.step, 'step', 1, MAX_HOT_STEP) }),
    },
    thawStep: {
      fields: ['unit', 'frozenAt', 'from', 'step'],
      since: HOT_STEPS_SINCE,
      decode: (c) => ({ op: 'thawStep', unit: pathField(c.unit, false), frozenAt: indexField(c.frozenAt, 'frozenAt'), from: integerField(c.from, 'from', 0, MAX_UNIT_ITEMS), step: integerField(c.step, 'step', 1, MAX_HOT_STEP) }),
    },
    thawBegin: {
      fields: ['unit', 'frozenAt'],
      since: HOT_STEPS_SINCE,
      decode: (c) => ({ op: 'thawBegin', unit: pathField(c.unit, false), frozenAt: indexField(c.frozenAt, 'frozenAt') }),
    },
    dropHot: {
      fields: ['unit', 'frozenAt', 'step'],
      since: HOT_STEPS_SINCE,
      decode: (c) => ({ op: 'dropHot', unit: pathField(c.unit, false), frozenAt: indexField(c.frozenAt, 'frozenAt'), step: integerField(c.step, 'step', 1, MAX_HOT_STEP) }),
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
        return Promise.resolve(startFreezes(command, ctx));
      case 'commitFreeze':
        return commitFreezes(command, ctx);
      case 'thaw':
        return thaw(command, ctx);
      case 'dropHot':
        return dropHot(command, ctx);
      case 'thawStep':
        return thawStep(command, ctx);
      case 'thawBegin':
        return Promise.resolve(thawBegin(command, ctx));
    }
  },
  loaded: (db, snapshot, states) => states.of(hibernate).hideDraining(db, snapshot, states.of(lists)),
  goesAlone: (command, states) => !sharesBatch(command, states.of(hibernate)),
  listGuard,
  plugin: async () => (await import('./server.js')).plugin,
};
