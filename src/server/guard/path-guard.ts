// The one place the families' path guards run (the kit's PluginPathGuard): every
// request's paths pass them before it runs, and a request one of them refused
// (changing nothing) passes them again and runs again; every read of a list's
// items, and every listing of what lies below a path, goes through them too.
// The paths a request uses are read from what it declares it needs (the same
// declaration the permission check judges, access.ts), so an op added later is
// guarded without knowing the guards. Callers: the connection (core ops),
// runFamilyOp (family ops over WebSocket and HTTP), GET /v1/data, the notifier's
// resyncs (reads and listings), ls, get and the range family.
import { compareUtf8 } from '../../keys/index.js';
import { decodeItemKey, itemKey, itemRange } from '../../families/lists/keys.js';
import { children } from '../../families/lists/queries.js';
import { readListPages as readHotPages, type ItemPage } from '../../families/lists/reads.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import type { FamilyRequest, Request } from '../../protocol/index.js';
import { decodeItemValue } from '../../families/lists/codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { Item } from '../../families/lists/item.js';
import type { Need } from './access.js';
import type { FrontEnd } from '../front/context.js';
import type { PathAccess, PathUse, StoredEntry } from '../../kit/plugin.js';

/** Times one request runs while a guard keeps refusing it (a unit frozen again at once, each time): then the refusal is the answer. */
const MAX_RUNS = 4;

const USE_OF_PERM: Readonly<Record<string, PathUse>> = { read: 'read', write: 'write', watch: 'watch' };

/** Core ops whose read of their path is a listing of what is below it, not a read of its items. */
const LISTING_CORE_OPS: ReadonlySet<string> = new Set(['ls']);

/**
 * The paths `request` uses, from its needs: a read, write or watch permission on a path is
 * that use of it. `touches` (a family op's own declaration) replaces this when given.
 */
export function accessesOf(request: Request | FamilyRequest, needs: readonly Need[], touches?: (request: FamilyRequest) => readonly PathAccess[]): readonly PathAccess[] {
  if (touches !== undefined) return touches(request as FamilyRequest);
  const stale = (request as { consistency?: unknown }).consistency === 'stale';
  const out: PathAccess[] = [];
  for (const need of needs) {
    const use = USE_OF_PERM[need.perm];
    if (use === undefined || !need.resource.startsWith('/')) continue;
    const access: PathAccess = { path: need.resource, use: LISTING_CORE_OPS.has(request.op) ? 'list' : use, stale };
    if (!out.some((a) => a.path === access.path && a.use === access.use)) out.push(access);
  }
  return out;
}

/**
 * Runs `run` once every guard has let each access through; when it fails with a guard's
 * refusal (which changed nothing), the guards run again and so does `run`.
 */
export async function guarded<T>(fe: FrontEnd, accesses: readonly PathAccess[], run: () => Promise<T>): Promise<T> {
  if (fe.pathGuards.length === 0) return run();
  for (let runs = 1; ; runs++) {
    for (const access of accesses) for (const guard of fe.pathGuards) await guard.before(access);
    try {
      return await run();
    } catch (err) {
      if (runs >= MAX_RUNS || !fe.pathGuards.some((g) => g.refuses(err))) throw err;
    }
  }
}

/** The list's entries at `snapshot` held outside the item bucket by a guard's family, or null. */
async function heldEntries(fe: FrontEnd, db: VeraDb, snapshot: DbSnapshot, path: string): Promise<readonly StoredEntry[] | null> {
  for (const guard of fe.pathGuards) {
    const held = await guard.entriesAt(db, snapshot, path);
    if (held !== null) return held;
  }
  return null;
}

/** The stored entries of the list at `path` after item index `after`, in index order, as of `snapshot`, wherever they are held. */
export async function* listEntries(fe: FrontEnd, db: VeraDb, snapshot: DbSnapshot, path: string, after = 0): AsyncGenerator<StoredEntry> {
  const held = await heldEntries(fe, db, snapshot, path);
  const from = itemKey(path, after);
  if (held === null) {
    yield* db.iterator({ gt: from, lt: itemRange(path).lt, snapshot });
    return;
  }
  for (const entry of held) if (entry[0].compare(from) > 0) yield entry;
}

export type ListPage = ItemPage & { readonly index: number };

/**
 * The list read from one snapshot, in pages of at most `pageBytes` stored bytes (one item
 * at least), each with the applied index the read reflects; the next page is read once
 * `onPage` settles. As the state machine's own paged read, wherever the items are held.
 */
export async function readListPages(fe: FrontEnd, path: string, pageBytes: number, onPage: (page: ListPage) => Promise<void> | void): Promise<void> {
  await fe.node.stateMachine.read(`the list ${path}`, async (db, snapshot, index) => {
    const held = await heldEntries(fe, db, snapshot, path);
    if (held === null) return readHotPages(db, path, snapshot, pageBytes, (page) => onPage({ ...page, index }));
    let items: Item[] = [];
    let bytes = 0;
    for (const [key, value] of held) {
      const size = key.length + value.length;
      if (items.length > 0 && bytes + size > pageBytes) {
        await onPage({ items, bytes, more: true, index });
        items = [];
        bytes = 0;
      }
      items.push(itemOf(key, value));
      bytes += size;
    }
    await onPage({ items, bytes, more: false, index });
  });
}

/** A stored entry as the item it holds (the same decoding the item bucket's reads use). */
export function itemOf(key: Buffer, value: Buffer): Item {
  return { index: decodeItemKey(key).index, ...decodeItemValue(value) };
}

/** The names directly below `path` that lead to a non-empty list, wherever it is held, in UTF-8 byte order. */
export async function childrenOf(fe: FrontEnd, path: string): Promise<{ index: number; children: string[] }> {
  const view = await children(fe.node.stateMachine, path);
  const held = fe.pathGuards.flatMap((g) => g.childrenOf(path));
  if (held.length === 0) return { index: view.index, children: [...view.children] };
  return { index: view.index, children: [...new Set([...view.children, ...held])].sort(compareUtf8) };
}

/** The lists held outside the item bucket at `snapshot`, at or below `prefix` and after `after`, in path order. */
export async function* listsHeldAt(fe: FrontEnd, db: VeraDb, snapshot: DbSnapshot, prefix: string, after: string | undefined): AsyncGenerator<{ readonly path: string; readonly newest: number }> {
  if (fe.pathGuards.length === 1) {
    yield* fe.pathGuards[0]!.listsAt(db, snapshot, prefix, after);
    return;
  }
  const all: Array<{ readonly path: string; readonly newest: number }> = [];
  for (const guard of fe.pathGuards) for await (const l of guard.listsAt(db, snapshot, prefix, after)) all.push(l);
  yield* all.sort((a, b) => compareUtf8(a.path, b.path));
}
