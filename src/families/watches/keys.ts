// The watches family's key layout: 0x0006 exact and prefix watches (see docs/storage.md).
import { assertKeyPath, assertSessionId, bucketKey, KeyReader, SEP, SEP_END } from '../../keys/index.js';

/** The family's buckets (seed 003's numbers, docs/storage.md): the 2-byte prefix of each of its keys. */
export const WatchesBucket = {
  /** exact and prefix watches: path, session -> empty. */
  watch: 0x0006,
} as const;

/** A watch key's value: the key's presence is the whole fact. */
export const WATCH_VALUE: Buffer = Buffer.alloc(0);

const EXACT_WATCH = '/watch';
// Prefix watches share bucket 0x0006 under their own marker; '/pwatch' sorts
// before '/watch', so the two kinds occupy disjoint ranges of the bucket.
const PREFIX_WATCH = '/pwatch';

// ---------------------------------------------------------------- 0x0006 watches

export interface WatchRef {
  /** true: the session watches every list at or below `path`; false: exactly the list at `path`. */
  readonly prefix: boolean;
  readonly path: string;
  readonly session: string;
}

/**
 * Exact watch: 0x0006 + '/watch' + path + SEP + id.
 * Prefix watch: 0x0006 + '/pwatch' + path + SEP + id (path may be '/').
 */
export function watchKey(ref: WatchRef): Buffer {
  assertKeyPath(ref.path);
  assertSessionId(ref.session);
  return bucketKey(WatchesBucket.watch, ref.prefix ? PREFIX_WATCH : EXACT_WATCH, ref.path, SEP, ref.session);
}

export function decodeWatchKey(raw: Uint8Array): WatchRef {
  const reader = KeyReader.of(raw, WatchesBucket.watch, 'watch');
  // Both markers start with '/'; the second byte tells them apart.
  const prefix = raw[3] === 0x70; // 'p'
  reader.marker(prefix ? PREFIX_WATCH : EXACT_WATCH);
  const path = reader.textToSep();
  if (!path.startsWith('/')) reader.fail("path does not start with '/'");
  const session = reader.session(reader.rest());
  return { prefix, path, session };
}

/** Every watcher of one path of one kind (exact or prefix), ordered by session id. */
export function watchRange(path: string, prefix: boolean): { gte: Buffer; lt: Buffer } {
  assertKeyPath(path);
  const marker = prefix ? PREFIX_WATCH : EXACT_WATCH;
  return { gte: bucketKey(WatchesBucket.watch, marker, path, SEP), lt: bucketKey(WatchesBucket.watch, marker, path, SEP_END) };
}
