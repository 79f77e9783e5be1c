// The slow half of a freeze in two entries, run beside the log: read a Freezing
// unit's entries as they stood when its freeze began (a db snapshot taken right
// after that entry was written), judge whether it may be frozen, and write its
// cold file durably. Every member computes the same answer from the same state;
// a member that restarted before the commit computes it then from the db,
// which still holds that state (any change to the unit since would have
// cancelled the freeze).
import { decodeItemKey, itemRange, decodeItemValue } from '../lists/public.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { PACK_SLICE, SlicedEntries, type Breather, type ColdStore, type HeldEntries } from './cold-store.js';
import { unitItemRanges } from './keys.js';
import type { FrozenList } from './records.js';

/** The most items one unit may hold and still be frozen: a larger unit stays hot. */
export const MAX_UNIT_ITEMS = 100_000;

/** Why a unit read for freezing may not be frozen. */
export type UnfreezableWhy = 'empty' | 'changed' | 'ephemeral' | 'too-large';

export type UnitRead =
  | { readonly entries: HeldEntries; readonly lists: FrozenList[]; readonly newest: number }
  | { readonly why: Exclude<UnfreezableWhy, 'changed'> };

/**
 * Reads a unit's entries (its list and every list below it), refusing one in use, empty or too
 * large. With a Breather (beside the log), it pauses after every PACK_SLICE entries or so; inside an
 * entry's apply it does not, as nothing else runs on this member's log meanwhile anyway.
 */
export async function readUnit(db: VeraDb, unit: string, snapshot?: DbSnapshot, breather?: Breather): Promise<UnitRead> {
  const entries = new SlicedEntries();
  const lists: FrozenList[] = [];
  let newest = 0;
  // A list's keys lie together, its newest last, and differ only in their last 8 bytes (the
  // index): a key is decoded only where a list ends, not once per item (which cost every
  // member as much CPU as the rest of the read).
  let last: Buffer | null = null;
  let items = 0;
  let pausedAt = 0;
  const endList = (): void => {
    if (last === null) return;
    const { path, index } = decodeItemKey(last);
    lists.push({ path, newest: index, items });
    newest = Math.max(newest, index);
  };
  for (const range of unitItemRanges(unit)) {
    // A page of entries per call, not an awaited call per entry (which cost as much CPU as the rest of the read).
    const iterator = db.iterator(snapshot === undefined ? range : { ...range, snapshot });
    try {
      for (let page = await iterator.nextv(PACK_SLICE); page.length > 0; page = await iterator.nextv(PACK_SLICE)) {
        for (const [key, value] of page) {
          // An ephemeral item belongs to a live session: the unit is in use.
          if (!ownerIsNil(value) && decodeItemValue(value).owner !== null) return { why: 'ephemeral' };
          if (entries.length >= MAX_UNIT_ITEMS) return { why: 'too-large' };
          if (last === null || !sameList(last, key)) {
            endList();
            items = 0;
          }
          last = key;
          items++;
          entries.push(key, value);
        }
        // After each PACK_SLICE entries (LevelDB's pages are often smaller): a unit smaller than that is read in one go.
        if (breather !== undefined && entries.length >= pausedAt + PACK_SLICE) {
          await breather.pause();
          pausedAt = entries.length;
        }
      }
    } finally {
      await iterator.close();
    }
  }
  endList();
  if (entries.length === 0) return { why: 'empty' };
  return { entries: entries.end(), newest, lists };
}

/** An item key's last bytes: its index. */
const INDEX_BYTES = 8;

/** Whether two item keys are of one list: the same bytes but for the index at the end (decodeItemKey checks the layout where a list ends). */
export function sameList(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && a.length > INDEX_BYTES && a.compare(b, 0, b.length - INDEX_BYTES, 0, a.length - INDEX_BYTES) === 0;
}

/** An item value as encodeItemValue writes one with no owner: a map of 2 or 3 pairs (fixmap or map16), `owner` first, nil. */
const NIL_OWNER_AFTER_MAP = Buffer.from([0xa5, ...Buffer.from('owner'), 0xc0]);

/**
 * Whether an item's stored value says, in its first bytes, that it has no owner: true only for
 * the bytes encodeItemValue gives such an item, so a freeze need not decode every item's data
 * (a value this does not recognise is decoded, as before).
 */
export function ownerIsNil(value: Buffer): boolean {
  const b = value[0];
  const at = b === 0x82 || b === 0x83 ? 1 : b === 0xde && value[1] === 0 && (value[2] === 2 || value[2] === 3) ? 3 : -1;
  return at > 0 && value.length >= at + NIL_OWNER_AFTER_MAP.length && value.compare(NIL_OWNER_AFTER_MAP, 0, NIL_OWNER_AFTER_MAP.length, at, at + NIL_OWNER_AFTER_MAP.length) === 0;
}

/**
 * The newest item index among the unit's lists at `snapshot` (what a freeze is judged
 * against: readUnit's `newest`), found by one seek per list rather than by reading every
 * item: each list's keys lie together, its newest last, so reading backwards from the end
 * of the unit, the last key is the last list's newest, and the next seek goes to just before
 * that list's first key.
 */
export async function newestIndexIn(db: VeraDb, unit: string, snapshot: DbSnapshot): Promise<number> {
  let newest = 0;
  for (const range of unitItemRanges(unit)) {
    for (let lt = range.lt; ; ) {
      const [last] = await db.keys({ gte: range.gte, lt, reverse: true, limit: 1, snapshot }).all();
      if (last === undefined) break;
      const { path, index } = decodeItemKey(last);
      newest = Math.max(newest, index);
      lt = itemRange(path).gte;
    }
  }
  return newest;
}

/**
 * A Freezing unit made ready: its cold file durable and how many entries it holds, or why it is
 * not frozen. Nothing of the entries is kept: a commit that deletes a unit's hot entries in its
 * own batch (a unit of at most a step) reads their keys then, and a larger unit drains in
 * dropHot steps, which read theirs. (Copying a 100,000-item unit's keys here took each member
 * 0.1 to 0.2 s in one turn of its event loop, for keys no step used.)
 */
export type Prepared = { readonly items: number; readonly lists: readonly FrozenList[]; readonly bytes: number } | { readonly why: UnfreezableWhy };

/**
 * Reads the unit (at `snapshot`, or as the db is now) and, if it may be frozen, writes its
 * cold file for the freeze begun at `since`; `wanted` as ColdStore.write takes it.
 */
export async function prepareUnit(
  db: VeraDb,
  cold: ColdStore,
  unit: string,
  seen: number,
  since: number,
  snapshot?: DbSnapshot,
  wanted?: () => boolean,
  /** Beside the log: the read's and the encoding's pace (Breather.forFreeze(READ_PAGE_PAUSE_MS)), and the directory's sync left to the caller (ColdStore.syncDir). */
  background?: Breather,
): Promise<Prepared> {
  const read = await readUnit(db, unit, snapshot, background);
  if ('why' in read) return read;
  // A write (or delete of the newest item) after the leader looked: the unit is not idle.
  if (read.newest !== seen) return { why: 'changed' };
  // The same pace for the encoding as for the read (hurried alike when a commit waits for it).
  const bytes = await cold.write({ unit, meta: { frozenAt: since }, entries: read.entries }, wanted, { syncDir: background === undefined, ...(background === undefined ? {} : { breather: background }) });
  return { items: read.entries.length, lists: read.lists, bytes };
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
