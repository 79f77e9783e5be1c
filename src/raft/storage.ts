// The contract between the Raft driver and durable storage of the Raft log,
// plus the argument checks both implementations (LevelDB and in-memory) share
// so that they accept and reject exactly the same writes.

import type { ClusterConfig, Entry, EntryKind, HardState, SnapshotMeta } from './types.js';

/** Everything a node needs to rebuild its Raft core after a restart. */
export interface LoadedLog {
  readonly hardState: HardState;
  /** The compacted prefix; `{ index: 0, term: 0, config: initialConfig }` for a fresh log. */
  readonly snapshot: SnapshotMeta;
  /** The entries after `snapshot.index`, contiguous. */
  readonly entries: Entry[];
}

export interface LogStorage {
  /** Reads the whole stored log back, checking it for corruption (never repairing it). */
  load(): Promise<LoadedLog>;

  /**
   * Writes `hardState` (null = unchanged) and `entries` in ONE atomic, synced write
   * (group commit: one Ready, one write). `entries` must be contiguous and start at
   * most one past the last stored index; when they start at or below it, every
   * stored entry from `entries[0].index` on is removed first, so a conflicting
   * suffix is really gone rather than shadowed. A rejected or failed call writes
   * nothing.
   */
  persist(hardState: HardState | null, entries: readonly Entry[]): Promise<void>;

  /**
   * Log compaction: the log now starts after `meta` (an index already applied and
   * durable in the state machine); entries up to it are deleted. Synced.
   */
  compact(meta: SnapshotMeta): Promise<void>;

  /** Waits for queued writes, then refuses further calls. Does not close a shared database. */
  close(): Promise<void>;
}

export type StorageErrorCode =
  /** A write broke the rules above (bad field, gap, non-contiguous batch, ...). */
  | 'invalidArgument'
  /** A write reached into the prefix already compacted into the snapshot. */
  | 'compacted'
  /** What is stored contradicts itself; the node must not start from it. */
  | 'corrupt'
  /** The underlying write failed; nothing was written. */
  | 'io'
  | 'closed';

