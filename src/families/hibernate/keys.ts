// Hibernation's LevelDB layout (docs/storage.md): a bucket of Frozen units, one of
// Freezing units, and one for cold files in transit.
// A unit's own data stays where its family keeps it while Hot (the lists'
// item bucket) and moves to the cold store while Frozen.
import { bucketPrefix } from '../../keys/index.js';
import { itemRange, itemSeekKey } from '../lists/public.js';

export const HibernateBucket = {
  /** unit path (UTF-8) -> its Frozen record. Hot units have none. */
  unit: 0x0017,
  /**
   * unit path -> its cold file's bytes: only in snapshot streams and backups, and in the
   * db of a member between installing one and loading it (load writes the files, then
   * deletes these keys).
   */
  transit: 0x0018,
  /** unit path -> its Freezing record: the unit is on its way to the cold store (freezeUnits, then commitFreeze). */
  freezing: 0x0019,
  /**
   * unit path -> nothing: a Frozen unit whose hot entries are still being deleted, a
   * bounded step per `dropHot` entry (so no one entry stalls the log). Command version 9.
   */
  draining: 0x0020,
} as const;

export function drainingKey(unit: string): Buffer {
  return Buffer.concat([bucketPrefix(HibernateBucket.draining), Buffer.from(unit, 'utf8')]);
}

export function freezingKey(unit: string): Buffer {
  return Buffer.concat([bucketPrefix(HibernateBucket.freezing), Buffer.from(unit, 'utf8')]);
}

export function transitKey(unit: string): Buffer {
  return Buffer.concat([bucketPrefix(HibernateBucket.transit), Buffer.from(unit, 'utf8')]);
}

export function unitKey(unit: string): Buffer {
  return Buffer.concat([bucketPrefix(HibernateBucket.unit), Buffer.from(unit, 'utf8')]);
}

export function unitOfKey(key: Buffer): string {
  return key.toString('utf8', 2);
}

/**
 * The item-key ranges a unit covers: its own list, and every list below it
 * (`/users/alice/...`, but not `/users/alice2`: '0' is the byte after '/').
 */
export function unitItemRanges(unit: string): Array<{ gte: Buffer; lt: Buffer }> {
  return [itemRange(unit), { gte: itemSeekKey(`${unit}/`), lt: itemSeekKey(`${unit}0`) }];
}

/** Whether `path` is the unit's list or below it. */
export function inUnit(path: string, unit: string): boolean {
  return path === unit || path.startsWith(`${unit}/`);
}
