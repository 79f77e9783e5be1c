// range.paths and range.items, on the kit: answered from one LevelDB snapshot
// each (after a ReadIndex barrier unless stale), a page at a time.
import { decodeItemKey, itemRange, itemSeekKey, decodeItemValue } from '../lists/public.js';
import { VeraError, type Item } from '../../protocol/index.js';
import type { FamilyHost, HostLists, Plugin, PluginServer, StoreDb, StoreSnapshot } from '../../kit/index.js';
import { openCursor, sealCursor, SEALED_PREFIX } from './cursor.js';
import { withListsHeld } from './held-lists.js';
import { auth } from '../auth/public.js';
import { below, RANGE_SCHEMAS, type ItemsPage, type PathsPage } from './wire.js';

type Ops = typeof RANGE_SCHEMAS;
type VeraDb = StoreDb;
type Snapshot = StoreSnapshot;

/** The newest index of `path` in the snapshot, 0 when it has no items. */
async function newestOf(db: VeraDb, snapshot: Snapshot, path: string): Promise<number> {
  for await (const key of db.keys({ ...itemRange(path), reverse: true, limit: 1, snapshot })) return decodeItemKey(key).index;
  return 0;
}

/**
 * Up to `limit` non-empty lists at or below `prefix` after `after`, in key order: the
 * prefix's own list, then every path below it (keys `prefix/...`, one contiguous
 * range), stepping from one list to the next with a seek past its items. `next`: the
 * last path looked at when more remain (a page may hold fewer than `limit` when the
 * caller may not read what was looked at), null when none do.
 */
async function readPaths(db: VeraDb, snapshot: Snapshot, prefix: string, after: string | undefined, limit: number, maxBytes: number, visible: (path: string) => boolean): Promise<{ paths: Array<{ path: string; newest: number }>; next: string | null }> {
  const paths: Array<{ path: string; newest: number }> = [];
  // The page's bytes, near enough (each path and its index): a page of long paths stays within a reply.
  let bytes = 0;
  // Paths looked at, shown or not: a caller who may read few of them still gets a bounded page.
  let examined = 0;
  let last: string | null = null;
  if (prefix !== '/' && after === undefined) {
    const newest = await newestOf(db, snapshot, prefix);
    if (newest > 0 && visible(prefix)) paths.push({ path: prefix, newest });
    last = prefix;
  }
  const below = prefix === '/' ? '/' : `${prefix}/`;
  // '0' is the character after '/': every path below the prefix sorts before `${prefix}0`.
  const end = prefix === '/' ? Buffer.concat([itemSeekKey('/').subarray(0, -1), Buffer.from([0xff])]) : itemSeekKey(`${prefix}0`);
  const start = after !== undefined && after !== prefix ? itemRange(after).lt : itemSeekKey(below);
  const keys = db.keys({ gte: start, lt: end, snapshot });
  try {
    for (let key = await keys.next(); key !== undefined; key = await keys.next()) {
      const { path } = decodeItemKey(key);
      if (paths.length >= limit || examined >= MAX_EXAMINED || bytes >= maxBytes) return { paths, next: last };
      examined++;
      last = path;
      if (visible(path)) {
        paths.push({ path, newest: await newestOf(db, snapshot, path) });
        bytes += Buffer.byteLength(path) + PATH_OVERHEAD_BYTES;
      }
      keys.seek(itemRange(path).lt);
    }
  } finally {
    await keys.close();
  }
  return { paths, next: null };
}

/** What a path's entry in a page costs besides the path: field names, an index, framing. */
const PATH_OVERHEAD_BYTES = 32;

/** Paths one range.paths page looks at, at most, visible or not. */
const MAX_EXAMINED = 10_000;

/**
 * Up to `limit` items of `path` after index `after`, stopping before their stored bytes pass
 * `maxBytes` (one at least), wherever the list is held (a hibernated one in its cold file).
 */
async function readItems(lists: HostLists, db: VeraDb, snapshot: Snapshot, path: string, after: number, limit: number, maxBytes: number): Promise<{ items: Item[]; more: boolean }> {
  const items: Item[] = [];
  let bytes = 0;
  for await (const [key, value] of lists.entries(db, snapshot, path, after)) {
    if (items.length >= limit || (items.length > 0 && bytes + value.length > maxBytes)) return { items, more: true };
    bytes += value.length;
    // The stored item as the protocol's (its data is the stored value, sent as it is).
    items.push({ index: decodeItemKey(key).index, ...decodeItemValue(value) } as Item);
  }
  return { items, more: false };
}

function createServer(host: FamilyHost<null>): PluginServer<Ops> {
  const barrier = async (r: { consistency?: 'stale' }): Promise<void> => {
    if (r.consistency !== 'stale') await host.barrier();
  };
  return {
    handlers: {
      paths: async (r, { user }) => {
        await barrier(r);
        const visible = (path: string): boolean => host.access.mayRead(user, path);
        const { prefix, limit } = r;
        const tokenKey = host.reader.stateOf(auth).switch.tokenKey;
        let after = r.after;
        if (after?.startsWith(SEALED_PREFIX) === true) {
          after = openCursor(tokenKey, after);
          if (!below(prefix, after)) throw new VeraError('BAD_REQUEST', `after is a cursor of another listing than ${prefix}`);
        }
        const maxBytes = host.limits.replyBytes;
        return host.reader.read(`the paths below ${prefix}`, async (db, snapshot, index): Promise<PathsPage> => {
          const hot = await readPaths(db, snapshot, prefix, after, limit, maxBytes, visible);
          // The lists of hibernated units, from what stays hot of them (nothing is thawed).
          const { paths, next } = await withListsHeld(host.lists.heldAt(db, snapshot, prefix, after), hot, { limit, maxBytes, maxExamined: MAX_EXAMINED, overheadBytes: PATH_OVERHEAD_BYTES, visible });
          // A page that stopped on a path the caller may not read does not name it.
          const cursor = next === null ? null : visible(next) || tokenKey === null ? next : sealCursor(tokenKey, next);
          return { index, paths, ...(cursor === null ? {} : { next: cursor }) };
        });
      },
      items: async (r) => {
        const { path } = r;
        await barrier(r);
        return host.reader.read(`the list ${path}`, async (db, snapshot, index): Promise<ItemsPage> => {
          const { items, more } = await readItems(host.lists, db, snapshot, path, r.after, r.limit, host.limits.replyBytes);
          return { index, items, ...(more ? { next: items[items.length - 1]!.index } : {}) };
        });
      },
    },
  };
}

export const plugin: Plugin<Ops, null> = {
  ops: RANGE_SCHEMAS,
  needs: {
    // Each path listed is also judged on its own (a deny below the prefix hides it).
    paths: ({ prefix }) => [{ perm: 'read', resource: prefix }],
    items: ({ path }) => [{ perm: 'read', resource: path }],
  },
  touches: {
    // A listing uses no list's items: it thaws nothing.
    paths: ({ prefix, consistency }) => [{ path: prefix, use: 'list', stale: consistency === 'stale' }],
    items: ({ path, consistency }) => [{ path, use: 'read', stale: consistency === 'stale' }],
  },
  touchesNoLists: 'every op declares the lists it touches',
  createServer,
};
