// The lists family's in-memory index: the newest index of every non-empty list
// (what `ifLastIndex` is compared with) and the usage counts quotas are judged
// against. Rebuilt at load by one walk of the item bucket; changed only by
// plans' after-steps, once their batch is written.
import { bucketRange, decodeIndex, entriesInKeyOrder } from '../../keys/index.js';
import { ListsBucket, decodeItemKey } from './keys.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { UsageCounts } from './usage.js';

export class ListsState {
  private readonly newest = new Map<string, number>();
  /** Items per list and per session, for the quotas: counted at load, kept by apply. */
  readonly usage: UsageCounts;

  private constructor(usage: UsageCounts) {
    this.usage = usage;
  }

  static empty(): ListsState {
    return new ListsState(UsageCounts.empty());
  }

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<ListsState> {
    const newest = new Map<string, number>();
    const lengths = await walkLists(db, snapshot, newest);
    const state = new ListsState(await UsageCounts.load(db, snapshot, lengths));
    for (const [path, index] of newest) state.newest.set(path, index);
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

/** Keys read per step of the walk (one thread-pool trip each). */
const WALK_STEP = 10_000;
/** The fixed-width index that ends every item key. */
const INDEX_BYTES = 8;

/**
 * One forward walk of the item bucket: the newest index of every non-empty list
 * (into `newest`) and its length (returned). Keys come as views (no Buffer per key)
 * and those of one list differ only in their last 8 bytes, so a key is decoded only
 * where a new list starts. About 2 s per 10^6 items on a busy 2-core machine.
 */
async function walkLists(db: VeraDb, snapshot: DbSnapshot, newest: Map<string, number>): Promise<Map<string, number>> {
  const lengths = new Map<string, number>();
  const keys = db.keys<Uint8Array>({ ...bucketRange(ListsBucket.item), keyEncoding: 'view', snapshot });
  let prev: Uint8Array | null = null;
  let path = '';
  let n = 0;
  const finish = (last: Uint8Array): void => {
    lengths.set(path, n);
    // The path was decoded (and so the key checked) where the list started.
    newest.set(path, decodeIndex(last, last.length - INDEX_BYTES));
  };
  try {
    for (let batch = await keys.nextv(WALK_STEP); batch.length > 0; batch = await keys.nextv(WALK_STEP)) {
      for (const key of batch) {
        if (prev !== null && sameList(prev, key)) {
          n++;
        } else {
          if (prev !== null) finish(prev);
          path = decodeItemKey(key).path;
          n = 1;
        }
        prev = key;
      }
    }
    if (prev !== null) finish(prev);
  } finally {
    await keys.close();
  }
  return lengths;
}

/** Whether two item keys name the same list: equal but for the index. */
function sameList(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = a.length - INDEX_BYTES - 1; i >= 0; i--) if (a[i] !== b[i]) return false;
  return true;
}
