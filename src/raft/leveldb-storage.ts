// The Raft log on LevelDB, laid out as seed 003 says. The database is shared
// with the state machine (every key outside the buckets and properties below),
// so this class touches only its own keys and never closes the database.
//
//   0x0000 'hardState'     msgpack { term, vote, commit }      peer-local, never in a snapshot
//   0x0001 'snapshot'      msgpack { index, term, config }     start of the log; a fresh store holds
//                                                              { 0, 0, initialConfig }
//   0x0001 'lastLogIndex'  msgpack number                      max(snapshot.index, last entry index)
//   0x0002 + index8        msgpack [index, term, kind, data]   kind: 0 noop, 1 command, 2 config
//
// Every persist is one LevelDB batch written with sync:true, so the hard state,
// the entries, the deletions of a replaced suffix and lastLogIndex land together
// or not at all.

import type { ClassicLevel } from 'classic-level';
import { Packr } from 'msgpackr';
import { Bucket, bucketRange, decodeLogKey, internalPropertyKey, logKey, propertyKey } from '../keys/index.js';
import {
  type LoadedLog,
  type LogBounds,
  type LogStorage,
  INITIAL_HARD_STATE,
  StorageError,
  checkClusterConfig,
  checkCompact,
  checkHardState,
  checkPersist,
} from './storage.js';
import type { ClusterConfig, Entry, EntryKind, HardState, SnapshotMeta } from './types.js';
import type { AckRecord } from './ack-record.js';
import { corruptValueIn } from './checked-values.js';

export type LevelDb = ClassicLevel<Buffer, Buffer>;

export type LevelBatchOp = { readonly type: 'put'; readonly key: Buffer; readonly value: Buffer } | { readonly type: 'del'; readonly key: Buffer };

export const HARD_STATE_KEY = propertyKey('hardState');
export const SNAPSHOT_KEY = internalPropertyKey('snapshot');
export const LAST_LOG_INDEX_KEY = internalPropertyKey('lastLogIndex');

// Keys are buffers; values use the database's own encoding (a Vera store checksums every value, see checked-values.ts).
const BUFFERS = { keyEncoding: 'buffer' } as const;
/** Log entries load() reads per trip to LevelDB, and the bytes such a run may hold (classic-level stops a run at 16 KiB by default). */
const LOAD_RUN = 1_000;
const LOAD_RUN_BYTES = 4 * 1024 * 1024;

// Plain MessagePack maps and arrays (no msgpackr records), so any decoder can read a dump.
const packr = new Packr({ useRecords: false });

const KIND_CODES: Readonly<Record<EntryKind, number>> = { noop: 0, command: 1, config: 2 };
const KINDS_BY_CODE: readonly EntryKind[] = ['noop', 'command', 'config'];

export interface LevelLogStorageOptions {
  /** Written as the snapshot meta's config when the database holds no log yet; ignored otherwise. */
  readonly initialConfig: ClusterConfig;
}

export class LevelLogStorage implements LogStorage {
  /** Told how long each synced write of the log took (seconds): the metrics' fsync durations. */
  onSynced: ((seconds: number) => void) | null = null;

  private bounds: LogBounds;
  /** Writes run one after another, each checked against the bounds the previous one left. */
  private queue: Promise<unknown> = Promise.resolve();
  /** No call is queued or running: the next starts at once (enqueue). */
  private idle = true;
  private closed = false;
  private ackRecord: AckRecord | null = null;
  /**
   * The applied index the state machine has written (its batches are not synced:
   * a synced write makes what it wrote before durable too). Told to the ack record.
   */
  appliedSource: (() => number) | null = null;
  /** The durable hard state and the term of the log's last entry, once load() has read them. */
  private durableHard: HardState | null = null;
  private lastTerm = 0;

  private constructor(
    private readonly db: LevelDb,
    bounds: LogBounds,
  ) {
    this.bounds = bounds;
  }

