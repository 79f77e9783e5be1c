// Byte-level key encodings (layout from seed 003, see docs/storage.md): the kernel's
// bucket ids and own keys (properties, Raft log) and the tools families build their
// key layouts with (each family's buckets and layout live in its folder, e.g.
// src/families/lists/keys.ts). Pure functions. Every key starts with a 2-byte big-endian
// bucket prefix, and within a bucket byte order equals logical order, so range
// scans and seeks see entries in the order the code reasons about:
//   - indexes are 8-byte big-endian;
//   - a path or session id is followed by SEP (0x00 0x00). Paths and ids never
//     contain NUL and UTF-8 never emits 0x00 for anything else, so SEP sorts
//     below every byte a path can continue with: all keys of one path are
//     contiguous and come before the keys of any longer path it is a prefix of.

import { validateSessionId } from '../protocol/session-id.js';

export { MAX_SESSION_ID_BYTES, validateSessionId } from '../protocol/session-id.js';

/** The kernel's buckets; every bucket from FIRST_FAMILY_BUCKET on belongs to a family (its keys.ts). */
export const Bucket = {
  property: 0x0000,
  internal: 0x0001,
  log: 0x0002,
} as const;
/** A bucket's 2-byte id (0x0000..0xfffe; bucketPrefix checks the range). */
export type BucketId = number;

/** The first bucket a family may claim: what a replica's digest covers (src/statemachine/applied.ts). */
export const FIRST_FAMILY_BUCKET = 0x0003;

export const MAX_INDEX = Number.MAX_SAFE_INTEGER; // 2^53-1: the largest index a JS number holds exactly

/** Thrown for input that cannot be (or was not) produced by these encoders. */
export class KeyError extends Error {
  override readonly name = 'KeyError';
}

/** The separator after a path or session id inside a key. */
export const SEP: Buffer = Buffer.from([0x00, 0x00]);
// The smallest two bytes above SEP: `X + SEP_END` bounds every key `X + SEP + ...`.
export const SEP_END: Buffer = Buffer.from([0x00, 0x01]);


const INDEX_BYTES = 8;
const TWO_32 = 2 ** 32;
const LONE_SURROGATE = /\p{Cs}/u;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

// ---------------------------------------------------------------- indexes

/** 8-byte big-endian encoding of a Raft index (0..MAX_INDEX). */
export function encodeIndex(index: number): Buffer {
  assertIndex(index);
  const out = Buffer.alloc(INDEX_BYTES);
  const high = Math.floor(index / TWO_32);
  out.writeUInt32BE(high, 0);
  out.writeUInt32BE(index - high * TWO_32, 4);
  return out;
}

/** Reads the 8-byte big-endian index at `offset`. */
export function decodeIndex(bytes: Uint8Array, offset = 0): number {
  if (bytes.length - offset < INDEX_BYTES) throw new KeyError('index needs 8 bytes');
  const view = Buffer.from(bytes.buffer, bytes.byteOffset + offset, INDEX_BYTES);
  const high = view.readUInt32BE(0);
  const index = high * TWO_32 + view.readUInt32BE(4);
  if (index > MAX_INDEX) throw new KeyError(`encoded index exceeds MAX_INDEX (${MAX_INDEX})`);
  return index;
}

function assertIndex(index: number): void {
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > MAX_INDEX) {
    throw new KeyError(`index must be an integer in [0, ${MAX_INDEX}], got ${String(index)}`);
  }
}

// ---------------------------------------------------------------- checks

export function assertSessionId(id: string): void {
  const problem = validateSessionId(id);
  if (problem !== null) throw new KeyError(problem);
}

// Keys need only what keeps the encoding unambiguous and reversible; the full
// protocol rules live in validatePath (./path.ts).
export function assertKeyPath(path: string): void {
  if (typeof path !== 'string' || !path.startsWith('/')) throw new KeyError("path must start with '/'");
  assertKeyText(path, 'path');
}

function assertKeyText(text: string, what: string): void {
  if (text.includes('\u0000')) throw new KeyError(`${what} must not contain NUL`);
  if (LONE_SURROGATE.test(text)) throw new KeyError(`${what} must be valid UTF-8`);
}

// ---------------------------------------------------------------- buckets

/** The 2-byte big-endian prefix of a bucket. */
export function bucketPrefix(bucket: number): Buffer {
  // 0xffff has no finite exclusive upper bound, so it is not a usable bucket.
  if (!Number.isInteger(bucket) || bucket < 0 || bucket >= 0xffff) {
    throw new KeyError(`bucket must be an integer in [0, 0xfffe], got ${String(bucket)}`);
  }
  const out = Buffer.alloc(2);
  out.writeUInt16BE(bucket, 0);
  return out;
}

