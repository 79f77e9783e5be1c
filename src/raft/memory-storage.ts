// The Raft log storage of the deterministic simulator: no I/O, so it has
// synchronous twins of every call, and it models what a crash does to LevelDB.
// LevelDB appends every write to one sequential log file; a write with
// sync:false sits in the OS page cache until the next synced write flushes it
// (and everything before it). A power loss therefore keeps the synced state
// plus, at most, some prefix of the unsynced writes after it, never a hole.

import {
  type LogBounds,
  type LoadedLog,
  type LogStorage,
  INITIAL_HARD_STATE,
  StorageError,
  checkClusterConfig,
  checkCompact,
  checkPersist,
  copyEntry,
  copyHardState,
} from './storage.js';
import type { ClusterConfig, Entry, HardState, SnapshotMeta } from './types.js';

/** One accepted write, already checked and copied. */
type LogWrite =
  | { readonly kind: 'append'; readonly hardState: HardState | null; readonly entries: readonly Entry[] }
  | { readonly kind: 'compact'; readonly meta: SnapshotMeta }
  | { readonly kind: 'install'; readonly meta: SnapshotMeta };

/** The stored log as one state; writes are applied to it in order. */
class LogImage {
  constructor(
    public hardState: HardState,
    public snapshot: SnapshotMeta,
    /** entries[i] has index snapshot.index + 1 + i. */
    public entries: Entry[],
  ) {}

  apply(write: LogWrite): void {
    if (write.kind === 'compact') {
      this.entries = this.entries.slice(write.meta.index - this.snapshot.index);
      this.snapshot = write.meta;
      return;
    }
    if (write.kind === 'install') {
      this.entries = [];
      this.snapshot = write.meta;
      return;
    }
    if (write.hardState !== null) this.hardState = write.hardState;
    const first = write.entries[0];
    if (first === undefined) return;
    // Same rule as LevelLogStorage: everything from the first new index on is replaced.
    this.entries.length = first.index - this.snapshot.index - 1;
    for (const entry of write.entries) this.entries.push(entry);
  }

  clone(): LogImage {
    return new LogImage(this.hardState, this.snapshot, [...this.entries]);
  }
}

export interface MemoryLogStorageOptions {
  /** The cluster configuration a fresh log starts from (what the snapshot meta of an empty log carries). */
  readonly initialConfig: ClusterConfig;
}

export interface PersistSyncOptions {
  /**
   * false: the write is visible at once (to this process and to later loads) but
   * lost by a crash() unless a synced write follows. Default true, as persist().
   */
  readonly sync?: boolean;
}

export interface CrashOptions {
  /** How many of the oldest unsynced writes reached the disk anyway (default 0: none). */
  readonly survivingUnsyncedWrites?: number;
}

export class MemoryLogStorage implements LogStorage {
  /** What survives a crash. */
  private durable: LogImage;
  /** Accepted writes since the last synced one, oldest first. */
  private unsynced: LogWrite[] = [];
  /** Bounds of the visible log (durable + unsynced), for checking the next write. */
  private bounds: LogBounds;
  private failNext = false;
  private closed = false;

  constructor(options: MemoryLogStorageOptions) {
    const snapshot: SnapshotMeta = { index: 0, term: 0, config: checkClusterConfig(options.initialConfig, 'initial config', 'invalidArgument') };
    this.durable = new LogImage(INITIAL_HARD_STATE, snapshot, []);
    this.bounds = { snapshotIndex: 0, lastIndex: 0, commit: 0 };
  }

  /** Number of writes a crash() would lose. */
  get unsyncedWriteCount(): number {
    return this.unsynced.length;
  }

  /** Makes the next non-empty persist (async or sync) fail with StorageError('io') and write nothing. */
  failNextWrite(): void {
    this.failNext = true;
  }