  /**
   * Opens the log in `db`. A database without a log gets the initial snapshot meta
   * and lastLogIndex in one synced batch; an existing one is checked (its last log
   * key must agree with lastLogIndex) but not fully read; load() does that.
   */
  static async open(db: LevelDb, options: LevelLogStorageOptions): Promise<LevelLogStorage> {
    const [rawSnapshot, rawLast, rawHardState] = await db.getMany([SNAPSHOT_KEY, LAST_LOG_INDEX_KEY, HARD_STATE_KEY], BUFFERS);
    if (rawSnapshot === undefined) {
      const highest = await highestLogIndexAbove(db, 0);
      if (rawLast !== undefined || rawHardState !== undefined || highest !== null) {
        throw new StorageError('corrupt', 'the database holds Raft state but no snapshot meta (0x0001 snapshot); refusing to start over it');
      }
      const snapshot: SnapshotMeta = { index: 0, term: 0, config: checkClusterConfig(options.initialConfig, 'initial config', 'invalidArgument') };
      await db.batch(
        [
          { type: 'put', key: SNAPSHOT_KEY, value: pack(snapshot) },
          { type: 'put', key: LAST_LOG_INDEX_KEY, value: pack(0) },
        ],
        { ...BUFFERS, sync: true },
      );
      return new LevelLogStorage(db, { snapshotIndex: 0, lastIndex: 0, commit: 0 });
    }
    const snapshot = decodeSnapshot(rawSnapshot);
    const lastIndex = decodeLastLogIndex(rawLast, snapshot);
    const highest = await highestLogIndexAbove(db, snapshot.index);
    if ((highest ?? snapshot.index) !== lastIndex) {
      throw new StorageError(
        'corrupt',
        `lastLogIndex is ${lastIndex} but the highest stored entry after the snapshot is ${highest ?? 'none'}`,
      );
    }
    const hardState = rawHardState === undefined ? INITIAL_HARD_STATE : decodeHardState(rawHardState);
    if (hardState.commit > lastIndex) {
      throw new StorageError('corrupt', `hard state commit ${hardState.commit} is beyond the last log index ${lastIndex}`);
    }
    return new LevelLogStorage(db, { snapshotIndex: snapshot.index, lastIndex, commit: hardState.commit });
  }

  load(): Promise<LoadedLog> {
    return this.enqueue(async () => {
      const [rawHardState, rawSnapshot, rawLast] = await this.db.getMany([HARD_STATE_KEY, SNAPSHOT_KEY, LAST_LOG_INDEX_KEY], BUFFERS);
      if (rawSnapshot === undefined) throw new StorageError('corrupt', 'snapshot meta (0x0001 snapshot) is missing');
      const snapshot = decodeSnapshot(rawSnapshot);
      const lastIndex = decodeLastLogIndex(rawLast, snapshot);
      const hardState = rawHardState === undefined ? INITIAL_HARD_STATE : decodeHardState(rawHardState);
      const entries: Entry[] = [];
      // Entries at or below snapshot.index are covered by the snapshot and not part of the log.
      const range = { gte: logKey(snapshot.index + 1), lt: bucketRange(Bucket.log).lt };
      // Read in runs (nextv), not entry by entry: a promise per entry made a restart on a long log slow (issue 32).
      // The stored values come raw and are decoded here (the db's value encoding checks each one's
      // checksum), one by one: decoded by the iterator, a damaged value would fail its whole run,
      // not name its own entry.
      const valueEncoding = this.db.valueEncoding();
      const storedValue = (stored: Buffer, index: number): Buffer => {
        try {
          return valueEncoding.decode(stored) as Buffer;
        } catch (error) {
          const corrupt = corruptValueIn(error);
          if (corrupt === null) throw error;
          throw new StorageError('corrupt', `log entry ${index} (key ${logKey(index).toString('hex')}): ${corrupt.message}`, { cause: error });
        }
      };
      const iterator = this.db.iterator({ ...range, ...BUFFERS, valueEncoding: 'buffer', highWaterMarkBytes: LOAD_RUN_BYTES });
      try {
        for (let run = await iterator.nextv(LOAD_RUN); run.length > 0; run = await iterator.nextv(LOAD_RUN)) {
          for (const [key, stored] of run) {
            const expected = snapshot.index + 1 + entries.length;
            const index = decodeLogKeyOrCorrupt(key);
            if (index !== expected) {
              throw new StorageError('corrupt', `the log is not contiguous: expected entry ${expected}, found ${index}`);
            }
            entries.push(decodeEntry(storedValue(stored, index), index));
          }
        }
      } finally {
        await iterator.close();
      }
      const last = snapshot.index + entries.length;
      if (last !== lastIndex) {
        throw new StorageError('corrupt', `lastLogIndex is ${lastIndex} but the log ends at ${last}`);
      }
      if (hardState.commit > lastIndex) {
        throw new StorageError('corrupt', `hard state commit ${hardState.commit} is beyond the last log index ${lastIndex}`);
      }
      this.durableHard = hardState;
      this.lastTerm = entries.at(-1)?.term ?? snapshot.term;
      return { hardState, snapshot, entries };
    });
  }