export class StorageError extends Error {
  override readonly name = 'StorageError';
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const INITIAL_HARD_STATE: HardState = Object.freeze({ term: 0, vote: null, commit: 0 });

const ENTRY_KINDS: ReadonlySet<EntryKind> = new Set<EntryKind>(['noop', 'command', 'config']);

function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

/** What a new write is checked against: where the stored log starts and ends, and its commit index. */
export interface LogBounds {
  readonly snapshotIndex: number;
  readonly lastIndex: number;
  readonly commit: number;
}

/**
 * Checks one persist call against the current bounds and returns the bounds the
 * log will have afterwards. Throws StorageError and changes nothing on bad input.
 */
export function checkPersist(hardState: HardState | null, entries: readonly Entry[], bounds: LogBounds): LogBounds {
  let newLast = bounds.lastIndex;
  if (entries.length > 0) {
    const first = entries[0]!;
    entries.forEach((entry, i) => checkEntry(entry, first.index + i, i === 0 ? 0 : entries[i - 1]!.term));
    if (first.index > bounds.lastIndex + 1) {
      throw new StorageError(
        'invalidArgument',
        `append at index ${first.index} would leave a gap after last stored index ${bounds.lastIndex}`,
      );
    }
    if (first.index <= bounds.snapshotIndex) {
      throw new StorageError(
        'compacted',
        `append at index ${first.index} reaches into the snapshot (which covers up to ${bounds.snapshotIndex})`,
      );
    }
    newLast = first.index + entries.length - 1;
  }
  if (hardState !== null) checkHardState(hardState);
  // Raft never commits an entry it does not hold, nor truncates a committed one; a
  // storage that allowed either would restart into a state the core refuses
  // (see RaftLog's constructor), so it is refused here, where the bug is.
  const commit = hardState?.commit ?? bounds.commit;
  if (commit > newLast) {
    throw new StorageError(
      'invalidArgument',
      hardState === null
        ? `removing entries after ${newLast} would drop committed entries (commit is ${commit})`
        : `hard state commit ${commit} is beyond the last log index ${newLast}`,
    );
  }
  return { snapshotIndex: bounds.snapshotIndex, lastIndex: newLast, commit };
}

function checkEntry(entry: Entry, expectedIndex: number, previousTerm: number): void {
  if (entry === null || typeof entry !== 'object') {
    throw new StorageError('invalidArgument', `entry expected at index ${expectedIndex} is not an object`);
  }
  if (!isCount(entry.index) || entry.index < 1) {
    throw new StorageError('invalidArgument', `entry index ${String(entry.index)} is not a positive integer`);
  }
  if (entry.index !== expectedIndex) {
    throw new StorageError('invalidArgument', `entries are not contiguous: expected index ${expectedIndex}, got ${entry.index}`);
  }
  if (!isCount(entry.term) || entry.term < 1) {
    throw new StorageError('invalidArgument', `entry ${entry.index} has term ${String(entry.term)}; terms of entries start at 1`);
  }
  // Terms never decrease along a Raft log (each leader appends in its own, newer term).
  if (entry.term < previousTerm) {
    throw new StorageError('invalidArgument', `entry ${entry.index} has term ${entry.term}, lower than the entry before it (${previousTerm})`);
  }
  if (!ENTRY_KINDS.has(entry.kind)) {
    throw new StorageError('invalidArgument', `entry ${entry.index} has unknown kind ${JSON.stringify(entry.kind)}`);
  }
  if (!(entry.data instanceof Uint8Array)) {
    throw new StorageError('invalidArgument', `entry ${entry.index} data is not a Uint8Array`);
  }
}

export function checkHardState(hardState: HardState): void {
  if (hardState === null || typeof hardState !== 'object') {
    throw new StorageError('invalidArgument', 'hard state is not an object');
  }
  if (!isCount(hardState.term)) {
    throw new StorageError('invalidArgument', `hard state term ${String(hardState.term)} is not a non-negative integer`);
  }
  if (!isCount(hardState.commit)) {
    throw new StorageError('invalidArgument', `hard state commit ${String(hardState.commit)} is not a non-negative integer`);
  }
  if (hardState.vote !== null && (typeof hardState.vote !== 'string' || hardState.vote === '')) {
    throw new StorageError('invalidArgument', `hard state vote must be a node id or null, got ${JSON.stringify(hardState.vote)}`);
  }
}

/** Checks a cluster config (from a caller, or decoded from disk) and returns a copy of it. */
export function checkClusterConfig(config: unknown, what: string, code: 'corrupt' | 'invalidArgument'): ClusterConfig {
  const isIds = (ids: unknown): ids is string[] => Array.isArray(ids) && ids.every((id) => typeof id === 'string' && id !== '');
  if (config === null || typeof config !== 'object') throw new StorageError(code, `${what} is not an object`);
  const { voters, learners } = config as Record<string, unknown>;
  if (!isIds(voters) || !isIds(learners)) {
    throw new StorageError(code, `${what} must have string arrays 'voters' and 'learners'`);
  }
  return { voters: [...voters], learners: [...learners] };
}

/** Checks a compaction point against the current bounds. */
export function checkCompact(meta: SnapshotMeta, bounds: LogBounds): void {
  checkClusterConfig(meta.config, 'snapshot config', 'invalidArgument');
  if (!isCount(meta.index) || !isCount(meta.term)) throw new StorageError('invalidArgument', 'snapshot index and term must be non-negative integers');
  if (meta.index < bounds.snapshotIndex) {
    throw new StorageError('compacted', `cannot compact to ${meta.index}: the log already starts after ${bounds.snapshotIndex}`);
  }
  if (meta.index > bounds.lastIndex) {
    throw new StorageError('invalidArgument', `cannot compact to ${meta.index}: the log ends at ${bounds.lastIndex}`);
  }
}

/** A copy the caller cannot change behind the storage's back (and vice versa); data becomes a plain Uint8Array. */
export function copyEntry(entry: Entry): Entry {
  return { index: entry.index, term: entry.term, kind: entry.kind, data: new Uint8Array(entry.data) };
}

export function copyHardState(hardState: HardState): HardState {
  return { term: hardState.term, vote: hardState.vote, commit: hardState.commit };
}
