// A range.paths page with the lists held outside the item bucket (hibernated
// units' lists, which the path guards list from what stays hot of them) merged
// in path order. The walk of the item bucket has covered every hot path up to
// its `next`; the held lists up to the same point are merged in, and the page is
// cut again at the limit, so the next page starts where this one really ended.
import { compareUtf8 } from '../../keys/index.js';

export interface ListedPath {
  readonly path: string;
  readonly newest: number;
}

export interface PageBounds {
  readonly limit: number;
  readonly maxBytes: number;
  /** Held lists looked at, at most, visible or not. */
  readonly maxExamined: number;
  /** What a path's entry costs besides the path itself. */
  readonly overheadBytes: number;
  readonly visible: (path: string) => boolean;
}

/** `hot`: the item bucket's page (`next`: the last path it looked at, null when it reached the end). */
export async function withListsHeld(held: AsyncIterable<ListedPath>, hot: { readonly paths: readonly ListedPath[]; readonly next: string | null }, bounds: PageBounds): Promise<{ paths: ListedPath[]; next: string | null }> {
  let covered = hot.next;
  const found: ListedPath[] = [];
  let examined = 0;
  for await (const list of held) {
    if (covered !== null && compareUtf8(list.path, covered) > 0) break;
    examined++;
    if (bounds.visible(list.path)) found.push({ path: list.path, newest: list.newest });
    // Enough for a page, or looked at enough: the page ends here, for held and hot paths alike.
    if (found.length >= bounds.limit || examined >= bounds.maxExamined) {
      covered = list.path;
      break;
    }
  }
  if (found.length === 0 && covered === hot.next) return { paths: [...hot.paths], next: hot.next };
  const upTo = covered;
  // A held list wins over the same path in the item bucket: there, it is what a freeze has not yet deleted of it.
  const heldPaths = new Set(found.map((p) => p.path));
  const merged = [...hot.paths.filter((p) => (upTo === null || compareUtf8(p.path, upTo) <= 0) && !heldPaths.has(p.path)), ...found].sort((a, b) => compareUtf8(a.path, b.path));
  const paths: ListedPath[] = [];
  let bytes = 0;
  for (const p of merged) {
    if (paths.length > 0 && (paths.length >= bounds.limit || bytes >= bounds.maxBytes)) return { paths, next: paths[paths.length - 1]!.path };
    paths.push(p);
    bytes += Buffer.byteLength(p.path) + bounds.overheadBytes;
  }
  return { paths, next: covered };
}