  persist(hardState: HardState | null, entries: readonly Entry[]): Promise<void> {
    return this.persistWith([], hardState, entries);
  }

  /**
   * persist() plus `extraOps` (e.g. the state machine's writes) in the same synced
   * batch, for a driver that wants one fsync per Ready. `extraOps` must not touch
   * the log's own keys.
   */
  persistWith(extraOps: readonly LevelBatchOp[], hardState: HardState | null, entries: readonly Entry[]): Promise<void> {
    return this.enqueue(async () => {
      const newBounds = checkPersist(hardState, entries, this.bounds);
      for (const op of extraOps) {
        if (isLogOwnedKey(op.key)) {
          throw new StorageError('invalidArgument', `extra op touches a key the log storage owns: ${op.key.toString('hex')}`);
        }
      }
      const ops = this.logOps(hardState, entries, newBounds.lastIndex);
      for (const op of extraOps) ops.push(op);
      if (ops.length === 0) return;
      const applied = this.appliedSource?.() ?? 0; // written before this batch, so durable with it
      const started = performance.now();
      try {
        await this.db.batch(ops, { ...BUFFERS, sync: true });
      } catch (cause) {
        // A failed fsync leaves the disk state uncertain: the driver should stop the node and reopen.
        throw new StorageError('io', `writing the Raft log failed: ${describe(cause)}`, { cause });
      }
      this.onSynced?.((performance.now() - started) / 1000);
      this.bounds = newBounds;
      if (hardState !== null) this.durableHard = hardState;
      if (entries.length > 0) this.lastTerm = entries[entries.length - 1]!.term;
      // After the store has it, before the driver sends what depends on it (ack-record.ts).
      if (this.durableHard !== null && this.ackRecord !== null) {
        await this.ackRecord.update(this.durableHard, { lastIndex: newBounds.lastIndex, lastTerm: this.lastTerm, applied });
      }
    });
  }

  /** From now on, every hard state persisted is also given to `record`. */
  recordAcknowledgementsIn(record: AckRecord): void {
    this.ackRecord = record;
  }

  /** The durable hard state and the last index of the log (the snapshot's when the log is empty). */
  async durableState(): Promise<{ hardState: HardState; lastIndex: number }> {
    const raw = await this.db.get(HARD_STATE_KEY, BUFFERS);
    return { hardState: raw === undefined ? INITIAL_HARD_STATE : decodeHardState(raw), lastIndex: this.bounds.lastIndex };
  }

