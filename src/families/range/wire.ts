// The range family's client protocol (docs/protocol.md, "Extension: ranges").
import { buildersOf, defineOp, invalid, pathField, uintField, type Item, type RequestBuilder } from '../../protocol/index.js';

/** Paths, or items, one page holds at most; and the default page of items. */
export const MAX_RANGE_PAGE = 1000;
export const DEFAULT_ITEMS_PAGE = 100;

/** The longest sealed cursor (a path of 1024 bytes, sealed and in base64url, with room). */
const MAX_SEALED_CURSOR = 1500;

type Fields = Readonly<Record<string, unknown>>;

function limit(f: Fields, fallback: number): number {
  const v = uintField(f, 'limit') ?? fallback;
  if (v < 1 || v > MAX_RANGE_PAGE) throw invalid(`limit must be 1 to ${MAX_RANGE_PAGE}, got ${v}`);
  return v;
}

function consistency(f: Fields): { consistency?: 'stale' } {
  if (f.consistency === undefined || f.consistency === 'linearizable') return {};
  if (f.consistency === 'stale') return { consistency: 'stale' };
  throw invalid('consistency must be "linearizable" or "stale"');
}

export interface PathsRequest {
  prefix: string;
  /** A path below the prefix, or a sealed cursor (starting with '~') the server opens. */
  after?: string;
  limit: number;
  consistency?: 'stale';
}

export interface ItemsRequest {
  path: string;
  after: number;
  limit: number;
  consistency?: 'stale';
}

export interface ItemsPage {
  readonly index: number;
  readonly items: readonly Item[];
  /** Present when more items follow: ask again with `after` set to it. */
  readonly next?: number;
}

/** The range family's ops, as the client and the server both check them. */
export const RANGE_SCHEMAS = {
  paths: defineOp<PathsRequest, PathsPage>({
    name: 'range.paths',
    read: true,
    fields: ['prefix', 'after', 'limit', 'consistency'],
    parse: (f, limits) => {
      const prefix = pathField({ path: f.prefix }, true, limits);
      let after: string | undefined;
      if (typeof f.after === 'string' && f.after.startsWith('~')) {
        // A sealed cursor (cursor.ts): opened, and judged against the prefix, by the server.
        if (f.after.length > MAX_SEALED_CURSOR) throw invalid(`after: a cursor is at most ${MAX_SEALED_CURSOR} characters`);
        after = f.after;
      } else if (f.after !== undefined) {
        after = pathField({ path: f.after }, false, limits);
        if (!below(prefix, after)) throw invalid(`after must be a path below ${prefix}, got ${after}`);
      }
      return { prefix, ...(after === undefined ? {} : { after }), limit: limit(f, MAX_RANGE_PAGE), ...consistency(f) };
    },
  }),
  items: defineOp<ItemsRequest, ItemsPage>({
    name: 'range.items',
    read: true,
    fields: ['path', 'after', 'limit', 'consistency'],
    parse: (f, limits) => {
      const path = pathField(f, false, limits);
      const after = uintField(f, 'after') ?? 0;
      return { path, after, limit: limit(f, DEFAULT_ITEMS_PAGE), ...consistency(f) };
    },
  }),
};

/** The ops' request builders, by op name (the frame decoder's view of the same schemas). */
export const RANGE_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(RANGE_SCHEMAS));

/** Whether `path` is `prefix` itself or below it (the root covers every path). */
export function below(prefix: string, path: string): boolean {
  return prefix === '/' || path === prefix || path.startsWith(`${prefix}/`);
}

export interface PathsPage {
  /** The applied index the page reflects. */
  readonly index: number;
  /** Non-empty lists at or below the prefix, in path order (UTF-8 bytes), with their newest item's index. */
  readonly paths: ReadonlyArray<{ readonly path: string; readonly newest: number }>;
  /**
   * Present when more paths follow: ask again with `after` set to it. A path, or, when the page
   * stopped on a path the caller may not read, an opaque cursor starting with `~`.
   */
  readonly next?: string;
}
