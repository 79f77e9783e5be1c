// The hibernation family (issue 15, seed 004; design in docs/hibernation.md):
// a unit (a list and every list below it) moves to the cold store in one
// entry (`freeze`) and back in one entry (`thaw`), so the log orders both
// against every write. Freeze writes the unit's entries to its cold file and
// makes it durable before the batch that deletes them from the db is written;
// thaw reads and verifies the file before the batch that puts them back. A
// crash anywhere leaves the hot copy or a verified cold copy: an entry whose
// batch was not written is applied again at restart. Freeze and thaw change
// no item as a client sees it, so they emit no events.
// `freezeUnits` freezes several units in one entry, their files written in
// parallel: one pause of the apply pipeline for a batch, not one per unit.
import { decodeItemKey } from '../../keys/index.js';
import { decodeItemValue } from '../../statemachine/codec.js';
import type { ApplyError } from '../../statemachine/types.js';
import { CommandError, failure, type BatchOp, type Family, type Plan, type PlanContext, type States } from '../family.js';
import { indexField, pathField } from '../fields.js';
import { lists } from '../lists/index.js';
import { ColdStoreError } from './cold-store.js';
import { crashPoint } from './crash-points.js';
import { HibernateBucket, inUnit, unitItemRanges, unitKey } from './keys.js';
import { encodeFrozen, type FrozenList, type FrozenUnit } from './records.js';
import { coldFilesAt, HibernateState } from './state.js';

export const HIBERNATE_SINCE = 4;
/** `freezeUnits`: several units in one entry. */
export const FREEZE_UNITS_SINCE = 5;
/** The most items one unit may hold and still be frozen: a larger unit stays hot. */
export const MAX_UNIT_ITEMS = 100_000;
/** The most units one `freezeUnits` entry names. */
export const MAX_UNITS_PER_FREEZE = 64;
/** The most items one freeze entry moves in all (what one apply holds in memory); the units past it wait for another entry. */
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
  | { readonly op: 'thaw'; readonly unit: string };

/** Why a unit was not frozen; `entry-full`: the entry had moved MAX_ITEMS_PER_FREEZE items before it (freeze it in another). */
export type FreezeCancel = 'frozen' | 'inside-frozen' | 'holds-frozen' | 'empty' | 'changed' | 'ephemeral' | 'too-large' | 'entry-full';

export type FreezeValue =
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: true; readonly items: number; readonly bytes: number }
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: false; readonly why: FreezeCancel };

export type HibernateValue =
  | FreezeValue
  | { readonly op: 'freezeUnits'; readonly units: readonly FreezeValue[] }
  | { readonly op: 'thaw'; readonly unit: string; readonly thawed: boolean; readonly items: number };

function answer(value: HibernateValue, ops: BatchOp[] = [], after: Array<() => void> = []): Plan {
  return { result: { ok: true, op: 'family', family: 'hibernate', value }, ops, events: [], after };
}

/** A unit read for freezing: its entries and lists, or why it is not frozen. */
type Gathered =
  | { readonly unit: string; readonly entries: Array<readonly [Buffer, Buffer]>; readonly lists: FrozenList[] }
  | { readonly unit: string; readonly why: FreezeCancel };

async function gather(t: FreezeTarget, ctx: PlanContext, room: number): Promise<Gathered> {
  const state = ctx.states.of(hibernate);
  const cancelled = (why: FreezeCancel): Gathered => ({ unit: t.unit, why });
  if (state.frozen.has(t.unit)) return cancelled('frozen');
  if (state.unitOf(t.unit) !== null) return cancelled('inside-frozen');
  if (state.frozenBelow(t.unit) !== null) return cancelled('holds-frozen');
  const entries: Array<readonly [Buffer, Buffer]> = [];
  const byPath = new Map<string, { newest: number; items: number }>();
  let newest = 0;
  for (const range of unitItemRanges(t.unit)) {
    for await (const [key, value] of ctx.db.iterator(range)) {
      // An ephemeral item belongs to a live session: the unit is in use.
      if (decodeItemValue(value).owner !== null) return cancelled('ephemeral');
      if (entries.length >= MAX_UNIT_ITEMS) return cancelled('too-large');
      if (entries.length >= room) return cancelled('entry-full');
      const { path, index } = decodeItemKey(key);
      entries.push([key, value]);
      const list = byPath.get(path) ?? { newest: 0, items: 0 };
      list.newest = Math.max(list.newest, index);
      list.items++;
      byPath.set(path, list);
      newest = Math.max(newest, index);
    }
  }
  if (entries.length === 0) return cancelled('empty');
  // A write (or delete of the newest item) after the leader looked: the unit is not idle.
  if (newest !== t.seen) return cancelled('changed');
  return { unit: t.unit, entries, lists: [...byPath].map(([path, l]) => ({ path, newest: l.newest, items: l.items })) };
}