/** Bounds of every key in one bucket. */
export function bucketRange(bucket: number): { gte: Buffer; lt: Buffer } {
  return { gte: bucketPrefix(bucket), lt: bucketPrefix(bucket + 1) };
}

/** A key of `bucket`: its prefix, then each part (text as UTF-8). */
export function bucketKey(bucket: BucketId, ...parts: (string | Buffer)[]): Buffer {
  return Buffer.concat([bucketPrefix(bucket), ...parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p))]);
}

/** Cursor over a key being decoded; every failure is a KeyError naming the key kind. */
export class KeyReader {
  private at = 2;
  constructor(
    private readonly bytes: Buffer,
    private readonly kind: string,
  ) {}

  static of(raw: Uint8Array, bucket: BucketId, kind: string): KeyReader {
    const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    if (bytes.length < 2 || bytes.readUInt16BE(0) !== bucket) {
      throw new KeyError(`not a ${kind} key (expected bucket 0x${bucket.toString(16).padStart(4, '0')})`);
    }
    return new KeyReader(bytes, kind);
  }

  fail(why: string): never {
    throw new KeyError(`bad ${this.kind} key: ${why}`);
  }

  marker(text: string): void {
    const expected = Buffer.from(text, 'utf8');
    if (!this.bytes.subarray(this.at, this.at + expected.length).equals(expected)) this.fail(`missing '${text}'`);
    this.at += expected.length;
  }

  private text(bytes: Buffer): string {
    try {
      return strictUtf8.decode(bytes);
    } catch {
      return this.fail('not valid UTF-8');
    }
  }

  /** Text up to SEP (which is consumed). Text never contains 0x00, so the first 0x00 starts SEP. */
  textToSep(): string {
    const end = this.bytes.indexOf(0x00, this.at);
    if (end < 0 || this.bytes[end + 1] !== 0x00) this.fail('missing separator');
    const out = this.text(this.bytes.subarray(this.at, end));
    this.at = end + SEP.length;
    return out;
  }

  rest(): string {
    const out = this.text(this.bytes.subarray(this.at));
    this.at = this.bytes.length;
    return out;
  }

  /** A session id the reader has read: checked, since keys hold only valid ones. */
  session(id: string): string {
    const problem = validateSessionId(id);
    if (problem !== null) this.fail(problem);
    return id;
  }

  index(): number {
    const out = decodeIndex(this.bytes, this.at);
    this.at += INDEX_BYTES;
    return out;
  }

  done(): void {
    if (this.at !== this.bytes.length) this.fail('trailing bytes');
  }
}

// ---------------------------------------------------------------- 0x0000 / 0x0001 properties

/** Peer-local property (`currentTerm`, `votedFor`, ...): 0x0000 + utf8(name). */
export function propertyKey(name: string): Buffer {
  assertPropertyName(name);
  return bucketKey(Bucket.property, name);
}

/** Property shared through snapshots (applied index, config, ...): 0x0001 + utf8(name). */
export function internalPropertyKey(name: string): Buffer {
  assertPropertyName(name);
  return bucketKey(Bucket.internal, name);
}

export function decodePropertyKey(raw: Uint8Array): string {
  return decodeProperty(raw, Bucket.property, 'property');
}

export function decodeInternalPropertyKey(raw: Uint8Array): string {
  return decodeProperty(raw, Bucket.internal, 'internal property');
}

function decodeProperty(raw: Uint8Array, bucket: BucketId, kind: string): string {
  const reader = KeyReader.of(raw, bucket, kind);
  const name = reader.rest();
  if (name.length === 0) reader.fail('empty name');
  return name;
}

function assertPropertyName(name: string): void {
  if (typeof name !== 'string' || name.length === 0) throw new KeyError('property name must be a non-empty string');
  if (LONE_SURROGATE.test(name)) throw new KeyError('property name must be valid UTF-8');
}

// ---------------------------------------------------------------- 0x0002 Raft log

/** Raft log entry: 0x0002 + 8-byte big-endian index. */
export function logKey(index: number): Buffer {
  return bucketKey(Bucket.log, encodeIndex(index));
}

export function decodeLogKey(raw: Uint8Array): number {
  const reader = KeyReader.of(raw, Bucket.log, 'log');
  const index = reader.index();
  reader.done();
  return index;
}

// ---------------------------------------------------------------- order

/** UTF-8 byte order of two strings: the order their keys sort in. */
export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A map's entries sorted by key in UTF-8 byte order (for dumps that compare equal when the maps do). */
export function entriesInKeyOrder<V>(map: ReadonlyMap<string, V>): Array<[string, V]> {
  return [...map.entries()].sort(([a], [b]) => compareUtf8(a, b));
}

/** The index of the first key in `sorted` (ascending) that is not below `key`: where `key` is or would go. */
export function firstNotBelow(sorted: readonly Buffer[], key: Buffer): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (Buffer.compare(sorted[mid]!, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
