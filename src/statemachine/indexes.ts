// In-memory indexes over the state-machine buckets, for the questions the
// server asks on every request or event (is this session alive? who watches
// this list? what is the newest index of this list?). Rebuilt from the db on
// open and updated by apply only after the entry's batch is written, so they
// never run ahead of the db.
import {
  Bucket,
  bucketRange,
  decodeClientKey,
  decodeItemKey,
  decodeLagKey,
  decodeWatchKey,
  itemRange,
  watchKey,
  type WatchRef,
} from '../keys/index.js';
import { pathAndAncestors } from '../protocol/index.js';
import { decodeClientValue, decodeLagValue } from './codec.js';
import type { DbSnapshot } from './reads.js';
import { UsageCounts } from './usage.js';
import type { SessionInfo, VeraDb } from './types.js';

/** A plain, sorted copy of every index; equal dumps mean equal indexes. */
export interface IndexDump {
  readonly sessions: Array<[string, SessionInfo]>;
  readonly exactWatchers: Array<[string, string[]]>;
  readonly prefixWatchers: Array<[string, string[]]>;
  readonly newestIndex: Array<[string, number]>;
  readonly lag: Array<[string, number]>;
}

export class MemoryIndexes {
  private readonly sessionInfo = new Map<string, SessionInfo>();
  /** Open sessions per client address, for the sessionsPerAddress quota. */
  private readonly sessionsByAddress = new Map<string, number>();
  /** Lazily counted items per session and per list, for the other quotas. */
  readonly usage = new UsageCounts();
  private readonly exact = new Map<string, Set<string>>();
  private readonly prefix = new Map<string, Set<string>>();
  /** session -> its watches, so closing a session need not scan the watch bucket. */
  private readonly watchesBySession = new Map<string, Map<string, WatchRef>>();
  private readonly newest = new Map<string, number>();
  private readonly lag = new Map<string, number>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<MemoryIndexes> {
    const mem = new MemoryIndexes();
    for await (const [key, value] of db.iterator({ ...bucketRange(Bucket.client), snapshot })) {
      mem.addSession(decodeClientKey(key), decodeClientValue(value));
    }
    for await (const key of db.keys({ ...bucketRange(Bucket.watch), snapshot })) {
      mem.addWatch(decodeWatchKey(key));
    }
    for await (const [key, value] of db.iterator({ ...bucketRange(Bucket.lag), snapshot })) {
      mem.lag.set(decodeLagKey(key), decodeLagValue(value));
    }
    await loadNewest(db, snapshot, mem.newest);
    return mem;
  }

  // ---- watches

  addWatch(ref: WatchRef): void {
    const byPath = ref.prefix ? this.prefix : this.exact;
    getOrCreate(byPath, ref.path, () => new Set<string>()).add(ref.session);
    getOrCreate(this.watchesBySession, ref.session, () => new Map<string, WatchRef>()).set(watchId(ref), ref);
  }

  removeWatch(ref: WatchRef): void {
    const byPath = ref.prefix ? this.prefix : this.exact;
    const sessions = byPath.get(ref.path);
    sessions?.delete(ref.session);
    if (sessions?.size === 0) byPath.delete(ref.path);
    const mine = this.watchesBySession.get(ref.session);
    mine?.delete(watchId(ref));
    if (mine?.size === 0) this.watchesBySession.delete(ref.session);
  }

  hasWatch(ref: WatchRef): boolean {
    return (ref.prefix ? this.prefix : this.exact).get(ref.path)?.has(ref.session) ?? false;
  }

  /** The watches of one session, in key order. */
  watchCount(session: string): number {
    return this.watchesBySession.get(session)?.size ?? 0;
  }

  holdsWatch(ref: WatchRef): boolean {
    return this.watchesBySession.get(ref.session)?.has(watchId(ref)) ?? false;
  }

  watchesOf(session: string): WatchRef[] {
    const refs = [...(this.watchesBySession.get(session)?.values() ?? [])];
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

  // ---- lists

  lastIndexOf(path: string): number {
    return this.newest.get(path) ?? 0;
  }

  /** 0 means the list is now empty. */
  setLastIndex(path: string, index: number): void {
    if (index === 0) this.newest.delete(path);
    else this.newest.set(path, index);
  }

  // ---- sessions

  get sessions(): ReadonlyMap<string, SessionInfo> {
    return this.sessionInfo;
  }

  addSession(session: string, info: SessionInfo): void {
    this.sessionInfo.set(session, info);
    const address = clientAddress(info.remote);
    this.sessionsByAddress.set(address, (this.sessionsByAddress.get(address) ?? 0) + 1);
  }

  sessionsFrom(address: string): number {
    return this.sessionsByAddress.get(address) ?? 0;
  }

  lagOf(session: string): number {
    return this.lag.get(session) ?? 0;
  }

  setLag(session: string, index: number): void {
    this.lag.set(session, index);
  }

  /** Forgets a session, its watches and its lag (its items are handled by the caller). */
  removeSession(session: string): void {
    for (const ref of this.watchesOf(session)) this.removeWatch(ref);
    this.lag.delete(session);
    const info = this.sessionInfo.get(session);
    if (info !== undefined) {
      const address = clientAddress(info.remote);
      const left = (this.sessionsByAddress.get(address) ?? 1) - 1;
      if (left === 0) this.sessionsByAddress.delete(address);
      else this.sessionsByAddress.set(address, left);
    }
    this.sessionInfo.delete(session);
    this.usage.forgetSession(session);
  }

  dump(): IndexDump {
    const sorted = <V>(m: Map<string, V>): Array<[string, V]> =>
      [...m.entries()].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const sets = (m: Map<string, Set<string>>): Array<[string, string[]]> =>
      sorted(m).map(([k, v]) => [k, [...v].sort()]);
    return {
      sessions: sorted(this.sessionInfo).map(([k, v]) => [k, { ...v }]),
      exactWatchers: sets(this.exact),
      prefixWatchers: sets(this.prefix),
      newestIndex: sorted(this.newest),
      lag: sorted(this.lag),
    };
  }
}

/** The host part of a `host:port` remote (IPv6 hosts contain colons; the port follows the last one). */
export function clientAddress(remote: string): string {
  const colon = remote.lastIndexOf(':');
  return colon < 0 ? remote : remote.slice(0, colon);
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

/**
 * Newest index of every non-empty list, reading one key per list: walk the
 * item bucket backwards and, after each list's newest key, seek to just below
 * that list's first possible key (a reverse seek lands on the previous list).
 */
async function loadNewest(db: VeraDb, snapshot: DbSnapshot, into: Map<string, number>): Promise<void> {
  const keys = db.keys({ ...bucketRange(Bucket.item), reverse: true, snapshot });
  try {
    for (let key = await keys.next(); key !== undefined; key = await keys.next()) {
      const { path, index } = decodeItemKey(key);
      into.set(path, index);
      keys.seek(itemRange(path).gte);
    }
  } finally {
    await keys.close();
  }
}