  compact(meta: SnapshotMeta): Promise<void> {
    return this.enqueue(async () => {
      checkCompact(meta, this.bounds);
      if (meta.index === this.bounds.snapshotIndex) return;
      try {
        // The new start is durable first; entries below it are then unreachable (load starts after it),
        // so deleting them need not be atomic with it. Clearing from the bucket start also removes
        // leftovers of an earlier compaction interrupted by a crash.
        await this.db.put(SNAPSHOT_KEY, pack({ index: meta.index, term: meta.term, config: { voters: [...meta.config.voters], learners: [...meta.config.learners] } }), { ...BUFFERS, sync: true });
        await this.db.clear({ gte: LOG_BUCKET_PREFIX, lte: logKey(meta.index), keyEncoding: 'buffer' });
      } catch (cause) {
        throw new StorageError('io', `compacting the Raft log failed: ${describe(cause)}`, { cause });
      }
      this.bounds = { ...this.bounds, snapshotIndex: meta.index };
    });
  }

  /**
   * Replace the whole log by a received snapshot, in ONE synced batch with the
   * state machine's new contents (`stateOps`): the log then starts after `meta` and
   * is empty. A crash leaves either the old log and state or the new ones. The hard
   * state (term, vote) is left alone: a vote must never be forgotten.
   */
  installSnapshot(meta: SnapshotMeta, stateOps: readonly LevelBatchOp[]): Promise<void> {
    return this.enqueue(async () => {
      checkClusterConfig(meta.config, 'snapshot config', 'invalidArgument');
      for (const op of stateOps) {
        if (isLogOwnedKey(op.key)) throw new StorageError('invalidArgument', `state op touches a key the log storage owns: ${op.key.toString('hex')}`);
      }
      const ops: LevelBatchOp[] = [];
      for (let index = this.bounds.snapshotIndex + 1; index <= this.bounds.lastIndex; index++) ops.push({ type: 'del', key: logKey(index) });
      ops.push({ type: 'put', key: SNAPSHOT_KEY, value: pack({ index: meta.index, term: meta.term, config: { voters: [...meta.config.voters], learners: [...meta.config.learners] } }) });
      ops.push({ type: 'put', key: LAST_LOG_INDEX_KEY, value: pack(meta.index) });
      for (const op of stateOps) ops.push(op); // a loop: a spread of a long array overflows the stack
      try {
        await this.db.batch(ops, { ...BUFFERS, sync: true });
      } catch (cause) {
        throw new StorageError('io', `installing a snapshot failed: ${describe(cause)}`, { cause });
      }
      this.bounds = { snapshotIndex: meta.index, lastIndex: meta.index, commit: this.bounds.commit };
      this.lastTerm = meta.term;
    });
  }

  /** Waits for queued calls; later calls fail with StorageError('closed'). The shared database stays open. */
  async close(): Promise<void> {
    const drained = this.queue.then(
      () => undefined,
      () => undefined,
    );
    this.closed = true;
    await drained;
  }

  private logOps(hardState: HardState | null, entries: readonly Entry[], newLast: number): LevelBatchOp[] {
    const ops: LevelBatchOp[] = [];
    if (hardState !== null) ops.push({ type: 'put', key: HARD_STATE_KEY, value: pack(hardState) });
    if (entries.length === 0) return ops;
    // Entries up to newLast are overwritten by the puts; a longer old suffix must be deleted.
    for (let index = newLast + 1; index <= this.bounds.lastIndex; index++) ops.push({ type: 'del', key: logKey(index) });
    for (const entry of entries) ops.push({ type: 'put', key: logKey(entry.index), value: encodeEntry(entry) });
    ops.push({ type: 'put', key: LAST_LOG_INDEX_KEY, value: pack(newLast) });
    return ops;
  }

  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StorageError('closed', 'log storage is closed'));
    // Idle: start now, not a microtask later, so a write reaches LevelDB's thread pool before
    // the caller's next step (the leader's driver sends its appends right after; on a busy
    // machine each socket write can lose the core to the peer it wakes).
    const startNow = this.idle;
    this.idle = false; // before the task runs: a call it makes at once must queue behind it
    const result = startNow ? task() : this.queue.then(task, task);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.queue = settled;
    void settled.then(() => {
      if (this.queue === settled) this.idle = true;
    });
    return result;
  }
}

const LOG_BUCKET_PREFIX = bucketRange(Bucket.log).gte;

