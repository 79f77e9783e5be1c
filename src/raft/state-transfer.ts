// Moving a whole state machine between nodes (InstallSnapshot) and into backup
// files. Following seed 003, a snapshot is everything from bucket 0x0001 to the
// end of the database, except what belongs to the Raft log itself (the 0x0002
// bucket and the log's own 0x0001 properties) — the peer-local 0x0000 bucket is
// never included. It is read through a LevelDB snapshot, so applying carries on
// while it is being sent.
//
// Wire format of the byte stream: records of [u32 key length][key][u32 value
// length][value], in key order; its sha256 travels with the last chunk.

import { createHash, type Hash } from 'node:crypto';
import { unpack } from 'msgpackr';
import { Bucket, bucketRange } from '../keys/index.js';
import { LAST_LOG_INDEX_KEY, SNAPSHOT_KEY, type LevelBatchOp, type LevelDb } from './leveldb-storage.js';

export const SNAPSHOT_CHUNK_BYTES = 512 * 1024;
/** Received snapshots are staged in memory; a bigger one is refused rather than exhausting it. */
export const MAX_SNAPSHOT_BYTES = 1024 * 1024 * 1024;

const APPLIED_KEY_SUFFIX = Buffer.from('applied', 'utf8');

/** The key ranges a snapshot covers. */
function stateRanges(): Array<{ gte: Buffer; lt?: Buffer }> {
  return [bucketRange(Bucket.internal), { gte: bucketRange(Bucket.item).gte }];
}

function isLogOwned(key: Buffer): boolean {
  return key.equals(SNAPSHOT_KEY) || key.equals(LAST_LOG_INDEX_KEY);
}

export class SnapshotError extends Error {
  override readonly name = 'SnapshotError';
}

/** A consistent view of the state machine, ready to stream. */
export interface CapturedState {
  /** The applied index the captured state reflects. */
  readonly index: number;
  /** The byte stream in chunks of about SNAPSHOT_CHUNK_BYTES (a chunk ends at the first record that reaches it). */
  chunks(): AsyncGenerator<Buffer>;
  release(): Promise<void>;
}

export async function captureState(db: LevelDb): Promise<CapturedState> {
  const snapshot = db.snapshot();
  try {
    const appliedRaw = await db.get(Buffer.concat([bucketRange(Bucket.internal).gte, APPLIED_KEY_SUFFIX]), { snapshot });
    const index = appliedRaw === undefined ? 0 : decodeAppliedIndex(appliedRaw);
    return {
      index,
      async *chunks() {
        let pending: Buffer[] = [];
        let size = 0;
        for (const range of stateRanges()) {
          for await (const [key, value] of db.iterator({ ...range, snapshot })) {
            if (isLogOwned(key)) continue;
            const record = encodeRecord(key, value);
            pending.push(record);
            size += record.length;
            if (size >= SNAPSHOT_CHUNK_BYTES) {
              yield Buffer.concat(pending);
              pending = [];
              size = 0;
            }
          }
        }
        if (size > 0) yield Buffer.concat(pending);
      },
      release: () => snapshot.close(),
    };
  } catch (err) {
    await snapshot.close();
    throw err;
  }
}

/** The state machine stores its applied index as a MessagePack integer. */
function decodeAppliedIndex(raw: Buffer): number {
  const value: unknown = unpack(raw);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new SnapshotError('applied index in the snapshot is not a non-negative integer');
  return value;
}

function encodeRecord(key: Buffer, value: Buffer): Buffer {
  const out = Buffer.allocUnsafe(8 + key.length + value.length);
  out.writeUInt32BE(key.length, 0);
  key.copy(out, 4);
  out.writeUInt32BE(value.length, 4 + key.length);
  value.copy(out, 8 + key.length);
  return out;
}

/** Parses a whole verified stream into its records. */
export function decodeRecords(data: Buffer): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  let at = 0;
  while (at < data.length) {
    if (at + 4 > data.length) throw new SnapshotError('snapshot stream ends inside a record header');
    const keyLen = data.readUInt32BE(at);
    const key = data.subarray(at + 4, at + 4 + keyLen);
    at += 4 + keyLen;
    if (at + 4 > data.length) throw new SnapshotError('snapshot stream ends inside a record');
    const valueLen = data.readUInt32BE(at);
    if (at + 4 + valueLen > data.length) throw new SnapshotError('snapshot stream ends inside a value');
    const value = data.subarray(at + 4, at + 4 + valueLen);
    at += 4 + valueLen;
    if (key.length < 2 || isLogOwned(key) || key.readUInt16BE(0) === Bucket.property || key.readUInt16BE(0) === Bucket.log) {
      throw new SnapshotError(`snapshot carries a key it must not: ${key.toString('hex').slice(0, 40)}`);
    }
    out.push([Buffer.from(key), Buffer.from(value)]);
  }
  return out;
}

/**
 * The batch that replaces this node's state machine by a verified stream: every
 * current state key deleted, every record put (LevelDB applies a batch in order).
 */
export async function replaceStateOps(db: LevelDb, data: Buffer): Promise<LevelBatchOp[]> {
  const records = decodeRecords(data);
  const ops: LevelBatchOp[] = [];
  for (const range of stateRanges()) {
    for await (const key of db.keys({ ...range })) {
      if (!isLogOwned(key)) ops.push({ type: 'del', key });
    }
  }
  for (const [key, value] of records) ops.push({ type: 'put', key, value });
  return ops;
}

/** The applied index a verified stream carries (the state machine's 'applied' property). */
export function appliedIndexOf(data: Buffer): number {
  const appliedKey = Buffer.concat([bucketRange(Bucket.internal).gte, APPLIED_KEY_SUFFIX]);
  for (const [key, value] of decodeRecords(data)) if (key.equals(appliedKey)) return decodeAppliedIndex(value);
  return 0;
}

/**
 * Receiver side: assembles one transfer's chunks in order, in memory (the staging
 * area), and hands out the whole stream only when complete and its checksum matches.
 * A chunk out of order, or a new transfer, discards what was staged.
 */
export class SnapshotAssembler {
  private staged: { key: string; parts: Buffer[]; size: number; hash: Hash } | null = null;

  /** Returns the verified stream when `chunk` completes a transfer; null otherwise. */
  accept(transfer: string, offset: number, chunk: Uint8Array, done: boolean, checksum: string): Buffer | null {
    if (offset === 0 || this.staged?.key !== transfer) this.staged = { key: transfer, parts: [], size: 0, hash: createHash('sha256') };
    const staged = this.staged;
    if (offset !== staged.size) {
      this.staged = null; // a chunk was lost: the sender will start over
      return null;
    }
    if (staged.size + chunk.byteLength > MAX_SNAPSHOT_BYTES) {
      this.staged = null;
      throw new SnapshotError(`snapshot larger than ${MAX_SNAPSHOT_BYTES} bytes refused`);
    }
    const part = Buffer.from(chunk);
    staged.parts.push(part);
    staged.size += part.length;
    staged.hash.update(part);
    if (!done) return null;
    this.staged = null;
    const digest = staged.hash.digest('hex');
    if (digest !== checksum) throw new SnapshotError(`snapshot checksum mismatch: got ${digest}, expected ${checksum}`);
    return Buffer.concat(staged.parts);
  }
}
