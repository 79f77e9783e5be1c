// Moving a whole state machine between nodes (InstallSnapshot) and into backup
// files. Following seed 003, a snapshot is everything in the database except
// what belongs to Raft itself: the peer-local 0x0000 bucket, the 0x0002 log
// bucket and the log's own 0x0001 properties. Which keys the store keeps beside
// those, and how it encodes its applied index, is the store's business: it
// supplies the applied index's key and decoder (AppliedIndexField). A state is
// read through a LevelDB snapshot, so applying carries on
// while it is being sent.
//
// Wire format of the byte stream: records of [u32 key length][key][u32 value
// length][value], in key order; its sha256 travels with the last chunk.

import { createHash, randomBytes, type Hash } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Bucket, bucketRange } from '../keys/index.js';
import { LAST_LOG_INDEX_KEY, SNAPSHOT_KEY, type LevelBatchOp, type LevelDb } from './leveldb-storage.js';

export const SNAPSHOT_CHUNK_BYTES = 512 * 1024;
/** In-memory staging (simulator and tests only) refuses a bigger snapshot rather than exhausting memory. */
export const MAX_MEMORY_STAGED_BYTES = 256 * 1024 * 1024;

/** Where the store keeps the applied index a state reflects, and how it reads it. */
export interface AppliedIndexField {
  /** A key of the state (it sorts within the first range of stateRanges). */
  readonly key: Buffer;
  /** Throws on bytes that are not an applied index. */
  decode(raw: Uint8Array): number;
}

