// Ranges in the client library: the paths below a prefix and a list's items,
// page by page, each page with the applied index it reflects; or every page in
// turn with an async iterator.
import type { VeraClient } from '../../client/client.js';
import { typedCaller, type TypedCall } from '../../client/typed-ops.js';
import type { Item } from '../../protocol/index.js';
import { RANGE_SCHEMAS, type ItemsPage, type PathsPage } from './wire.js';

export type { ItemsPage, PathsPage } from './wire.js';

export interface RangeOptions {
  /** The most paths or items one page holds (1-1000). */
  readonly limit?: number;
  /** Read what the member has applied, without confirming it is current (any member answers). */
  readonly stale?: boolean;
}

export class RangeClient {
  private readonly call: TypedCall<typeof RANGE_SCHEMAS>;

  constructor(client: VeraClient) {
    this.call = typedCaller(client, RANGE_SCHEMAS);
  }

  /** One page of the non-empty lists at or below `prefix` (recursively), after the path `after` (the `next` of the page before). */
  async paths(prefix: string, options: RangeOptions & { readonly after?: string } = {}): Promise<PathsPage> {
    return this.call('paths', { prefix, ...fields(options) });
  }

  /** One page of the items of `path` with an index above `after` (the `next` of the page before; default 0: from the first). */
  async items(path: string, options: RangeOptions & { readonly after?: number } = {}): Promise<ItemsPage> {
    return this.call('items', { path, ...fields(options) });
  }

  /** Every list at or below `prefix`, a page at a time (each page is consistent; pages are read one after another). */
  async *allPaths(prefix: string, options: RangeOptions = {}): AsyncGenerator<{ path: string; newest: number }> {
    let after: string | undefined;
    for (;;) {
      const page = await this.paths(prefix, { ...options, ...(after === undefined ? {} : { after }) });
      yield* page.paths;
      if (page.next === undefined) return;
      after = page.next;
    }
  }

  /** Every item of `path`, a page at a time. */
  async *allItems(path: string, options: RangeOptions = {}): AsyncGenerator<Item> {
    let after = 0;
    for (;;) {
      const page = await this.items(path, { ...options, after });
      yield* page.items;
      if (page.next === undefined) return;
      after = page.next;
    }
  }
}

function fields<After extends string | number>(options: RangeOptions & { readonly after?: After }): { after?: After; limit?: number; consistency?: 'stale' } {
  return {
    ...(options.after === undefined ? {} : { after: options.after }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    ...(options.stale === true ? { consistency: 'stale' as const } : {}),
  };
}
