// A range.paths page with lists held outside the item bucket (hibernated units'
// lists) merged in: path order, the limit and the byte budget kept, and `next`
// where the page really ended, so paging on from it misses and repeats nothing.
import { describe, expect, it } from 'vitest';
import { withListsHeld, type ListedPath, type PageBounds } from '../../../src/families/range/held-lists.js';
import { compareUtf8 } from '../../../src/keys/index.js';

const l = (path: string): ListedPath => ({ path, newest: path.length });
async function* stream(paths: readonly string[]): AsyncGenerator<ListedPath> {
  for (const p of paths) yield l(p);
}
const bounds = (over: Partial<PageBounds> = {}): PageBounds => ({ limit: 1000, maxBytes: 1 << 20, maxExamined: 10_000, overheadBytes: 32, visible: () => true, ...over });

/** Pages through hot and held paths as range.paths does: the hot walk stops at `limit` visible paths. */
async function pageAll(hot: readonly string[], held: readonly string[], b: PageBounds): Promise<string[][]> {
  const pages: string[][] = [];
  let after: string | undefined;
  for (let n = 0; n < 100; n++) {
    const rest = hot.filter((p) => after === undefined || compareUtf8(p, after) > 0);
    const shown = rest.filter(b.visible).slice(0, b.limit);
    const hotNext = rest.filter(b.visible).length > b.limit ? shown[shown.length - 1]! : null;
    const page = await withListsHeld(stream(held.filter((p) => after === undefined || compareUtf8(p, after) > 0)), { paths: shown.map(l), next: hotNext }, b);
    pages.push(page.paths.map((p) => p.path));
    if (page.next === null) return pages;
    after = page.next;
  }
  throw new Error('paging did not end');
}

describe('a range.paths page with held lists merged in', () => {
  const hot = ['/u/a-b', '/u/b', '/u/d', '/u/f'];
  const held = ['/u/a', '/u/a/x', '/u/c', '/u/c/y', '/u/e'];
  const all = [...hot, ...held].sort(compareUtf8);

  it('keeps path order and the limit, and pages on from where each page ended', async () => {
    for (const limit of [1, 2, 3, 4, 1000]) {
      const pages = await pageAll(hot, held, bounds({ limit }));
      expect(pages.flat(), `limit ${limit}`).toEqual(all);
      for (const p of pages) expect(p.length).toBeLessThanOrEqual(limit);
    }
  });

  it('a page whose held lists are all hidden still ends where it looked, not past held lists it never read', async () => {
    const visible = (p: string): boolean => !p.startsWith('/u/a') && p !== '/u/c';
    const pages = await pageAll(hot, held, bounds({ limit: 2, maxExamined: 2, visible }));
    expect(pages.flat()).toEqual(all.filter(visible));
  });

  it('keeps within the byte budget', async () => {
    const pages = await pageAll(hot, held, bounds({ maxBytes: 80 }));
    expect(pages.flat()).toEqual(all);
    for (const p of pages) expect(p.length).toBeLessThanOrEqual(3);
  });

  it('lists a path once, with its held newest, while a frozen unit\'s hot entries are still being deleted (issue 34)', async () => {
    // /u/c and /u/c/y are held (Frozen) and also still in the item bucket, with an older newest.
    const page = await withListsHeld(stream(['/u/c', '/u/c/y']), { paths: [{ path: '/u/b', newest: 1 }, { path: '/u/c', newest: 1 }, { path: '/u/c/y', newest: 2 }, { path: '/u/d', newest: 1 }], next: null }, bounds());
    expect(page.paths).toEqual([{ path: '/u/b', newest: 1 }, l('/u/c'), l('/u/c/y'), { path: '/u/d', newest: 1 }]);
    for (const limit of [1, 2, 3]) {
      const pages = await pageAll([...hot, '/u/c', '/u/c/y'].sort(compareUtf8), held, bounds({ limit }));
      expect(pages.flat(), `limit ${limit}`).toEqual(all);
    }
  });
});
