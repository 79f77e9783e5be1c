// One node's durable Raft log in the simulator: MemoryLogStorage plus a mirror
// of the durable entries' terms, so the driver can check cheaply that what it
// applies is on disk and feed durable writes to the log-matching check.
// A "lying disk" (mutation mode) acknowledges writes it has not synced and
// loses the last few of them in a crash, to prove the checkers notice.

import { MemoryLogStorage } from '../../src/raft/memory-storage.js';
import type { LoadedLog } from '../../src/raft/storage.js';
import type { ClusterConfig, Entry, HardState, SnapshotMeta } from '../../src/raft/types.js';

export class SimLogStore {
  private readonly storage: MemoryLogStorage;
  /** Where the stored log starts (its snapshot index). */
  private base = 0;
  /** terms[i]: term of the stored entry at index base + i; terms[0] is the snapshot's term. */
  private terms: number[] = [0];
  private failureArmed = false;

  constructor(
    initialConfig: ClusterConfig,
    private readonly lying: boolean,
  ) {
    this.storage = new MemoryLogStorage({ initialConfig });
  }

  get hasArmedFailure(): boolean {
    return this.failureArmed;
  }

  /** Throws StorageError('io') when a failure was armed; then nothing is written. */
  persist(hardState: HardState | null, entries: readonly Entry[]): void {
    if (hardState === null && entries.length === 0) return;
    this.failureArmed = false;
    this.storage.persistSync(hardState, entries, { sync: !this.lying });
    const first = entries[0];
    if (first !== undefined) {
      this.terms.length = first.index - this.base;
      for (const e of entries) this.terms.push(e.term);
    }
  }

  /** Log compaction: entries up to meta.index are dropped (synced, as the real storage does). */
  compact(meta: SnapshotMeta): void {
    this.storage.compactSync(meta);
    if (meta.index <= this.base) return;
    this.terms = this.terms.slice(meta.index - this.base);
    this.base = meta.index;
  }

  /** The log is reset to start after an installed snapshot. Throws StorageError('io') when a failure was armed. */
  installSnapshot(meta: SnapshotMeta): void {
    this.failureArmed = false;
    this.storage.installSnapshotSync(meta);
    this.base = meta.index;
    this.terms = [meta.term];
  }

  /** The term of the stored entry at `index`; null when compacted away or beyond the log. */
  termAt(index: number): number | null {
    if (index < this.base) return null;
    return this.terms[index - this.base] ?? null;
  }

  lastIndex(): number {
    return this.base + this.terms.length - 1;
  }

  /** Where the stored log starts. */
  snapshotIndex(): number {
    return this.base;
  }

  load(): LoadedLog {
    return this.storage.loadSync();
  }

  /** The next non-empty write fails (the node will crash on it). */
  armWriteFailure(): void {
    this.failureArmed = true;
    this.storage.failNextWrite();
  }

  /** Power loss. An honest disk loses nothing it acknowledged; a lying one loses its last `lose` writes. */
  crash(lose: number): void {
    const unsynced = this.storage.unsyncedWriteCount;
    this.storage.crash({ survivingUnsyncedWrites: this.lying ? Math.max(0, unsynced - lose) : 0 });
    this.failureArmed = false;
    if (this.lying) {
      const { snapshot, entries } = this.storage.loadSync();
      this.base = snapshot.index;
      this.terms = [snapshot.term, ...entries.map((e) => e.term)];
    }
  }
}
