// The audit family's server part: the leader writes what the guard gathered
// (src/server/guard/access.ts) in entries of up to MAX_FACTS_PER_ENTRY facts, one
// entry in flight at a time; admins read the log a page at a time over the
// WebSocket (audit.list) or HTTP (GET /v1/audit?after=N&limit=N).
import { VeraError, type FamilyRequest, type FamilyResult } from '../../protocol/index.js';
import type { Need } from '../../server/guard/access.js';
import { suppressedWhat } from '../../server/guard/audit-queue.js';
import type { FrontEnd } from '../../server/front/context.js';
import { familyOps, type FamilyHttpRoute, type FamilyOpCall, type LeaderDuty, type ServerPart } from '../../server/front/family-part.js';
import type { AuditFact } from './chain.js';
import { audit, decodeRecord, MAX_FACTS_PER_ENTRY, recordKey, RECORD_RANGE } from './index.js';
import { AUDIT_OPS, AUDIT_PAGE } from './wire.js';

const writing = new WeakSet<FrontEnd>();

const flush: LeaderDuty = {
  name: 'audit-flush',
  periodMs: 200,
  tick: (fe) => {
    if (writing.has(fe)) return;
    const taken = fe.guard.takeAuditFacts(MAX_FACTS_PER_ENTRY - 1);
    const suppressed = suppressedWhat(taken.suppressed);
    if (taken.facts.length === 0 && suppressed === null) return;
    const facts: AuditFact[] = taken.facts.map((f) => ({ at: f.at, kind: f.kind, principal: f.principal, remote: f.remote, what: f.what }));
    if (suppressed !== null) facts.push({ at: Date.now(), kind: 'dropped', principal: null, remote: '', what: suppressed });
    writing.add(fe);
    fe.node
      .propose({ family: 'audit', op: 'append', facts } as never)
      .then(
        (outcome) => {
          if (!outcome.result.ok) fe.logger.error({ event: 'audit-refused', message: outcome.result.message }, 'the audit log refused facts');
        },
        (err: unknown) => {
          // Not written (leadership lost, or the cluster is not at the audit's version yet): kept for the next try.
          fe.guard.returnAuditFacts(taken);
          fe.logger.debug({ event: 'audit-write-failed', err: String(err) }, 'audit facts not written yet');
        },
      )
      .finally(() => writing.delete(fe));
  },
};

async function list(fe: FrontEnd, after: number, limit: number): Promise<FamilyResult> {
  const state = fe.node.stateMachine.stateOf(audit);
  const records = await fe.node.stateMachine.read('audit log', async (db, snapshot) => {
    const out = [];
    for await (const [key, value] of db.iterator({ gt: recordKey(after), lt: RECORD_RANGE.lt, limit, snapshot })) out.push(decodeRecord(key, value));
    return out;
  });
  const last = records.at(-1);
  // The head and the window's start let a reader see records missing at either end (chain.ts, ChainCheck).
  return {
    records,
    oldest: state.oldest,
    newest: state.seq,
    head: state.hash,
    ...(state.problem === null ? {} : { problem: state.problem }),
    ...(last !== undefined && last.seq < state.seq ? { next: last.seq } : {}),
  };
}

const handlers: Record<string, (call: FamilyOpCall) => Promise<FamilyResult>> = {
  'audit.list': ({ fe, request: r }) => list(fe, (r.after as number | undefined) ?? 0, (r.limit as number | undefined) ?? AUDIT_PAGE),
};

const NEEDS: Record<string, (r: FamilyRequest) => readonly Need[]> = {
  'audit.list': () => [{ perm: 'read', resource: 'audit' }],
};

/** GET /v1/audit?after=N&limit=N: a page of records, as audit.list answers. */
const http: FamilyHttpRoute = {
  prefix: '/v1/audit',
  get: (fe, rest, url) => {
    if (rest !== '' && rest !== '/') throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
    const fields: Record<string, unknown> = {};
    for (const name of ['after', 'limit']) {
      const v = url.searchParams.get(name);
      if (v !== null) fields[name] = /^\d+$/.test(v) ? Number(v) : v;
    }
    return AUDIT_OPS.get('audit.list')!(fields, 0, fe.limits);
  },
};

export const server: ServerPart = { protocolOps: familyOps('audit', AUDIT_OPS, handlers, NEEDS), duties: [flush], http: [http] };
