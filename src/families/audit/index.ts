// The audit family: authentication failures, permission denials and what
// operators did, replicated through Raft as a hash chain (chain.ts), so every
// member holds the same log and an edited record shows (docs/security.md).
// The server gathers the facts (src/server/guard/access.ts) and the leader writes
// them in batches (server.ts); apply numbers and chains them, and forgets the
// oldest beyond MAX_AUDIT_RECORDS.
import { bucketPrefix, decodeIndex, encodeIndex } from '../../keys/index.js';
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import { CommandError, type BatchOp, type DbSnapshot, type Family, type Plan, type PlanContext } from '../../statemachine/family.js';
import { MAX_AUDIT_RECORDS } from './wire.js';
import { AUDIT_KINDS, GENESIS, recordHash, type AuditFact, type AuditKind, type AuditRecord } from './chain.js';

export const AUDIT_SINCE = 7;
export const AUDIT_BUCKET = 0x001d;
export { MAX_AUDIT_RECORDS } from './wire.js';
export const MAX_FACTS_PER_ENTRY = 64;
export const MAX_WHAT_LENGTH = 512;

/** The log's head: [seq, hash, oldest] of the newest record written and the oldest kept. */
export const HEAD_KEY = Buffer.concat([bucketPrefix(AUDIT_BUCKET), Buffer.from('head', 'utf8')]);

export function encodeHead(seq: number, hash: string, oldest: number): Buffer {
  return pack([seq, hash, oldest]);
}
const RECORD_PREFIX = Buffer.concat([bucketPrefix(AUDIT_BUCKET), Buffer.from('r', 'utf8')]);

export function recordKey(seq: number): Buffer {
  return Buffer.concat([RECORD_PREFIX, encodeIndex(seq)]);
}

export const RECORD_RANGE = { gte: recordKey(0), lt: Buffer.concat([RECORD_PREFIX, Buffer.alloc(8, 0xff)]) };

export function encodeRecord(r: AuditRecord): Buffer {
  return pack([r.at, r.kind, r.principal, r.remote, r.what, r.prev, r.hash]);
}

export function decodeRecord(key: Buffer, value: Uint8Array): AuditRecord {
  const v = unpack(value);
  if (!Array.isArray(v) || v.length !== 7) throw new CorruptValueError('an audit record is not [at, kind, principal, remote, what, prev, hash]');
  const [at, kind, principal, remote, what, prev, hash] = v as unknown[];
  if (typeof at !== 'number' || !AUDIT_KINDS.includes(kind as AuditKind) || (principal !== null && typeof principal !== 'string') || typeof remote !== 'string' || typeof what !== 'string' || typeof prev !== 'string' || typeof hash !== 'string') {
    throw new CorruptValueError('an audit record has fields of the wrong types');
  }
  return { seq: decodeIndex(key, RECORD_PREFIX.length), at, kind: kind as AuditKind, principal, remote, what, prev, hash };
}

export class AuditState {
  /** The last record's number (0: none yet) and hash. */
  seq = 0;
  hash = GENESIS;
  /** The oldest record kept (seq of the first; 1 when none was forgotten). */
  oldest = 1;
  /** Not replicated: what this member found wrong with its newest records at start (head-check.ts), or null. */
  problem: string | null = null;

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<AuditState> {
    const state = new AuditState();
    const raw = await db.get(HEAD_KEY, { snapshot });
    if (raw !== undefined) {
      const v = unpack(raw);
      if (!Array.isArray(v) || typeof v[0] !== 'number' || typeof v[1] !== 'string' || typeof v[2] !== 'number') throw new CorruptValueError('the audit head is not [seq, hash, oldest]');
      [state.seq, state.hash, state.oldest] = v as [number, string, number];
    }
    return state;
  }
}

export interface AppendCommand {
  readonly op: 'append';
  readonly facts: readonly AuditFact[];
}

function fact(raw: unknown): AuditFact {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CommandError('a fact must be a map');
  const f = raw as Record<string, unknown>;
  for (const k of Object.keys(f)) if (!['at', 'kind', 'principal', 'remote', 'what'].includes(k)) throw new CommandError(`a fact has an unexpected field '${k}'`);
  if (typeof f.at !== 'number' || !Number.isSafeInteger(f.at) || f.at < 0) throw new CommandError('at must be a time in milliseconds');
  if (!AUDIT_KINDS.includes(f.kind as AuditKind)) throw new CommandError(`kind must be one of ${AUDIT_KINDS.join(', ')}`);
  if (f.principal !== null && (typeof f.principal !== 'string' || f.principal.length > 128)) throw new CommandError('principal must be a user name or null');
  if (typeof f.remote !== 'string' || f.remote.length > 256) throw new CommandError('remote must be a string of at most 256 characters');
  if (typeof f.what !== 'string' || f.what.length > MAX_WHAT_LENGTH) throw new CommandError(`what must be a string of at most ${MAX_WHAT_LENGTH} characters`);
  return { at: f.at, kind: f.kind as AuditKind, principal: f.principal as string | null, remote: f.remote, what: f.what };
}

function append(c: AppendCommand, { states }: PlanContext): Plan {
  const state = states.of(audit);
  const ops: BatchOp[] = [];
  let { seq, hash, oldest } = state;
  for (const f of c.facts) {
    seq++;
    const record: AuditRecord = { ...f, seq, prev: hash, hash: recordHash(seq, f, hash) };
    ops.push({ type: 'put', key: recordKey(seq), value: encodeRecord(record) });
    hash = record.hash;
  }
  // Bounded: as many forgotten as written, once the log is full.
  while (seq - oldest + 1 > MAX_AUDIT_RECORDS) ops.push({ type: 'del', key: recordKey(oldest++) });
  ops.push({ type: 'put', key: HEAD_KEY, value: encodeHead(seq, hash, oldest) });
  const next = { seq, hash, oldest };
  return {
    result: { ok: true, op: 'family', family: 'audit', value: { op: 'append', last: seq } },
    ops,
    events: [],
    after: [() => Object.assign(state, next)],
  };
}

export const audit: Family<AppendCommand, AuditState> = {
  name: 'audit',
  since: AUDIT_SINCE,
  buckets: [{ id: AUDIT_BUCKET, name: 'audit log' }],
  ops: {
    append: {
      fields: ['facts'],
      since: AUDIT_SINCE,
      decode: (c) => {
        if (!Array.isArray(c.facts) || c.facts.length === 0 || c.facts.length > MAX_FACTS_PER_ENTRY) throw new CommandError(`facts must be a list of 1 to ${MAX_FACTS_PER_ENTRY}`);
        return { op: 'append', facts: c.facts.map(fact) };
      },
    },
  },
  load: (db, snapshot) => AuditState.load(db, snapshot),
  plan: append,
  // Plans from the head in memory, which each entry's after-step moves before the next entry is planned,
  // so audit entries share batches like any other (test/families/auth-audit-batching.test.ts).
  goesAlone: () => false,
  plugin: async () => (await import('./server.js')).plugin,
};