/**
 * Freezes each target that is still idle: reads them, writes their cold files in
 * parallel and makes them durable, and only then plans the one batch that deletes
 * their hot copies and records them Frozen.
 */
async function freezeAll(targets: readonly FreezeTarget[], ctx: PlanContext): Promise<{ values: FreezeValue[]; ops: BatchOp[]; after: Array<() => void> }> {
  const state = ctx.states.of(hibernate);
  const gathered: Gathered[] = [];
  let moved = 0;
  for (const t of targets) {
    const g = await gather(t, ctx, MAX_ITEMS_PER_FREEZE - moved);
    if ('entries' in g) moved += g.entries.length;
    gathered.push(g);
  }
  // Durable before the batch that deletes the hot copies: a crash from here on leaves both, then the cold ones.
  crashPoint('freeze-before-cold');
  const bytes = await Promise.all(gathered.map((g) => ('entries' in g ? state.cold.write({ unit: g.unit, meta: { frozenAt: ctx.index }, entries: g.entries }) : 0)));
  crashPoint('freeze-cold-durable');
  const values: FreezeValue[] = [];
  const ops: BatchOp[] = [];
  const records: Array<readonly [string, FrozenUnit]> = [];
  gathered.forEach((g, n) => {
    if (!('entries' in g)) {
      values.push({ op: 'freeze', unit: g.unit, frozen: false, why: g.why });
      return;
    }
    const record: FrozenUnit = { frozenAt: ctx.index, lists: g.lists, bytes: bytes[n]! };
    for (const [key] of g.entries) ops.push({ type: 'del', key });
    ops.push({ type: 'put', key: unitKey(g.unit), value: encodeFrozen(record) });
    records.push([g.unit, record]);
    values.push({ op: 'freeze', unit: g.unit, frozen: true, items: g.entries.length, bytes: record.bytes });
  });
  const listsState = ctx.states.of(lists);
  const after = records.length === 0 ? [] : [
    () => {
      for (const [unit, record] of records) {
        state.frozen.set(unit, record);
        // The lists index holds what the db holds: a restarted member rebuilds it without the frozen lists.
        for (const l of record.lists) {
          listsState.setLastIndex(l.path, 0);
          listsState.usage.removedFromList(l.path, l.items);
        }
        state.compactor.frozen(unitItemRanges(unit));
      }
    },
  ];
  return { values, ops, after };
}

async function freeze(c: Extract<HibernateCommand, { op: 'freeze' }>, ctx: PlanContext): Promise<Plan> {
  const { values, ops, after } = await freezeAll([c], ctx);
  return answer(values[0]!, ops, after);
}

async function freezeUnits(c: Extract<HibernateCommand, { op: 'freezeUnits' }>, ctx: PlanContext): Promise<Plan> {
  const { values, ops, after } = await freezeAll(c.units, ctx);
  return answer({ op: 'freezeUnits', units: values }, ops, after);
}

/** Checks a `freezeUnits` list: 1 to MAX_UNITS_PER_FREEZE distinct units, none inside another. */
function freezeTargets(raw: unknown): FreezeTarget[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_UNITS_PER_FREEZE) throw new CommandError(`units must be an array of 1 to ${MAX_UNITS_PER_FREEZE} {unit, seen}`);
  const targets = raw.map((t: unknown): FreezeTarget => {
    if (typeof t !== 'object' || t === null || Array.isArray(t)) throw new CommandError('each of units must be {unit, seen}');
    const { unit, seen, ...rest } = t as Record<string, unknown>;
    if (Object.keys(rest).length > 0) throw new CommandError(`unexpected field in units: ${Object.keys(rest).join(', ')}`);
    return { unit: pathField(unit, false), seen: indexField(seen, 'seen') };
  });
  const sorted = targets.map((t) => t.unit).sort();
  for (let n = 1; n < sorted.length; n++) {
    if (inUnit(sorted[n]!, sorted[n - 1]!)) throw new CommandError(`units overlap: ${sorted[n]} is in ${sorted[n - 1]}`);
  }
  return targets;
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
  plan: (command, ctx) => (command.op === 'freeze' ? freeze(command, ctx) : command.op === 'freezeUnits' ? freezeUnits(command, ctx) : thaw(command, ctx)),
  // Both read the db (the unit's items, the cold file) and must see every write before them.
  goesAlone: () => true,
  server: async () => (await import('./server.js')).server,
};
