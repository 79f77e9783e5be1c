// range.paths and range.items, answered from one LevelDB snapshot each (after a
// ReadIndex barrier unless stale), a page at a time.
import { decodeItemKey, itemRange, itemSeekKey } from '../lists/keys.js';
import { VeraError, type FamilyResult } from '../../protocol/index.js';
import { openCursor, sealCursor, SEALED_PREFIX } from './cursor.js';
import type { Need } from '../../server/guard/access.js';
import type { FrontEnd } from '../../server/front/context.js';
import { familyOps, type FamilyOpCall, type PathAccess, type ServerPart } from '../../server/front/family-part.js';
import { listEntries, listsHeldAt } from '../../server/guard/path-guard.js';
import { withListsHeld } from './held-lists.js';
import { wireItems } from '../../server/front/ops.js';
import { decodeItemValue } from '../lists/codec.js';
import type { Item, VeraDb } from '../../statemachine/types.js';
import { below, RANGE_OPS, type PathsPage } from './wire.js';

type Snapshot = ReturnType<VeraDb['snapshot']>;

async function barrier(fe: FrontEnd, r: Readonly<Record<string, unknown>>): Promise<void> {
  if (r.consistency !== 'stale') await fe.node.linearizableBarrier(fe.readTimeoutMs);
}

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
async function readItems(fe: FrontEnd, db: VeraDb, snapshot: Snapshot, path: string, after: number, limit: number, maxBytes: number): Promise<{ items: Item[]; more: boolean }> {
  const items: Item[] = [];
  let bytes = 0;
  for await (const [key, value] of listEntries(fe, db, snapshot, path, after)) {
    if (items.length >= limit || (items.length > 0 && bytes + value.length > maxBytes)) return { items, more: true };
    bytes += value.length;
    items.push({ index: decodeItemKey(key).index, ...decodeItemValue(value) });
  }
  return { items, more: false };
}

const handlers: Record<string, (call: FamilyOpCall) => Promise<FamilyResult>> = {
  'range.paths': async ({ fe, request: r, principal }) => {
    await barrier(fe, r);
    const visible = (path: string): boolean => fe.guard.mayRead(principal, path);
    const prefix = r.prefix as string;
    const tokenKey = fe.guard.state.switch.tokenKey;
    let after = r.after as string | undefined;
    if (after?.startsWith(SEALED_PREFIX) === true) {
      after = openCursor(tokenKey, after);
      if (!below(prefix, after)) throw new VeraError('BAD_REQUEST', `after is a cursor of another listing than ${prefix}`);
    }
    const page = await fe.node.stateMachine.read(`the paths below ${prefix}`, async (db, snapshot, index) => {
      const hot = await readPaths(db, snapshot, prefix, after, r.limit as number, fe.limits.replyBytes, visible);
      // The lists of hibernated units, from what stays hot of them (nothing is thawed).
      const { paths, next } = await withListsHeld(listsHeldAt(fe, db, snapshot, prefix, after), hot, { limit: r.limit as number, maxBytes: fe.limits.replyBytes, maxExamined: MAX_EXAMINED, overheadBytes: PATH_OVERHEAD_BYTES, visible });
      // A page that stopped on a path the caller may not read does not name it.
      const cursor = next === null ? null : visible(next) || tokenKey === null ? next : sealCursor(tokenKey, next);
      const out: PathsPage = { index, paths, ...(cursor === null ? {} : { next: cursor }) };
      return out;
    });
    return { ...page };
  },
  'range.items': async ({ fe, request: r }) => {
    const path = r.path as string;
    await barrier(fe, r);
    const page = await fe.node.stateMachine.read(`the list ${path}`, async (db, snapshot, index) => {
      const { items, more } = await readItems(fe, db, snapshot, path, r.after as number, r.limit as number, fe.limits.replyBytes);
      return { index, items: wireItems(items), ...(more ? { next: items[items.length - 1]!.index } : {}) };
    });
    return { ...page };
  },
};

const NEEDS: Record<string, (r: Readonly<Record<string, unknown>>) => readonly Need[]> = {
  // Each path listed is also judged on its own (a deny below the prefix hides it).
  'range.paths': (r) => [{ perm: 'read', resource: r.prefix as string }],
  'range.items': (r) => [{ perm: 'read', resource: r.path as string }],
};

/** A listing uses no list's items: it thaws nothing (range.items reads, as its needs say). */
const USES: Record<string, (r: Readonly<Record<string, unknown>>) => readonly PathAccess[]> = {
  'range.paths': (r) => [{ path: r.prefix as string, use: 'list', stale: r.consistency === 'stale' }],
};

export const server: ServerPart = { protocolOps: familyOps('range', RANGE_OPS, handlers, NEEDS, USES) };
