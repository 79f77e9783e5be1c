// The lists family's in-memory index: the newest index of every non-empty list
// (what `ifLastIndex` is compared with) and the usage counts quotas are judged
// against. Rebuilt from the item bucket at load; changed only by plans'
// after-steps, once their batch is written.
import { Bucket, bucketRange, decodeItemKey, entriesInKeyOrder, itemRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { UsageCounts } from './usage.js';

export class ListsState {
  private readonly newest = new Map<string, number>();
  /** Lazily counted items per session and per list, for the quotas. */
  readonly usage = new UsageCounts();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<ListsState> {
    const state = new ListsState();
    await loadNewest(db, snapshot, state.newest);
    return state;
  }

  lastIndexOf(path: string): number {
    return this.newest.get(path) ?? 0;
  }

  /** 0 means the list is now empty. */
  setLastIndex(path: string, index: number): void {
    if (index === 0) this.newest.delete(path);
    else this.newest.set(path, index);
  }

  /** Every non-empty list's newest index, sorted by path (UTF-8 byte order). */
  dump(): Array<[string, number]> {
    return entriesInKeyOrder(this.newest);
  }
}

/**
 * Newest index of every non-empty list, reading one key per list: walk the
 * item bucket backwards and, after each list's newest key, seek to just below
 * that list's first possible key (a reverse seek lands on the previous list).
 */
async function loadNewest(db: VeraDb, snapshot: DbSnapshot, into: Map<string, number>): Promise<void> {
  const keys = db.keys({ ...bucketRange(Bucket.item), reverse: true, snapshot });
  try {
    for (let key = await keys.next(); key !== undefined; key = await keys.next()) {
      const { path, index } = decodeItemKey(key);
      into.set(path, index);
      keys.seek(itemRange(path).gte);
    }
  } finally {
    await keys.close();
  }
}
