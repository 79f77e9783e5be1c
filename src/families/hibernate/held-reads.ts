// Reads of Frozen units as of one db snapshot, for hibernation's path guard: a
// list's items from its unit's cold file, and the Frozen lists below a prefix
// from the units' records. Judged at the reader's own snapshot (the Frozen
// record is in the same db), so a freeze or thaw applied at any moment around
// the read can never make a list look empty: the snapshot holds either the hot
// items or the record whose file holds them.
import { VeraError } from '../../protocol/index.js';
import { bucketRange, compareUtf8 } from '../../keys/index.js';
import { itemRange } from '../lists/public.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { ColdStore, ColdUnit } from './cold-store.js';
import { HibernateBucket, inUnit, unitKey, unitOfKey } from './keys.js';
import { decodeFrozen, type FrozenList } from './records.js';

/** Why a read of a cold file is asked again: the unit thawed and froze again since the reader's snapshot (the file is a newer freeze's). */
export const COLD_FILE_MOVED = 'its cold file changed during the read: ask again';

/**
 * The last cold file read for a reader, decoded: a resync or a listing reads a unit's lists
 * one after another, and a freeze's file never changes (a later freeze's has another
 * `frozenAt`), so each is decompressed once, not once per list. One file at most is kept.
 */
export class RecentColdRead {
  private last: ColdUnit | null = null;

  of(unit: string, frozenAt: number): ColdUnit | null {
    const last = this.last;
    return last !== null && last.unit === unit && last.meta.frozenAt === frozenAt ? last : null;
  }

  keep(unit: string, file: ColdUnit): ColdUnit {
    this.last = file.unit === unit ? file : null;
    return file;
  }
}

/** `path` and each of its ancestors, outermost first: the units it may be in. */
function selfAndAncestors(path: string): string[] {
  const out: string[] = [];
  for (let end = path.indexOf('/', 1); end !== -1; end = path.indexOf('/', end + 1)) out.push(path.slice(0, end));
  out.push(path);
  return out;
}

/**
 * The stored entries (key order) of the list at `path` as of `snapshot` when its unit is
 * Frozen there, read from the unit's cold file (verified, and checked to be that freeze's);
 * null when the unit is not Frozen at the snapshot (the item bucket holds the list).
 */
export async function frozenEntriesAt(cold: ColdStore, db: VeraDb, snapshot: DbSnapshot, path: string, recent: RecentColdRead = new RecentColdRead()): Promise<ReadonlyArray<readonly [Buffer, Buffer]> | null> {
  const units = selfAndAncestors(path);
  const records = await db.getMany(units.map(unitKey), { snapshot });
  const at = records.findIndex((r) => r !== undefined);
  if (at < 0) return null;
  const unit = units[at]!;
  const record = decodeFrozen(records[at]!);
  // A path of the unit that held no items when it froze is an empty list, as it is hot.
  if (!record.lists.some((l) => l.path === path)) return [];
  // Verified as a thaw verifies it: a missing or damaged file is an error naming the unit, never an empty list.
  const file = recent.of(unit, record.frozenAt) ?? recent.keep(unit, await cold.read(unit));
  if (file.meta.frozenAt !== record.frozenAt) throw new VeraError('CONFLICT', `${path} is in the hibernated unit ${unit}; ${COLD_FILE_MOVED}`);
  const { gte, lt } = itemRange(path);
  return file.entries.filter(([key]) => key.compare(gte) >= 0 && key.compare(lt) < 0);
}

/**
 * The lists of units Frozen as of `snapshot` at or below `prefix` and after `after`, in path
 * order, read from the units' records (no cold file is opened). Units are read in key order;
 * a unit's lists sort at or after the unit itself, so every list found before the next unit's
 * key is final and goes out then: a caller that stops early has read no further than it used.
 */
export async function* frozenListsAt(db: VeraDb, snapshot: DbSnapshot, prefix: string, after: string | undefined): AsyncGenerator<FrozenList> {
  const wanted = (path: string): boolean => inUnit(path, prefix === '/' ? '' : prefix) && (after === undefined || compareUtf8(path, after) > 0);
  const pending: FrozenList[] = [];
  const take = (lists: readonly FrozenList[]): void => {
    for (const l of lists) if (wanted(l.path)) pending.push(l);
    pending.sort((a, b) => compareUtf8(a.path, b.path));
  };
  // Units that sort at or before where the page starts and may still hold lists past it: those whose
  // path is where it starts, or a beginning of it followed by a byte up to '/' (`/a` holds `/a/x`, past `/a-b`).
  const from = after ?? prefix;
  const early: string[] = [];
  for (let k = 2; k <= from.length; k++) if (k === from.length || from.charCodeAt(k) <= 0x2f) early.push(from.slice(0, k));
  for (const value of await db.getMany(early.map(unitKey), { snapshot })) if (value !== undefined) take(decodeFrozen(value).lists);
  // Then every unit below the prefix past that start (siblings such as `${prefix}-x` lie outside and are not read).
  const below = prefix === '/' ? '/' : `${prefix}/`;
  const start = after !== undefined && compareUtf8(after, below) >= 0 ? { gt: unitKey(after) } : { gte: unitKey(below) };
  const lt = prefix === '/' ? bucketRange(HibernateBucket.unit).lt : unitKey(`${prefix}0`);
  for await (const [key, value] of db.iterator({ ...start, lt, snapshot })) {
    const unit = unitOfKey(key);
    while (pending.length > 0 && compareUtf8(pending[0]!.path, unit) < 0) yield pending.shift()!;
    take(decodeFrozen(value).lists);
  }
  yield* pending;
}
