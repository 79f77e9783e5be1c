// The audit log's hash chain: each record's hash covers its fields and the hash
// of the record before it, so editing, removing or reordering any record breaks
// every link after it. Pure, shared by apply (which computes the hashes, the
// same on every member) and by whoever verifies a log it read (vera audit --verify).
import { createHash } from 'node:crypto';
import type { AuditFact, AuditRecord } from './wire.js';

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
