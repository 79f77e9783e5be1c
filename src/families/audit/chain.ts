// The audit log's hash chain: each record's hash covers its fields and the hash
// of the record before it, so editing, removing or reordering any record breaks
// every link after it. Pure, shared by apply (which computes the hashes, the
// same on every member) and by whoever verifies a log it read (vera audit --verify).
import { createHash } from 'node:crypto';
import { MAX_AUDIT_RECORDS, type AuditFact, type AuditRecord } from './wire.js';

export { AUDIT_KINDS, type AuditFact, type AuditKind, type AuditRecord } from './wire.js';

export const GENESIS = '0'.repeat(64);

export function recordHash(seq: number, fact: AuditFact, prev: string): string {
  return createHash('sha256').update(JSON.stringify([seq, fact.at, fact.kind, fact.principal, fact.remote, fact.what, prev]), 'utf8').digest('hex');
}

/**
 * Checks a run of consecutive records: each hash is right and each names the one
 * before it. Returns null, or the first record that does not hold and why.
 */
export function verifyChain(records: readonly AuditRecord[], before: string | null = null): { seq: number; problem: string } | null {
  let prev = before;
  let seq: number | null = null;
  for (const r of records) {
    if (seq !== null && r.seq !== seq + 1) return { seq: r.seq, problem: `follows record ${seq}: records are missing in between` };
    if (prev !== null && r.prev !== prev) return { seq: r.seq, problem: 'does not name the hash of the record before it' };
    if (recordHash(r.seq, r, r.prev) !== r.hash) return { seq: r.seq, problem: 'its hash does not match its contents: it was changed' };
    prev = r.hash;
    seq = r.seq;
  }
  return null;
}

/** What an `audit.list` page says besides its records. */
export interface AuditPageFacts {
  readonly records: readonly AuditRecord[];
  readonly oldest: number;
  readonly newest: number;
  /** The hash of record `newest` (absent from members before it was answered). */
  readonly head?: string;
  /** What the member found wrong with its newest records at start (reported after the links are checked). */
  readonly problem?: string;
  readonly next?: number;
}

/**
 * Checks a whole log read page by page from record `after` on: every link (verifyChain),
 * and both ends. From the start, the first record must be the oldest the window keeps
 * (apply forgets exactly the records beyond MAX_AUDIT_RECORDS, so removing the oldest
 * shows); at the end, the last record must be the head the member applied, by number
 * and hash. Returns null, or the first thing that does not hold.
 */
export class ChainCheck {
  private last: AuditRecord | null = null;
  private first = true;
  checked = 0;

  constructor(private readonly after = 0) {}

  page(p: AuditPageFacts): { seq: number; problem: string } | null {
    if (this.first && this.after === 0) {
      this.first = false;
      const keeps = Math.max(1, p.newest - MAX_AUDIT_RECORDS + 1);
      if (p.oldest !== keeps) return { seq: p.oldest, problem: `is named the oldest, but with ${p.newest} records written the log keeps from ${keeps}: records were removed at its start` };
      const head = p.records[0];
      if (head !== undefined && head.seq !== p.oldest) return { seq: p.oldest, problem: `is missing: the log starts at record ${head.seq}, but keeps from ${p.oldest}` };
    }
    const broken = verifyChain(p.records, this.last?.hash ?? null);
    if (broken !== null) return broken;
    this.checked += p.records.length;
    this.last = p.records.at(-1) ?? this.last;
    if (p.next !== undefined) return null;
    // Reported once every link held: a changed record is named more exactly by its chain.
    if (p.problem !== undefined) return { seq: p.newest, problem: p.problem };
    const lastSeq = this.last?.seq ?? this.after;
    if (lastSeq < p.newest) return { seq: lastSeq + 1, problem: `is missing: the log ends at record ${lastSeq}, but its head is record ${p.newest}` };
    if (p.head !== undefined && this.last !== null && this.last.seq === p.newest && this.last.hash !== p.head) {
      return { seq: this.last.seq, problem: 'is not the head the member applied: its hash differs' };
    }
    return null;
  }
}