function isLogOwnedKey(key: Buffer): boolean {
  return (
    key.subarray(0, 2).equals(LOG_BUCKET_PREFIX) || key.equals(HARD_STATE_KEY) || key.equals(SNAPSHOT_KEY) || key.equals(LAST_LOG_INDEX_KEY)
  );
}

async function highestLogIndexAbove(db: LevelDb, index: number): Promise<number | null> {
  const range = { gt: logKey(index), lt: bucketRange(Bucket.log).lt };
  for await (const key of db.keys({ ...range, reverse: true, limit: 1, keyEncoding: 'buffer' })) {
    return decodeLogKeyOrCorrupt(key);
  }
  return null;
}

function pack(value: unknown): Buffer {
  return packr.pack(value);
}

function unpack(raw: Buffer, what: string): unknown {
  try {
    return packr.unpack(raw);
  } catch (cause) {
    throw new StorageError('corrupt', `${what} is not valid MessagePack`, { cause });
  }
}

function encodeEntry(entry: Entry): Buffer {
  return pack([entry.index, entry.term, KIND_CODES[entry.kind], entry.data]);
}

function decodeEntry(raw: Buffer, index: number): Entry {
  const value = unpack(raw, `log entry ${index}`);
  if (!Array.isArray(value) || value.length !== 4) throw new StorageError('corrupt', `log entry ${index} is not [index, term, kind, data]`);
  const [storedIndex, term, kindCode, data] = value as unknown[];
  if (storedIndex !== index) throw new StorageError('corrupt', `log entry stored under index ${index} says it is ${String(storedIndex)}`);
  if (typeof term !== 'number' || !Number.isSafeInteger(term) || term < 1) {
    throw new StorageError('corrupt', `log entry ${index} has invalid term ${String(term)}`);
  }
  const kind = typeof kindCode === 'number' ? KINDS_BY_CODE[kindCode] : undefined;
  if (kind === undefined) throw new StorageError('corrupt', `log entry ${index} has unknown kind code ${String(kindCode)}`);
  if (!(data instanceof Uint8Array)) throw new StorageError('corrupt', `log entry ${index} data is not binary`);
  // A plain Uint8Array view: callers see the same type MemoryLogStorage returns.
  return { index, term, kind, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

function decodeHardState(raw: Buffer): HardState {
  const value = unpack(raw, 'hard state');
  if (value === null || typeof value !== 'object') throw new StorageError('corrupt', 'hard state is not a map');
  const { term, vote, commit } = value as Record<string, unknown>;
  const hardState = { term, vote, commit } as HardState;
  try {
    checkHardState(hardState);
  } catch (cause) {
    throw new StorageError('corrupt', `stored hard state is invalid: ${describe(cause)}`, { cause });
  }
  return hardState;
}

function decodeSnapshot(raw: Buffer): SnapshotMeta {
  const value = unpack(raw, 'snapshot meta');
  if (value === null || typeof value !== 'object') throw new StorageError('corrupt', 'snapshot meta is not a map');
  const { index, term, config } = value as Record<string, unknown>;
  if (!isCount(index) || !isCount(term)) {
    throw new StorageError('corrupt', `snapshot meta has invalid index/term ${String(index)}/${String(term)}`);
  }
  return { index, term, config: checkClusterConfig(config, 'snapshot config', 'corrupt') };
}

function decodeLastLogIndex(raw: Buffer | undefined, snapshot: SnapshotMeta): number {
  if (raw === undefined) throw new StorageError('corrupt', 'lastLogIndex (0x0001 lastLogIndex) is missing');
  const value = unpack(raw, 'lastLogIndex');
  if (!isCount(value) || value < snapshot.index) {
    throw new StorageError('corrupt', `lastLogIndex ${String(value)} is not an integer >= snapshot index ${snapshot.index}`);
  }
  return value;
}

function decodeLogKeyOrCorrupt(key: Buffer): number {
  try {
    return decodeLogKey(key);
  } catch (cause) {
    throw new StorageError('corrupt', `malformed key in the log bucket: ${key.toString('hex')}`, { cause });
  }
}

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
