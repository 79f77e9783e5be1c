// The audit family's server side, on the kit: the leader writes what the guard
// gathered (src/server/guard/access.ts) in entries of up to MAX_FACTS_PER_ENTRY
// facts, one entry in flight at a time; admins read the log a page at a time over
// the WebSocket (audit.list) or HTTP (GET /v1/audit?after=N&limit=N).
import { VeraError } from '../../protocol/index.js';
import { opRequest, type FamilyHost, type Plugin, type PluginServer } from '../../kit/index.js';
import type { AuditFact } from './chain.js';
import { decodeRecord, MAX_FACTS_PER_ENTRY, recordKey, RECORD_RANGE, type AppendCommand, type AuditState } from './index.js';
import { AUDIT_PAGE, AUDIT_SCHEMAS, type AuditPage } from './wire.js';

type Ops = typeof AUDIT_SCHEMAS;

function createServer(host: FamilyHost<AuditState, unknown, AppendCommand>): PluginServer<Ops> {
  let writing = false;

  const flush = (): void => {
    if (writing) return;
    const taken = host.access.takeAuditFacts(MAX_FACTS_PER_ENTRY - 1);
    if (taken.facts.length === 0 && taken.suppressed === null) return;
    const facts: AuditFact[] = taken.facts.map((f) => ({ at: f.at, kind: f.kind, principal: f.principal, remote: f.remote, what: f.what }));
    if (taken.suppressed !== null) facts.push({ at: Date.now(), kind: 'dropped', principal: null, remote: '', what: taken.suppressed });
    writing = true;
    // A duty's entry: never forwarded (made only while this member leads).
    host.leaderOnly
      .proposeOutcome({ op: 'append', facts })
      .then(
        (outcome) => {
          if (!outcome.ok) host.log.error({ event: 'audit-refused', message: outcome.message }, 'the audit log refused facts');
        },
        (err: unknown) => {
          // Not written (leadership lost, or the cluster is not at the audit's version yet): kept for the next try.
          taken.giveBack();
          host.log.debug({ event: 'audit-write-failed', err: String(err) }, 'audit facts not written yet');
        },
      )
      .finally(() => (writing = false));
  };

  const list = async (after: number, limit: number): Promise<AuditPage> => {
    const state = host.state();
    const records = await host.reader.read('audit log', async (db, snapshot) => {
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
  };

  return {
    handlers: {
      list: ({ after = 0, limit = AUDIT_PAGE }) => list(after, limit),
    },
    duties: [{ name: 'audit-flush', periodMs: 200, tick: flush }],
    http: [
      /** GET /v1/audit?after=N&limit=N: a page of records, as audit.list answers. */
      {
        prefix: '/v1/audit',
        get: (rest, url) => {
          if (rest !== '' && rest !== '/') throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
          const fields: Record<string, unknown> = {};
          for (const name of ['after', 'limit']) {
            const v = url.searchParams.get(name);
            if (v !== null) fields[name] = /^\d+$/.test(v) ? Number(v) : v;
          }
          return opRequest(AUDIT_SCHEMAS.list, fields, host.limits);
        },
      },
    ],
  };
}

export const plugin: Plugin<Ops, AuditState, unknown, AppendCommand> = {
  ops: AUDIT_SCHEMAS,
  needs: { list: () => [{ perm: 'read', resource: 'audit' }] },
  touchesNoLists: 'the audit log lives in its own bucket',
  createServer,
};
