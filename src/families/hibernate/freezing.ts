// The slow half of a freeze in two entries, run beside the log: read a Freezing
// unit's entries as they stood when its freeze began (a db snapshot taken right
// after that entry was written), judge whether it may be frozen, and write its
// cold file durably. Every member computes the same answer from the same state;
// a member that restarted before the commit computes it then from the db,
// which still holds that state (any change to the unit since would have
// cancelled the freeze).
import { decodeItemKey } from '../lists/keys.js';
import { decodeItemValue } from '../lists/codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import type { ColdStore } from './cold-store.js';
import { unitItemRanges } from './keys.js';
import type { FrozenList } from './records.js';

/** The most items one unit may hold and still be frozen: a larger unit stays hot. */
export const MAX_UNIT_ITEMS = 100_000;

/** Why a unit read for freezing may not be frozen. */
export type UnfreezableWhy = 'empty' | 'changed' | 'ephemeral' | 'too-large';

export type UnitRead =
  | { readonly entries: Array<readonly [Buffer, Buffer]>; readonly lists: FrozenList[]; readonly newest: number }
  | { readonly why: Exclude<UnfreezableWhy, 'changed'> };

/** Reads a unit's entries (its list and every list below it), refusing one in use, empty or too large. */
export async function readUnit(db: VeraDb, unit: string, snapshot?: DbSnapshot): Promise<UnitRead> {
  const entries: Array<readonly [Buffer, Buffer]> = [];
  const byPath = new Map<string, { newest: number; items: number }>();
  let newest = 0;
  for (const range of unitItemRanges(unit)) {
    for await (const [key, value] of db.iterator(snapshot === undefined ? range : { ...range, snapshot })) {
      // An ephemeral item belongs to a live session: the unit is in use.
      if (decodeItemValue(value).owner !== null) return { why: 'ephemeral' };
      if (entries.length >= MAX_UNIT_ITEMS) return { why: 'too-large' };
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

/** A Freezing unit made ready: its cold file durable and the keys its commit deletes, or why it is not frozen. */
export type Prepared =
  | { readonly keys: readonly Buffer[]; readonly lists: readonly FrozenList[]; readonly bytes: number }
  | { readonly why: UnfreezableWhy };

/**
 * Reads the unit (at `snapshot`, or as the db is now) and, if it may be frozen, writes its
 * cold file for the freeze begun at `since`; `wanted` as ColdStore.write takes it.
 */
export async function prepareUnit(db: VeraDb, cold: ColdStore, unit: string, seen: number, since: number, snapshot?: DbSnapshot, wanted?: () => boolean): Promise<Prepared> {
  const read = await readUnit(db, unit, snapshot);
  if ('why' in read) return read;
  // A write (or delete of the newest item) after the leader looked: the unit is not idle.
  if (read.newest !== seen) return { why: 'changed' };
  const bytes = await cold.write({ unit, meta: { frozenAt: since }, entries: read.entries }, wanted);
  return { keys: read.entries.map(([key]) => key), lists: read.lists, bytes };
}

/** A queue that runs at most `width` tasks at a time, in the order given. */
export function limited(width: number): <R>(task: () => Promise<R>) => Promise<R> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <R>(task: () => Promise<R>): Promise<R> => {
    if (running >= width) await new Promise<void>((go) => waiting.push(go));
    running++;
    try {
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}