  persistSync(hardState: HardState | null, entries: readonly Entry[], options: PersistSyncOptions = {}): void {
    this.assertOpen();
    const newBounds = checkPersist(hardState, entries, this.bounds);
    // Nothing to write means no write, exactly as LevelLogStorage skips the batch.
    if (hardState === null && entries.length === 0) return;
    if (this.failNext) {
      this.failNext = false;
      throw new StorageError('io', 'injected write failure (failNextWrite)');
    }
    this.unsynced.push({ kind: 'append', hardState: hardState === null ? null : copyHardState(hardState), entries: entries.map(copyEntry) });
    this.bounds = newBounds;
    if (options.sync ?? true) this.syncSync();
  }

  compactSync(meta: SnapshotMeta): void {
    this.assertOpen();
    checkCompact(meta, this.bounds);
    if (meta.index === this.bounds.snapshotIndex) return;
    this.unsynced.push({ kind: 'compact', meta: copyMeta(meta) });
    this.bounds = { ...this.bounds, snapshotIndex: meta.index };
    this.syncSync();
  }

  async compact(meta: SnapshotMeta): Promise<void> {
    this.compactSync(meta);
  }

  /** Replace the whole log by an installed snapshot (the simulator keeps its state machine itself). */
  installSnapshotSync(meta: SnapshotMeta): void {
    this.assertOpen();
    if (this.failNext) {
      this.failNext = false;
      throw new StorageError('io', 'injected write failure (failNextWrite)');
    }
    this.unsynced.push({ kind: 'install', meta: copyMeta(meta) });
    this.bounds = { snapshotIndex: meta.index, lastIndex: meta.index, commit: this.bounds.commit };
    this.syncSync();
  }

  async persist(hardState: HardState | null, entries: readonly Entry[]): Promise<void> {
    this.persistSync(hardState, entries);
  }

  /** Makes every unsynced write durable, as LevelDB's next synced write would. */
  syncSync(): void {
    this.assertOpen();
    for (const write of this.unsynced) this.durable.apply(write);
    this.unsynced = [];
  }

  loadSync(): LoadedLog {
    this.assertOpen();
    const visible = this.durable.clone();
    for (const write of this.unsynced) visible.apply(write);
    return {
      hardState: copyHardState(visible.hardState),
      snapshot: { index: visible.snapshot.index, term: visible.snapshot.term, config: copyConfig(visible.snapshot.config) },
      entries: visible.entries.map(copyEntry),
    };
  }

  async load(): Promise<LoadedLog> {
    return this.loadSync();
  }

  /**
   * Power loss and restart: unsynced writes are lost (all of them, unless
   * `survivingUnsyncedWrites` says a prefix made it), a pending injected fault is
   * forgotten, and a closed storage is usable again, as a freshly opened one.
   */
  crash(options: CrashOptions = {}): void {
    const surviving = options.survivingUnsyncedWrites ?? 0;
    if (!Number.isSafeInteger(surviving) || surviving < 0 || surviving > this.unsynced.length) {
      throw new StorageError(
        'invalidArgument',
        `survivingUnsyncedWrites must be an integer in [0, ${this.unsynced.length}], got ${String(surviving)}`,
      );
    }
    for (const write of this.unsynced.slice(0, surviving)) this.durable.apply(write);
    this.unsynced = [];
    this.bounds = {
      snapshotIndex: this.durable.snapshot.index,
      lastIndex: this.durable.snapshot.index + this.durable.entries.length,
      commit: this.durable.hardState.commit,
    };
    this.failNext = false;
    this.closed = false;
  }

  /** A clean shutdown; unsynced writes stay unsynced (they are in the OS page cache already). */
  async close(): Promise<void> {
    this.closed = true;
  }

  /**
   * Process restart without power loss (after close() or a kill): nothing is lost,
   * and unsynced writes become durable, as LevelDB's recovery on open writes the
   * recovered log into a synced table file.
   */
  restart(): void {
    this.closed = false;
    this.syncSync();
    this.failNext = false;
  }

  private assertOpen(): void {
    if (this.closed) throw new StorageError('closed', 'log storage is closed');
  }
}

function copyMeta(meta: SnapshotMeta): SnapshotMeta {
  return { index: meta.index, term: meta.term, config: copyConfig(meta.config) };
}

function copyConfig(config: ClusterConfig): ClusterConfig {
  return { voters: [...config.voters], learners: [...config.learners] };
}
