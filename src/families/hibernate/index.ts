// The hibernation family (issue 15, seed 004; design in docs/hibernation.md):
// a unit (a list and every list below it) moves to the cold store in one
// entry (`freeze`) and back in one entry (`thaw`), so the log orders both
// against every write. Freeze writes the unit's entries to its cold file and
// makes it durable before the batch that deletes them from the db is written;
// thaw reads and verifies the file before the batch that puts them back. A
// crash anywhere leaves the hot copy or a verified cold copy: an entry whose
// batch was not written is applied again at restart. Freeze and thaw change
// no item as a client sees it, so they emit no events.
//
// Not yet wired: nothing proposes these entries (the server's idle detector,
// single-flight thaw and CLI are the next steps in docs/hibernation.md).
import { decodeItemKey } from '../../keys/index.js';
import { decodeItemValue } from '../../statemachine/codec.js';
import type { ApplyError } from '../../statemachine/types.js';
import { CommandError, failure, type BatchOp, type Family, type Plan, type PlanContext, type States } from '../family.js';
import { indexField, pathField } from '../fields.js';
import { lists } from '../lists/index.js';
import { ColdStoreError } from './cold-store.js';
import { crashPoint } from './crash-points.js';
import { HibernateBucket, unitItemRanges, unitKey } from './keys.js';
import { encodeFrozen, type FrozenList, type FrozenUnit } from './records.js';
import { coldFilesAt, HibernateState } from './state.js';

export const HIBERNATE_SINCE = 4;
/** The most items one unit may hold and still be frozen: a larger unit stays hot. */
export const MAX_UNIT_ITEMS = 100_000;

export type HibernateCommand =
  /** `seen`: the newest index among the unit's lists when the leader chose to freeze it. */
  | { readonly op: 'freeze'; readonly unit: string; readonly seen: number }
  | { readonly op: 'thaw'; readonly unit: string };

export type HibernateValue =
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: true; readonly items: number; readonly bytes: number }
  | { readonly op: 'freeze'; readonly unit: string; readonly frozen: false; readonly why: 'frozen' | 'inside-frozen' | 'holds-frozen' | 'empty' | 'changed' | 'ephemeral' | 'too-large' }
  | { readonly op: 'thaw'; readonly unit: string; readonly thawed: boolean; readonly items: number };

function answer(value: HibernateValue, ops: BatchOp[] = [], after: Array<() => void> = []): Plan {
  return { result: { ok: true, op: 'family', family: 'hibernate', value }, ops, events: [], after };
}

async function freeze(c: Extract<HibernateCommand, { op: 'freeze' }>, ctx: PlanContext): Promise<Plan | ApplyError> {
  const state = ctx.states.of(hibernate);
  const cancelled = (why: Extract<HibernateValue, { frozen: false }>['why']): Plan => answer({ op: 'freeze', unit: c.unit, frozen: false, why });
  if (state.frozen.has(c.unit)) return cancelled('frozen');
  if (state.unitOf(c.unit) !== null) return cancelled('inside-frozen');
  if (state.frozenBelow(c.unit) !== null) return cancelled('holds-frozen');
  const entries: Array<readonly [Buffer, Buffer]> = [];
  const byPath = new Map<string, { newest: number; items: number }>();
  let newest = 0;
  for (const range of unitItemRanges(c.unit)) {
    for await (const [key, value] of ctx.db.iterator(range)) {
      // An ephemeral item belongs to a live session: the unit is in use.
      if (decodeItemValue(value).owner !== null) return cancelled('ephemeral');
      if (entries.length >= MAX_UNIT_ITEMS) return cancelled('too-large');
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
  if (newest !== c.seen) return cancelled('changed');
  const frozenLists: FrozenList[] = [...byPath].map(([path, l]) => ({ path, newest: l.newest, items: l.items }));
  // Durable before the batch that deletes the hot copy: a crash from here on leaves both, then the cold one.
  crashPoint('freeze-before-cold');
  const bytes = await state.cold.write({ unit: c.unit, meta: { frozenAt: ctx.index }, entries });
  crashPoint('freeze-cold-durable');
  const record: FrozenUnit = { frozenAt: ctx.index, lists: frozenLists, bytes };
  const ops: BatchOp[] = entries.map(([key]) => ({ type: 'del', key }));
  ops.push({ type: 'put', key: unitKey(c.unit), value: encodeFrozen(record) });
  const listsState = ctx.states.of(lists);
  return answer({ op: 'freeze', unit: c.unit, frozen: true, items: entries.length, bytes }, ops, [
    () => {
      state.frozen.set(c.unit, record);
      // The lists index holds what the db holds: a restarted member rebuilds it without the frozen lists.
      for (const l of frozenLists) {
        listsState.setLastIndex(l.path, 0);
        listsState.usage.removedFromList(l.path, l.items);
      }
    },
  ]);
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
  plan: (command, ctx) => (command.op === 'freeze' ? freeze(command, ctx) : thaw(command, ctx)),
  // Both read the db (the unit's items, the cold file) and must see every write before them.
  goesAlone: () => true,
  server: async () => (await import('./server.js')).server,
};
