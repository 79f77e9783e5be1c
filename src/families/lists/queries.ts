// The lists family's queries, read from one snapshot of the store with the
// applied index they reflect (once methods of the StateMachine, which now only applies).
import type { StateReader } from '../../statemachine/family.js';
import type { Item } from './item.js';
import { checkPath } from '../query-checks.js';
import * as reads from './reads.js';
import { lists } from './index.js';

/** A list as of an applied index. */
export interface ListView {
  readonly index: number;
  readonly items: readonly Item[];
}

export interface ChildrenView {
  readonly index: number;
  readonly children: readonly string[];
}

/** One list and the applied index its items reflect exactly. */
export async function getList(sm: StateReader, path: string): Promise<ListView> {
  checkPath(path, false);
  return sm.read('the state', async (db, snapshot, index) => ({ index, items: await reads.readList(db, path, snapshot) }));
}

/** One list and the applied index it reflects, or null when its items pass `maxBytes` (read no further). */
export async function readListWithin(sm: StateReader, path: string, maxBytes: number): Promise<ListView | null> {
  checkPath(path, false);
  return sm.read(`the list ${path}`, async (db, snapshot, index) => {
    const items = await reads.readListWithin(db, path, maxBytes, snapshot);
    return items === null ? null : { index, items };
  });
}

/**
 * One list read from one snapshot, in pages of at most `pageBytes` stored bytes,
 * each tagged with the applied index the whole read reflects. The next page is
 * read only once `onPage` settles (backpressure); throwing from it stops the read.
 */
export async function readListPages(sm: StateReader, path: string, pageBytes: number, onPage: (page: reads.ItemPage & { readonly index: number }) => Promise<void> | void): Promise<void> {
  checkPath(path, false);
  await sm.read(`the list ${path}`, (db, snapshot, index) => reads.readListPages(db, path, snapshot, pageBytes, (page) => onPage({ ...page, index })));
}

/** Sorted (UTF-8 byte order) names directly below `path` that lead to a non-empty list. */
export async function children(sm: StateReader, path: string): Promise<ChildrenView> {
  checkPath(path, true);
  return sm.read('the state', async (db, snapshot, index) => ({ index, children: await reads.listChildren(db, path, snapshot) }));
}

/** One step of a walk over a path's children (see childrenStep in reads.ts). */
export async function childrenStep(sm: StateReader, path: string, from: Buffer | null, limit: number): Promise<reads.ChildrenStep> {
  checkPath(path, true);
  return sm.read('the state', (db, snapshot) => reads.childrenStep(db, path, snapshot, from, limit));
}

/** Newest item index of a list (0 when empty); what `ifLastIndex` is compared with. */
export function lastIndexOf(sm: StateReader, path: string): number {
  checkPath(path, false);
  return sm.stateOf(lists).lastIndexOf(path);
}
