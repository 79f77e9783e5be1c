// The in-memory Raft log of one node: entries after the last snapshot, plus the
// bookkeeping of what has been handed to the driver for persisting and applying.
// The core keeps its whole (post-compaction) log in memory so that it can stay
// synchronous and deterministic; storage only ever sees what Ready hands it.

import { assert, RaftSafetyError } from './assert.js';
import type { Entry, SnapshotMeta } from './types.js';

export { RaftSafetyError };

export class RaftLog {
  private snapshot: SnapshotMeta;
  /** entries[i] has index snapshot.index + 1 + i. */
  private entries: Entry[];
  /** First index not yet handed out in a Ready for persisting. */
  private unstableFrom: number;
  /** Highest index known durable on this node (advanced by the driver's advance()). */
  persisted: number;
  committed: number;
  /** Highest index handed out for applying. */
  applying: number;

  constructor(snapshot: SnapshotMeta, entries: readonly Entry[], committed: number, applied: number) {
    this.snapshot = snapshot;
    this.entries = [...entries];
    entries.forEach((e, i) => {
      if (e.index !== snapshot.index + 1 + i) throw new RaftSafetyError(`restored log is not contiguous at index ${e.index}`);
      const before = i === 0 ? snapshot.term : entries[i - 1]!.term;
      assert(e.term >= before, () => `restored entry ${e.index} has term ${e.term}, below the term ${before} before it`);
    });
    const last = this.lastIndex();
    this.unstableFrom = last + 1;
    this.persisted = last;
    if (applied > last || committed > last) {
      throw new RaftSafetyError(`restored commit ${committed} / applied ${applied} beyond last log index ${last}`);
    }
    this.applying = Math.max(applied, snapshot.index);
    this.committed = Math.max(committed, this.applying);
  }

  get snapshotMeta(): SnapshotMeta {
    return this.snapshot;
  }

  firstIndex(): number {
    return this.snapshot.index + 1;
  }

