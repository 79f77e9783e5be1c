// The journal family's LevelDB layout (docs/storage.md, "Journal buckets").
// Every key starts with its bucket's 2-byte prefix and the journal's name
// (1 length byte, then its bytes: names are at most 64 ASCII bytes), so one
// journal's keys are contiguous in every bucket and dropping it is a range.
// Dates and indexes are 8-byte big-endian, so byte order is time order.
import * as crypto from 'node:crypto';
import { bucketPrefix, encodeIndex } from '../../keys/index.js';

export const JournalBucket = {
  /** name -> the journal's settings and counts. */
  definition: 0x0009,
  /** name, hash128(key), key -> the item (the seed's key index; the key after the hash keeps colliding keys apart). */
  item: 0x000a,
  /** name, priority, process date, key -> empty: the Waiting items in claim order (the seed's primary key). */
  waiting: 0x000b,
  /** name, start-processing date, key -> empty: the Processing items by when their claim started (timeouts). */
  processing: 0x000c,
  /** name, expiration date, key -> empty: items that expire (the seed's expiration index). */
  expiry: 0x000d,
  /** name, key -> a flagged item (dead letter) with its history. */
  flagged: 0x000e,
  /** One key (the bucket's prefix alone) -> the cluster-wide journal limits. */
  limits: 0x000f,
  /** name, key -> a result given with done, kept for a while (command version 9). */
  result: 0x0030,
  /** name, keptUntil, key -> empty: kept results by when they go. */
  resultExpiry: 0x0031,
  /** name, schedule id -> a schedule (repeatable jobs, command version 9). */
  schedule: 0x0032,
} as const;

/** Where the cluster-wide journal limits are kept. */
export function limitsKey(): Buffer {
  return bucketPrefix(JournalBucket.limits);
}

export const KEY_HASH_BYTES = 16;

