// Reads of the lists family's items, shared by apply (which reads the state
// left by the previous entry) and by queries (which read a snapshot).
import { bucketRange, compareUtf8 } from '../../keys/index.js';
import { ListsBucket, decodeItemKey, itemKey, itemRange, itemSeekKey } from './keys.js';
import { CorruptValueError, corruptValueIn } from '../../raft/checked-values.js';
import { decodeItemValue } from './codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { Item } from './item.js';
import { withStoredSize } from '../../statemachine/item-sizes.js';

export type DbSnapshot = ReturnType<VeraDb['snapshot']>;

export async function readItem(db: VeraDb, path: string, index: number): Promise<Item | undefined> {
  const bytes = await db.get(itemKey(path, index));
  return bytes === undefined ? undefined : withStoredSize({ index, ...decodeItemValue(bytes) }, bytes.length);
}

/**
 * The items of one list in index order, each with its stored size (key and value).
 * A value that fails its checksum is an error naming the list and the item before it.
 */
async function* storedItems(db: VeraDb, path: string, snapshot: DbSnapshot | undefined): AsyncGenerator<{ item: Item; bytes: number }> {
  let lastIndex = 0;
  try {
    for await (const [key, value] of db.iterator({ ...itemRange(path), snapshot })) {
      lastIndex = decodeItemKey(key).index;
      yield { item: { index: lastIndex, ...decodeItemValue(value) }, bytes: key.length + value.length };
    }
  } catch (error) {
    // Only the iterator's own errors land here (a consumer that stops ends the generator by return).
    const corrupt = corruptValueIn(error);
    if (corrupt === null) throw error;
    // The iterator failed on the value after the last key it gave.
    throw new CorruptValueError(`the stored item of ${path} after index ${lastIndex}: ${corrupt.message}`, { cause: error });
  }
}

/** Every item of one list, in index order. For lists of any size use readListPages. */
export async function readList(db: VeraDb, path: string, snapshot?: DbSnapshot): Promise<Item[]> {
  const items: Item[] = [];
  for await (const { item } of storedItems(db, path, snapshot)) items.push(item);
  return items;
}

/** Part of a list: `more` says items follow it. */
export interface ItemPage {
  readonly items: Item[];
  /** Stored bytes (keys and values) of `items`. */
  readonly bytes: number;
  readonly more: boolean;
}

/**
 * The items of one list, in index order, in pages of at most `pageBytes` stored
 * bytes (key and value; a page always holds at least one item). `onPage` may wait:
 * the next page is read only after it settles, so a slow consumer holds one page,
 * never the list. Throwing from `onPage` stops the read. There is always a last
 * page with `more: false`, empty for an empty list.
 */
export async function readListPages(
  db: VeraDb,
  path: string,
  snapshot: DbSnapshot | undefined,
  pageBytes: number,
  onPage: (page: ItemPage) => Promise<void> | void,
): Promise<void> {
  let page: Item[] = [];
  let bytes = 0;
  for await (const { item, bytes: size } of storedItems(db, path, snapshot)) {
    if (page.length > 0 && bytes + size > pageBytes) {
      await onPage({ items: page, bytes, more: true });
      page = [];
      bytes = 0;
    }
    page.push(item);
    bytes += size;
  }
  await onPage({ items: page, bytes, more: false });
}

/** The list's items if their stored bytes are at most `maxBytes`, else null (having read no further than that). */
export async function readListWithin(db: VeraDb, path: string, maxBytes: number, snapshot?: DbSnapshot): Promise<Item[] | null> {
  const items: Item[] = [];
  let bytes = 0;
  for await (const { item, bytes: size } of storedItems(db, path, snapshot)) {
    bytes += size;
    if (bytes > maxBytes) return null;
    items.push(item);
  }
  return items;
}

/** The newest index of a list once `removed` indexes are gone (0 when it would be empty). */
export async function newestRemaining(db: VeraDb, path: string, removed: ReadonlySet<number>): Promise<number> {
  // Walks back from the newest item; it stops after at most removed.size + 1 keys.
  for await (const key of db.keys({ ...itemRange(path), reverse: true })) {
    const { index } = decodeItemKey(key);
    if (!removed.has(index)) return index;
  }
  return 0;
}

/**
 * Names of the segments directly below `path` that lead to at least one item,
 * sorted in UTF-8 byte order (the order of the keys).
 *
 * Seeks over whole subtrees instead of reading every item below `path`. For a
 * child C the item keys are not one contiguous run: paths like C-x or C.x sort
 * between C's own items (C + SEP) and C's descendants (C + '/'). So on landing
 * on a key of C we skip just the run we landed in: C's own items (to C + 0x00 0x01)
 * or C's descendants (to C + '0', '0' being the byte after '/'). Each child is
 * landed on at most twice.
 */
export async function listChildren(db: VeraDb, path: string, snapshot?: DbSnapshot): Promise<string[]> {
  const { names } = await walkChildren(db, path, snapshot, null, Infinity);
  return [...names].sort(compareUtf8);
}

/** One step of a walk over a path's children: up to `limit` names from `from`, and where the next step starts (null at the end). */
export interface ChildrenStep {
  readonly names: readonly string[];
  readonly next: Buffer | null;
}

/**
 * Children in steps, for a walk over a path with very many (hibernation's idle detector).
 * A child whose name another extends (`a` and `a-b`) may come in two steps, since its own
 * items and its descendants lie on either side of the other's keys; none is missed, and
 * each step starts past the last.
 */
export async function childrenStep(db: VeraDb, path: string, snapshot: DbSnapshot, from: Buffer | null, limit: number): Promise<ChildrenStep> {
  const { names, next } = await walkChildren(db, path, snapshot, from, limit);
  return { names: [...names], next };
}

async function walkChildren(db: VeraDb, path: string, snapshot: DbSnapshot | undefined, from: Buffer | null, limit: number): Promise<{ names: Set<string>; next: Buffer | null }> {
  const base = path === '/' ? '/' : `${path}/`;
  const lt = path === '/' ? bucketRange(ListsBucket.item).lt : itemSeekKey(`${path}0`);
  const names = new Set<string>();
  const keys = db.keys({ gte: from ?? itemSeekKey(base), lt, snapshot });
  let next: Buffer | null = null;
  try {
    for (let key = await keys.next(); key !== undefined; key = await keys.next()) {
      if (names.size >= limit) {
        next = key;
        break;
      }
      const below = decodeItemKey(key).path.slice(base.length);
      const cut = below.indexOf('/');
      const name = cut < 0 ? below : below.slice(0, cut);
      names.add(name);
      const child = base + name;
      keys.seek(cut < 0 ? itemRange(child).lt : itemSeekKey(`${child}0`));
    }
  } finally {
    await keys.close();
  }
  return { names, next };
}
