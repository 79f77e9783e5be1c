// A small synced record, outside LevelDB, of the newest Raft state this member
// has made others rely on: its term and vote (a vote given is a promise) and
// the highest commit index it has known (entries a quorum acknowledged). A store
// that comes back behind it (a truncated or deleted LevelDB .log, a restored
// copy of an old data directory) would silently drop acknowledged writes and
// let the member vote twice in one term; such a store is refused at start.
//
// <dir>/acked holds two fixed-size slots written alternately, each with its own
// CRC-32C and a sequence number, so a write torn by a crash leaves the other slot
// valid. A term or vote change is written and synced before the persist that
// carries it returns (so before any message that depends on it is sent); a commit
// advance alone is written in the background, at most every 100 ms, so it costs
// the write path nothing. The record may therefore trail the newest commit by
// that much: it detects a rollback of anything older.
//
// Beside what others rely on, it keeps a lower bound of what this member wrote:
// the end of its log as of its current term (entries of the current term are
// never taken back while the term lasts) and its applied index (as of a synced
// write, so the store holds it). Both are written like a commit advance, in the
// background, and exactly at a clean stop. A store whose log ends before either
// lost entries it had (LevelDB dropping a damaged record would do that), and is
// refused.

import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32c } from './crc32c.js';
import { fsyncDir } from './fsync.js';
import type { HardState } from './types.js';

export const ACK_RECORD_FILENAME = 'acked';
const SLOT_BYTES = 512;
const HEADER_BYTES = 8; // crc32c, then the length of the JSON body
const COMMIT_WRITE_INTERVAL_MS = 100;

export interface Acknowledged {
  readonly term: number;
  readonly vote: string | null;
  readonly commit: number;
  /** The log's last index when its last entry was of `term` (0: none known). Only rises within a term. */
  readonly logEnd: number;
  /** The applied index as of a synced write (0: none known). */
  readonly applied: number;
}

/** What a synced write made durable besides the hard state. */
export interface WrittenLog {
  readonly lastIndex: number;
  readonly lastTerm: number;
  readonly applied: number;
}

interface Slot extends Acknowledged {
  readonly seq: number;
}

export class AckRecord {
  private seq: number;
  private recorded: Acknowledged | null;
  /** The newest state asked for in the background, not yet written. */
  private wanted: Acknowledged | null = null;
  /** Set while a background write of `wanted` is scheduled. */
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly handle: FileHandle,
    newest: Slot | null,
  ) {
    this.seq = newest?.seq ?? 0;
    this.recorded = newest;
  }

  /** Opens (creating if missing) the record in `dir`. */
  static async open(dir: string): Promise<AckRecord> {
    const path = join(dir, ACK_RECORD_FILENAME);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r+');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      handle = await open(path, 'wx+');
      await fsyncDir(dir); // the record's existence must outlive a crash like its contents
    }
    try {
      const bytes = Buffer.alloc(2 * SLOT_BYTES);
      const { bytesRead } = await handle.read(bytes, 0, bytes.length, 0);
      const valid: Slot[] = [];
      for (const start of [0, SLOT_BYTES]) {
        const slot = readSlot(bytes.subarray(start, Math.max(start, Math.min(bytesRead, start + SLOT_BYTES))));
        if (slot !== null) valid.push(slot);
      }
      const newest = valid.length === 0 ? null : valid.reduce((a, b) => (b.seq > a.seq ? b : a));
      return new AckRecord(handle, newest);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  /** What the record says this member acknowledged, or null if it has no record yet. */
  get acknowledged(): Acknowledged | null {
    return this.recorded;
  }

  /**
   * Call after `hardState` and `written` are durable in the store: a term or vote
   * change is recorded before this resolves, anything that grew soon after.
   */
  async update(hardState: HardState, written: WrittenLog | null = null): Promise<void> {
    const last = this.wanted ?? this.recorded;
    const sameTerm = last !== null && last.term === hardState.term;
    const next: Acknowledged = {
      term: hardState.term,
      vote: hardState.vote,
      commit: Math.max(hardState.commit, last?.commit ?? 0),
      // Only the end of a run of current-term entries is a bound: older-term entries may be replaced by a shorter run.
      logEnd: Math.max(written !== null && written.lastTerm === hardState.term ? written.lastIndex : 0, sameTerm ? last.logEnd : 0),
      applied: Math.max(written?.applied ?? 0, last?.applied ?? 0),
    };
    if (last !== null && sameTerm && last.vote === next.vote) {
      if (next.commit > last.commit || next.logEnd > last.logEnd || next.applied > last.applied) this.writeSoon(next);
      return;
    }
    this.wanted = null;
    await this.enqueue(next);
  }

  /** Writes what is still wanted, then closes the file. */
  async close(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
      void this.enqueue(null).catch(() => undefined);
    }
    await this.writing;
    this.closed = true;
    await this.handle.close();
  }

  /**
   * A commit advance comes with nearly every persist under load: written at most once
   * per COMMIT_WRITE_INTERVAL_MS, so the record adds no steady stream of fsyncs beside
   * the log's. A failed background write leaves the older record, still a valid lower bound.
   */
  private writeSoon(next: Acknowledged): void {
    this.wanted = next;
    if (this.timer !== null) return; // the scheduled write will take the newest
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.enqueue(null).catch(() => undefined);
    }, COMMIT_WRITE_INTERVAL_MS);
  }

  /** Writes `state` (or, when null, whatever is wanted by then) after the writes before it. */
  private enqueue(state: Acknowledged | null): Promise<void> {
    const run = this.writing.then(async () => {
      const target = state ?? this.wanted;
      if (state === null) this.wanted = null;
      if (target === null || this.closed) return;
      await this.write(target);
    });
    this.writing = run.catch(() => undefined);
    return run;
  }

  private async write(state: Acknowledged): Promise<void> {
    const seq = this.seq + 1;
    const body = Buffer.from(
      JSON.stringify({ seq, term: state.term, vote: state.vote, commit: state.commit, logEnd: state.logEnd, applied: state.applied }),
      'utf8',
    );
    if (HEADER_BYTES + body.length > SLOT_BYTES) throw new Error(`the acknowledgement record does not fit its slot (${body.length} bytes)`);
    const slot = Buffer.alloc(SLOT_BYTES);
    slot.writeUInt32BE(body.length, 4);
    body.copy(slot, HEADER_BYTES);
    slot.writeUInt32BE(crc32c(slot.subarray(4, HEADER_BYTES + body.length)), 0);
    await this.handle.write(slot, 0, SLOT_BYTES, (seq % 2) * SLOT_BYTES);
    await this.handle.datasync();
    this.seq = seq;
    this.recorded = state;
  }
}