/** The key ranges a snapshot covers: everything but the peer-local bucket and the log bucket. */
function stateRanges(): Array<{ gte: Buffer; lt?: Buffer }> {
  return [bucketRange(Bucket.internal), { gte: bucketRange(Bucket.log).lt }];
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

/**
 * State the store keeps beside the db (hibernation's cold files), as records that sort
 * after every key of the db's state; read at the same snapshot. Installing a stream
 * writes them into the db like any record, and the store turns them back into files.
 */
export type StateExtras = (snapshot: ReturnType<LevelDb['snapshot']>) => AsyncIterable<readonly [Buffer, Buffer]>;

export async function captureState(db: LevelDb, applied: AppliedIndexField, extras?: StateExtras): Promise<CapturedState> {
  const snapshot = db.snapshot();
  try {
    const appliedRaw = await db.get(applied.key, { snapshot });
    const index = appliedRaw === undefined ? 0 : decodeAppliedIndex(applied, appliedRaw);
    return {
      index,
      async *chunks() {
        let pending: Buffer[] = [];
        let size = 0;
        const all = async function* (): AsyncGenerator<readonly [Buffer, Buffer]> {
          for (const range of stateRanges()) {
            for await (const [key, value] of db.iterator({ ...range, snapshot })) if (!isLogOwned(key)) yield [key, value];
          }
          if (extras !== undefined) yield* extras(snapshot);
        };
        for await (const [key, value] of all()) {
          const record = encodeRecord(key, value);
          pending.push(record);
          size += record.length;
          if (size >= SNAPSHOT_CHUNK_BYTES) {
            yield Buffer.concat(pending);
            pending = [];
            size = 0;
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

function decodeAppliedIndex(applied: AppliedIndexField, raw: Uint8Array): number {
  try {
    return applied.decode(raw);
  } catch (err) {
    throw new SnapshotError(`the applied index in the snapshot is not one: ${(err as Error).message}`, { cause: err });
  }
}

function encodeRecord(key: Buffer, value: Buffer): Buffer {
  const out = Buffer.allocUnsafe(8 + key.length + value.length);
  out.writeUInt32BE(key.length, 0);
  key.copy(out, 4);
  out.writeUInt32BE(value.length, 4 + key.length);
  value.copy(out, 8 + key.length);
  return out;
}

/** Refuses a record a snapshot must never carry: the receiver's own log and peer-local keys. */
function checkRecordKey(key: Buffer): void {
  if (key.length < 2 || isLogOwned(key) || key.readUInt16BE(0) === Bucket.property || key.readUInt16BE(0) === Bucket.log) {
    throw new SnapshotError(`snapshot carries a key it must not: ${key.toString('hex').slice(0, 40)}`);
  }
}

/**
 * Parses a stream of records as it arrives, holding at most one partial record
 * between chunks, so a snapshot of any size is read in bounded memory.
 */
export async function* readRecords(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<[Buffer, Buffer]> {
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of chunks) {
    const data = carry.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([carry, chunk]);
    let at = 0;
    for (;;) {
      if (at + 4 > data.length) break;
      const keyLen = data.readUInt32BE(at);
      if (at + 8 + keyLen > data.length) break;
      const valueLen = data.readUInt32BE(at + 4 + keyLen);
      const end = at + 8 + keyLen + valueLen;
      if (end > data.length) break;
      const key = data.subarray(at + 4, at + 4 + keyLen);
      checkRecordKey(key);
      yield [key, data.subarray(at + 8 + keyLen, end)];
      at = end;
    }
    // Copied: the chunk it came from may be reused by its producer.
    carry = Buffer.from(data.subarray(at));
  }
  if (carry.length > 0) {
    throw new SnapshotError(carry.length < 4 ? 'snapshot stream ends inside a record header' : 'snapshot stream ends inside a record');
  }
}

/** A stream held in memory, as one chunk. */
export async function* bufferChunks(data: Uint8Array): AsyncGenerator<Uint8Array> {
  if (data.byteLength > 0) yield data;
}

/** A stream staged in a file, read in bounded chunks. */
export async function* fileChunks(path: string, start = 0, end?: number): AsyncGenerator<Buffer> {
  if (end !== undefined && end <= start) return;
  const stream = createReadStream(path, { start, end: end === undefined ? undefined : end - 1, highWaterMark: READ_CHUNK_BYTES });
  for await (const chunk of stream) yield chunk as Buffer;
}

const READ_CHUNK_BYTES = 1024 * 1024;

/** LevelDB batches of a state replacement stay under this many bytes (a value is at most about 1 MiB). */
export const STATE_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Replaces this node's state machine by a stream of records, in bounded batches:
 * the internal properties the state machine owns are deleted, every bucket after
 * the log's is cleared, then the records are written. Not atomic: the caller
 * makes a crash in the middle recoverable (snapshot-install.ts) or throws the
 * store away (a restore builds it in a temporary directory). Returns the record count.
 */
export async function replaceState(db: LevelDb, records: AsyncIterable<[Buffer, Buffer]>): Promise<number> {
  const stale: LevelBatchOp[] = [];
  for await (const key of db.keys(bucketRange(Bucket.internal))) if (!isLogOwned(key)) stale.push({ type: 'del', key });
  if (stale.length > 0) await db.batch(stale);
  await db.clear({ gte: bucketRange(Bucket.log).lt });
  let batch: LevelBatchOp[] = [];
  let bytes = 0;
  let count = 0;
  for await (const [key, value] of records) {
    batch.push({ type: 'put', key, value });
    bytes += key.length + value.length;
    count++;
    if (bytes >= STATE_BATCH_BYTES) {
      await db.batch(batch);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) await db.batch(batch);
  return count;
}

/**
 * The applied index a stream carries. Records come in key order, so this stops
 * at the first key past the applied index's: it reads only the stream's first records.
 */
export async function appliedIndexIn(records: AsyncIterable<[Buffer, Buffer]>, applied: AppliedIndexField): Promise<number> {
  for await (const [key, value] of records) {
    const order = Buffer.compare(key, applied.key);
    if (order === 0) return decodeAppliedIndex(applied, value);
    if (order > 0) break;
  }
  return 0;
}

// ---------------------------------------------------------------- receiving

/** Where one incoming transfer's bytes wait until it is complete. */
export interface StagingWriter<T> {
  write(part: Uint8Array): void;
  /** The transfer is complete and hashes to `sha256`. */
  finish(sha256: string, bytes: number): T;
  /** The transfer was abandoned: forget what it wrote. */
  discard(): void;
}

/** Opens the staging of a new transfer. */
export type Staging<T> = () => StagingWriter<T>;

/**
 * Staging in memory, bounded by MAX_MEMORY_STAGED_BYTES: for the simulator and
 * tests, whose snapshots are small. Real members stage to disk (fileStaging).
 */
export const memoryStaging: Staging<Buffer> = () => {
  const parts: Buffer[] = [];
  let size = 0;
  return {
    write(part) {
      if (size + part.byteLength > MAX_MEMORY_STAGED_BYTES) throw new SnapshotError(`snapshot larger than ${MAX_MEMORY_STAGED_BYTES} bytes refused by in-memory staging`);
      parts.push(Buffer.from(part));
      size += part.byteLength;
    },
    finish: () => Buffer.concat(parts),
    discard: () => undefined,
  };
};

/** A complete, verified transfer staged in a file. */
export interface StagedFile {
  readonly path: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** Name prefix of staged transfers in the staging directory; leftovers are removed at start. */
export const INCOMING_PREFIX = 'incoming-';

/**
 * Staging in files under `dir` (the data directory's snapshots/), so receiving a
 * snapshot holds one chunk in memory whatever the snapshot's size; its only bound
 * is the disk (a failed write, e.g. ENOSPC, abandons the transfer and the leader
 * retries later). Writes are synchronous so chunks stay in order without a queue;
 * the file is synced once, before an install depends on it (snapshot-install.ts).
 */
export function fileStaging(dir: string): Staging<StagedFile> {
  return () => {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${INCOMING_PREFIX}${randomBytes(8).toString('hex')}`);
    const fd = openSync(path, 'wx');
    let open = true;
    const close = (): void => {
      if (!open) return;
      open = false;
      closeSync(fd);
    };
    return {
      write(part) {
        let at = 0;
        while (at < part.byteLength) at += writeSync(fd, part, at, part.byteLength - at);
      },
      finish(sha256, bytes) {
        close();
        return { path, bytes, sha256 };
      },
      discard() {
        close();
        rmSync(path, { force: true });
      },
    };
  };
}

/**
 * Receiver side: stages one transfer's chunks in order and hands out the staged
 * stream only when complete and its checksum matches. A chunk out of order, or a
 * new transfer, discards what was staged. Without an argument it stages in memory.
 */
export class SnapshotAssembler<T = Buffer> {
  private staged: { key: string; writer: StagingWriter<T>; size: number; hash: Hash } | null = null;
  private readonly staging: Staging<T>;

  constructor(staging?: Staging<T>) {
    // The default suits only T = Buffer; every other T passes its staging.
    this.staging = staging ?? (memoryStaging as unknown as Staging<T>);
  }

  /** Returns the verified stream when `chunk` completes a transfer; null otherwise. */
  accept(transfer: string, offset: number, chunk: Uint8Array, done: boolean, checksum: string): T | null {
    if (offset === 0) this.restart(transfer);
    else if (this.staged?.key !== transfer) {
      this.abandon(); // the start of this transfer was lost: the sender will start over
      return null;
    }
    const staged = this.staged!;
    if (offset !== staged.size) {
      this.abandon(); // a chunk was lost: the sender will start over
      return null;
    }
    try {
      if (chunk.byteLength > 0) staged.writer.write(chunk);
    } catch (err) {
      this.abandon();
      throw err instanceof SnapshotError ? err : new SnapshotError(`staging the snapshot failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    staged.size += chunk.byteLength;
    staged.hash.update(chunk);
    if (!done) return null;
    this.staged = null;
    const digest = staged.hash.digest('hex');
    if (digest !== checksum) {
      staged.writer.discard();
      throw new SnapshotError(`snapshot checksum mismatch: got ${digest}, expected ${checksum}`);
    }
    return staged.writer.finish(digest, staged.size);
  }

  /** Drops a transfer in progress (e.g. the node is stopping). */
  abandon(): void {
    this.staged?.writer.discard();
    this.staged = null;
  }

  private restart(transfer: string): void {
    this.abandon();
    this.staged = { key: transfer, writer: this.staging(), size: 0, hash: createHash('sha256') };
  }
}