  lastIndex(): number {
    return this.snapshot.index + this.entries.length;
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  /** The term of the entry at `index`, or null when it is compacted away or beyond the log. */
  term(index: number): number | null {
    if (index === this.snapshot.index) return this.snapshot.term;
    if (index < this.snapshot.index || index > this.lastIndex()) return null;
    return this.entries[index - this.snapshot.index - 1]!.term;
  }

  entry(index: number): Entry | null {
    if (index <= this.snapshot.index || index > this.lastIndex()) return null;
    return this.entries[index - this.snapshot.index - 1]!;
  }

  /** Entries with index in [from, to), clipped to the log. */
  slice(from: number, to: number): Entry[] {
    const lo = Math.max(from, this.firstIndex()) - this.snapshot.index - 1;
    const hi = Math.min(to, this.lastIndex() + 1) - this.snapshot.index - 1;
    return lo < hi ? this.entries.slice(lo, hi) : [];
  }

  /** Entries from `from` on, as many as fit in `maxBytes` (always at least one when there is one). */
  sliceBytes(from: number, maxBytes: number): Entry[] {
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = Math.max(from, this.firstIndex()); i <= this.lastIndex(); i++) {
      const e = this.entries[i - this.snapshot.index - 1]!;
      bytes += entrySize(e);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** A candidate's log is at least as up-to-date as ours (paper §5.4.1). */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /** Leader side: append new entries at the end. */
  append(entries: readonly Entry[]): void {
    for (const e of entries) this.pushNext(e);
  }

  /** The one place entries join the log: contiguous indices, terms never decreasing. */
  private pushNext(e: Entry): void {
    const last = this.lastIndex();
    if (e.index !== last + 1) throw new RaftSafetyError(`append of index ${e.index} after ${last}`);
    assert(e.term >= this.lastTerm(), () => `entry ${e.index} of term ${e.term} after an entry of term ${this.lastTerm()}`);
    this.entries.push(e);
  }

  /**
   * Follower side: the leader's entries follow (prevIndex, prevTerm), which we matched.
   * Entries we already hold are skipped; from the first conflicting one on, our suffix
   * is replaced. Returns the index of the last new entry.
   */
  appendFromLeader(prevIndex: number, entries: readonly Entry[]): number {
    for (const e of entries) {
      if (e.index <= this.snapshot.index) continue; // already compacted, therefore committed and matching
      const ours = this.term(e.index);
      if (ours === e.term) continue;
      if (ours !== null) this.truncateFrom(e.index);
      this.pushNext(e);
    }
    return prevIndex + entries.length;
  }

  private truncateFrom(index: number): void {
    if (index <= this.committed) {
      throw new RaftSafetyError(`leader asked to overwrite committed entry ${index} (commit ${this.committed})`);
    }
    this.entries.length = index - this.snapshot.index - 1;
    this.unstableFrom = Math.min(this.unstableFrom, index);
    this.persisted = Math.min(this.persisted, index - 1);
  }

  /**
   * The largest index <= `index` whose term is <= `term`: where two logs can still
   * agree, given that the other side holds `term` at `index` (fast back-off, as in
   * etcd-io/raft's findConflictByTerm, after the Raft thesis §5.3 optimisation).
   */
  findConflictByTerm(index: number, term: number): number {
    let i = Math.min(index, this.lastIndex());
    for (; i > this.snapshot.index; i--) {
      if ((this.term(i) ?? 0) <= term) return i;
    }
    return i;
  }

  /**
   * Raise the commit index to `index`, clipped to the log (a heartbeat may carry a
   * commit beyond what a follower holds); it never moves back.
   */
  commitTo(index: number): boolean {
    const target = Math.min(index, this.lastIndex());
    if (target <= this.committed) return false;
    this.committed = target;
    return true;
  }

  /** The log's standing invariants, O(1): what is committed is held, and applying never passes commit. */
  assertConsistent(who: string): void {
    const last = this.lastIndex();
    assert(this.committed <= last, () => `${who}: commit ${this.committed} past the last log index ${last}`);
    assert(this.applying <= this.committed, () => `${who}: applying ${this.applying} past commit ${this.committed}`);
    assert(this.committed >= this.snapshot.index, () => `${who}: commit ${this.committed} below the snapshot at ${this.snapshot.index}`);
  }

  /**
   * Drop entries up to `index` (already applied and captured by the state
   * machine); the log then starts after `meta`.
   */
  compactTo(meta: SnapshotMeta): void {
    if (meta.index <= this.snapshot.index) return;
    if (meta.index > this.applying || meta.index > this.persisted) {
      throw new RaftSafetyError(`cannot compact to ${meta.index}: applied ${this.applying}, persisted ${this.persisted}`);
    }
    if (this.term(meta.index) !== meta.term) throw new RaftSafetyError(`compaction point ${meta.index} has term ${this.term(meta.index)}, not ${meta.term}`);
    this.entries = this.entries.slice(meta.index - this.snapshot.index);
    this.snapshot = meta;
  }

  /**
   * Replace the whole log by an installed snapshot: the state machine now holds
   * everything up to `meta.index`, which the driver has already made durable.
   */
  restore(meta: SnapshotMeta): void {
    if (meta.index <= this.committed) throw new RaftSafetyError(`snapshot ${meta.index} is not beyond commit ${this.committed}`);
    this.snapshot = meta;
    this.entries = [];
    this.unstableFrom = meta.index + 1;
    this.persisted = meta.index;
    this.committed = meta.index;
    this.applying = meta.index;
  }

  /** Entries to hand to the driver for persisting; marks them handed out. */
  takeUnstable(): Entry[] {
    const out = this.slice(this.unstableFrom, this.lastIndex() + 1);
    this.unstableFrom = this.lastIndex() + 1;
    return out;
  }

  hasUnstable(): boolean {
    return this.unstableFrom <= this.lastIndex();
  }

  /** The driver made entries up to (index, term) durable. Ignored if that entry was replaced meanwhile. */
  persistedTo(index: number, term: number): void {
    if (this.term(index) === term && index < this.unstableFrom) this.persisted = Math.max(this.persisted, index);
  }

  /** Committed entries not yet handed out for applying; marks them handed out. */
  takeCommitted(): Entry[] {
    const out = this.slice(this.applying + 1, this.committed + 1);
    if (out.length > 0) this.applying = out[out.length - 1]!.index;
    return out;
  }

  hasCommittedToApply(): boolean {
    return this.committed > this.applying;
  }
}

/** An estimate of an entry's wire size, used for flow control and batching. */
export function entrySize(e: Entry): number {
  return e.data.byteLength + 24;
}