function nameBytes(name: string): Buffer {
  const bytes = Buffer.from(name, 'ascii');
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

/** Heads (bucket prefix and name) built lately: every item key of a busy journal starts with one of a few. */
const heads = new Map<string, Buffer>();
const MAX_HEADS = 4096;

/** The bucket's prefix and the journal's name: where every key of `name` in `bucket` starts. Callers must not write to it. */
function head(bucket: number, name: string): Buffer {
  const id = `${bucket}:${name}`;
  let h = heads.get(id);
  if (h === undefined) {
    if (heads.size >= MAX_HEADS) heads.clear();
    h = Buffer.concat([bucketPrefix(bucket), nameBytes(name)]);
    heads.set(id, h);
  }
  return h;
}

/** Every key of `name` in `bucket`. */
export function journalRange(bucket: number, name: string): { gte: Buffer; lt: Buffer } {
  const start = head(bucket, name);
  return { gte: start, lt: Buffer.concat([start, Buffer.alloc(KEY_HASH_BYTES + 9, 0xff)]) };
}

/** A fixed-length hash of an item key (sha256's first 128 bits; the seed suggests a 128-bit hash). */
export function keyHash(key: string): Buffer {
  return sha256(key).subarray(0, KEY_HASH_BYTES);
}

// crypto.hash (Node 20.12+) hashes in one call, without a Hash object: the same bytes, in half the time.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;
const sha256 = (text: string): Buffer => (oneShot !== undefined ? oneShot('sha256', text, 'buffer') : crypto.createHash('sha256').update(text, 'utf8').digest());

export function definitionKey(name: string): Buffer {
  return head(JournalBucket.definition, name);
}

export function itemKey(name: string, key: string): Buffer {
  const h = head(JournalBucket.item, name);
  const out = Buffer.allocUnsafe(h.length + KEY_HASH_BYTES + Buffer.byteLength(key, 'utf8'));
  h.copy(out, 0);
  keyHash(key).copy(out, h.length);
  out.write(key, h.length + KEY_HASH_BYTES, 'utf8');
  return out;
}

export function waitingKey(name: string, priority: number, processAt: number, key: string): Buffer {
  const h = head(JournalBucket.waiting, name);
  const out = Buffer.allocUnsafe(h.length + 1 + 8 + Buffer.byteLength(key, 'utf8'));
  h.copy(out, 0);
  out[h.length] = priority;
  writeDate(out, h.length + 1, processAt);
  out.write(key, h.length + 9, 'utf8');
  return out;
}

/** The Waiting items of one priority, due by `now` (process date <= now). */
export function dueRange(name: string, priority: number, now: number): { gte: Buffer; lt: Buffer } {
  const start = Buffer.concat([head(JournalBucket.waiting, name), Buffer.from([priority])]);
  return { gte: start, lt: Buffer.concat([start, encodeIndex(now + 1)]) };
}

/** The Waiting items of one priority, whenever due. */
export function priorityRange(name: string, priority: number): { gte: Buffer; lt: Buffer } {
  const start = Buffer.concat([head(JournalBucket.waiting, name), Buffer.from([priority])]);
  return { gte: start, lt: Buffer.concat([start, Buffer.alloc(9, 0xff)]) };
}

export function processingKey(name: string, startedAt: number, key: string): Buffer {
  return datedKey(head(JournalBucket.processing, name), startedAt, key);
}

/** Processing items whose claim started at or before `startedBy`. */
export function startedByRange(name: string, startedBy: number): { gte: Buffer; lt: Buffer } {
  const start = head(JournalBucket.processing, name);
  return { gte: start, lt: Buffer.concat([start, encodeIndex(startedBy + 1)]) };
}

/** Processing items whose claim started at or after `from`, in start order. */
export function startedFromRange(name: string, from: number): { gte: Buffer; lt: Buffer } {
  const start = head(JournalBucket.processing, name);
  // Past every real date (dates stay below 2^48), so past every key of this journal's index.
  return { gte: Buffer.concat([start, encodeIndex(from)]), lt: Buffer.concat([start, Buffer.alloc(8, 0xff)]) };
}

export function expiryKey(name: string, expiresAt: number, key: string): Buffer {
  return datedKey(head(JournalBucket.expiry, name), expiresAt, key);
}

/** Items that expire at or before `now`. */
export function expiredRange(name: string, now: number): { gte: Buffer; lt: Buffer } {
  const start = head(JournalBucket.expiry, name);
  return { gte: start, lt: Buffer.concat([start, encodeIndex(now + 1)]) };
}

export function flaggedRange(name: string): { gte: Buffer; lt: Buffer } {
  return journalRange(JournalBucket.flagged, name);
}

export function flaggedKey(name: string, key: string): Buffer {
  return Buffer.concat([head(JournalBucket.flagged, name), Buffer.from(key, 'utf8')]);
}

// Keys written for every job are built in one allocation each (Buffer.concat of
// their parts made three or four buffers per key, a share of every member's GC).

/** `head`, an 8-byte big-endian date, then the item key. */
function datedKey(h: Buffer, date: number, key: string): Buffer {
  const out = Buffer.allocUnsafe(h.length + 8 + Buffer.byteLength(key, 'utf8'));
  h.copy(out, 0);
  writeDate(out, h.length, date);
  out.write(key, h.length + 8, 'utf8');
  return out;
}

/** An 8-byte big-endian date (what encodeIndex writes), in place. */
function writeDate(out: Buffer, at: number, date: number): void {
  if (!Number.isSafeInteger(date) || date < 0) throw new RangeError(`a journal date must be a safe integer >= 0, got ${date}`);
  const high = Math.floor(date / 2 ** 32);
  out.writeUInt32BE(high, at);
  out.writeUInt32BE(date - high * 2 ** 32, at + 4);
}

/** The process date in a Waiting index key of `name`. */
export function processAtIn(waitingIndexKey: Buffer, name: string): number {
  const at = 2 + 1 + Buffer.byteLength(name, 'ascii') + 1;
  return waitingIndexKey.readUInt32BE(at) * 2 ** 32 + waitingIndexKey.readUInt32BE(at + 4);
}

/** The item key at the end of a waiting/processing/expiry index key of `name`. */
export function keyAfterDate(indexKey: Buffer, name: string, extra: number): string {
  return indexKey.subarray(2 + 1 + Buffer.byteLength(name, 'ascii') + extra + 8).toString('utf8');
}

/** The date in a processing or expiry index key of `name`. */
export function dateIn(indexKey: Buffer, name: string): number {
  const at = 2 + 1 + Buffer.byteLength(name, 'ascii');
  return indexKey.readUInt32BE(at) * 2 ** 32 + indexKey.readUInt32BE(at + 4);
}

export function resultKey(name: string, key: string): Buffer {
  return Buffer.concat([head(JournalBucket.result, name), Buffer.from(key, 'utf8')]);
}

export function scheduleKey(name: string, id: string): Buffer {
  return Buffer.concat([head(JournalBucket.schedule, name), Buffer.from(id, 'ascii')]);
}

export function resultExpiryKey(name: string, keptUntil: number, key: string): Buffer {
  return datedKey(head(JournalBucket.resultExpiry, name), keptUntil, key);
}

/** Kept results that go at or before `now` (every one kept, with MAX_DATE). */
export function resultsGoneRange(name: string, now: number): { gte: Buffer; lt: Buffer } {
  const start = head(JournalBucket.resultExpiry, name);
  return { gte: start, lt: Buffer.concat([start, encodeIndex(now + 1)]) };
}

/** The bytes of `key` after the journal's head in `bucket` (a page cursor), and back. */
export function afterHead(bucket: number, name: string, key: Buffer): Buffer {
  return key.subarray(head(bucket, name).length);
}

export function withHead(bucket: number, name: string, rest: Buffer): Buffer {
  return Buffer.concat([head(bucket, name), rest]);
}
