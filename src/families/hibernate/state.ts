// Hibernation's in-memory state: every Frozen unit (what stays hot about it),
// loaded from its bucket, and the cold store the units' data is in. The cold
// store lives beside the db, in the data directory's `cold` folder.
import { dirname, join } from 'node:path';
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { ColdStore } from './cold-store.js';
import { HibernateBucket, inUnit, unitOfKey } from './keys.js';
import { decodeFrozen, type FrozenUnit } from './records.js';

export class HibernateState {
  private constructor(
    readonly frozen: Map<string, FrozenUnit>,
    readonly cold: ColdStore,
  ) {}

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<HibernateState> {
    const frozen = new Map<string, FrozenUnit>();
    for await (const [key, value] of db.iterator({ ...bucketRange(HibernateBucket.unit), snapshot })) frozen.set(unitOfKey(key), decodeFrozen(value));
    const cold = await ColdStore.open(coldDirOf(db));
    // What a crash can leave: temporary files, and the files of units thawed since (their thaw is in the db).
    const keep = new Set([...frozen.keys()].map((u) => cold.fileOf(u)));
    await cold.sweep((file) => keep.has(file));
    return new HibernateState(frozen, cold);
  }

  /** The Frozen unit `path` is in (the unit's list or one below it), if any: a lookup per ancestor, not a scan. */
  unitOf(path: string): string | null {
    if (this.frozen.size === 0) return null;
    for (let end = path.indexOf('/', 1); ; end = path.indexOf('/', end + 1)) {
      const candidate = end === -1 ? path : path.slice(0, end);
      if (this.frozen.has(candidate)) return candidate;
      if (end === -1) return null;
    }
  }

  /** A Frozen unit below `unit` (its lists' data is already cold), if any. */
  frozenBelow(unit: string): string | null {
    for (const u of this.frozen.keys()) if (u !== unit && inUnit(u, unit)) return u;
    return null;
  }
}

export function coldDirOf(db: VeraDb): string {
  return join(dirname(db.location), 'cold');
}