function readSlot(bytes: Buffer): Slot | null {
  if (bytes.length < HEADER_BYTES) return null;
  const length = bytes.readUInt32BE(4);
  if (length === 0 || HEADER_BYTES + length > bytes.length) return null;
  if (crc32c(bytes.subarray(4, HEADER_BYTES + length)) !== bytes.readUInt32BE(0)) return null;
  try {
    const value = JSON.parse(bytes.subarray(HEADER_BYTES, HEADER_BYTES + length).toString('utf8')) as Record<string, unknown>;
    const { seq, term, vote, commit } = value;
    // Records written before logEnd and applied existed lack them: 0 bounds nothing.
    const logEnd = value.logEnd ?? 0;
    const applied = value.applied ?? 0;
    if (!isCount(seq) || !isCount(term) || !isCount(commit) || !(vote === null || typeof vote === 'string')) return null;
    if (!isCount(logEnd) || !isCount(applied)) return null;
    return { seq, term, vote, commit, logEnd, applied };
  } catch {
    return null;
  }
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Why a store is behind its member's record, or null if it is not. */
export function rollbackProblem(
  record: Acknowledged,
  store: { readonly hardState: HardState; readonly lastIndex: number; readonly applied: number },
): string | null {
  const { hardState, lastIndex, applied } = store;
  if (hardState.term < record.term) return `the store's term is ${hardState.term} but this member had reached term ${record.term}`;
  if (hardState.term === record.term && record.vote !== null && hardState.vote !== record.vote) {
    return `the store's vote in term ${record.term} is ${JSON.stringify(hardState.vote)} but this member had voted for ${JSON.stringify(record.vote)}`;
  }
  if (lastIndex < record.commit) return `the store's log ends at index ${lastIndex} but this member had known index ${record.commit} committed`;
  if (hardState.term === record.term && lastIndex < record.logEnd) {
    return `the store's log ends at index ${lastIndex} but this member had written entries of term ${record.term} up to index ${record.logEnd}`;
  }
  // Applied entries the store lost are replayed from the log, if the log still holds them.
  if (Math.max(applied, lastIndex) < record.applied) {
    return `the store's applied index is ${applied} and its log ends at ${lastIndex}, but this member had applied index ${record.applied}`;
  }
  return null;
}
