// The watches family's in-memory index: who watches each path, exactly or as a
// prefix, and each session's watches (so ending a session need not scan the
// watch bucket). Rebuilt from the watch bucket at load; changed only by plans'
// after-steps, once their batch is written.
import { bucketRange, entriesInKeyOrder } from '../../keys/index.js';
import { WatchesBucket, decodeWatchKey, watchKey, type WatchRef } from './keys.js';
import { pathAndAncestors } from '../../protocol/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';

export class WatchesState {
  private readonly exact = new Map<string, Set<string>>();
  private readonly prefix = new Map<string, Set<string>>();
  private readonly bySession = new Map<string, Map<string, WatchRef>>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<WatchesState> {
    const state = new WatchesState();
    for await (const key of db.keys({ ...bucketRange(WatchesBucket.watch), snapshot })) state.add(decodeWatchKey(key));
    return state;
  }

  add(ref: WatchRef): void {
    const byPath = ref.prefix ? this.prefix : this.exact;
    getOrCreate(byPath, ref.path, () => new Set<string>()).add(ref.session);
    getOrCreate(this.bySession, ref.session, () => new Map<string, WatchRef>()).set(watchId(ref), ref);
  }

  remove(ref: WatchRef): void {
    const byPath = ref.prefix ? this.prefix : this.exact;
    const sessions = byPath.get(ref.path);
    sessions?.delete(ref.session);
    if (sessions?.size === 0) byPath.delete(ref.path);
    const mine = this.bySession.get(ref.session);
    mine?.delete(watchId(ref));
    if (mine?.size === 0) this.bySession.delete(ref.session);
  }

  /** How many watches one session holds. */
  count(session: string): number {
    return this.bySession.get(session)?.size ?? 0;
  }

  holds(ref: WatchRef): boolean {
    return this.bySession.get(ref.session)?.has(watchId(ref)) ?? false;
  }

  /** The watches of one session, in key order. */
  of(session: string): WatchRef[] {
    const refs = [...(this.bySession.get(session)?.values() ?? [])];
    return refs
      .map((ref) => ({ ref, key: watchKey(ref) }))
      .sort((a, b) => Buffer.compare(a.key, b.key))
      .map(({ ref }) => ref);
  }

  /** Exact watchers of `path` plus prefix watchers of it and of every ancestor up to '/'. */
  watchersOf(path: string): Set<string> {
    const out = new Set(this.exact.get(path) ?? []);
    for (const p of pathAndAncestors(path)) for (const s of this.prefix.get(p) ?? []) out.add(s);
    return out;
  }

  /** Sorted copies, for tests and diagnostics. */
  dump(): { exactWatchers: Array<[string, string[]]>; prefixWatchers: Array<[string, string[]]> } {
    const sets = (m: Map<string, Set<string>>): Array<[string, string[]]> =>
      entriesInKeyOrder(m).map(([k, v]) => [k, [...v].sort()]);
    return { exactWatchers: sets(this.exact), prefixWatchers: sets(this.prefix) };
  }
}

function watchId(ref: WatchRef): string {
  return (ref.prefix ? 'p' : 'e') + ref.path;
}

function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}
