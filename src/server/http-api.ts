// The plain-HTTP endpoints of the client port: one-list reads, status, health,
// metrics and backups. Answered by any member; only linearizable reads involve the leader.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeId, Role } from '../raft/types.js';
import { validatePath } from '../keys/path.js';
import { serveBackup } from './backup.js';
import { toVeraError, type FrontEnd } from './context.js';
import { ADMIN_PATHS, handleAdmin, type AdminContext } from './membership.js';
import { VeraError, type ErrorCode } from './protocol-errors.js';

const STATUS_OF: Partial<Record<ErrorCode, number>> = {
  BAD_REQUEST: 400,
  NOT_FOUND: 404,
  TOO_LARGE: 413,
  NOT_LEADER: 421,
  NO_LEADER: 503,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
};

export interface StatusSources {
  members(): Array<{ id: string; clientUrl: string | null; voter: boolean }>;
  /** The membership endpoints (/v1/members, /v1/leader/transfer; see membership.ts). */
  readonly admin: AdminContext;
}

export function handleHttp(fe: FrontEnd, src: StatusSources, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (ADMIN_PATHS.has(url.pathname)) {
    handleAdmin(src.admin, req, res, url.pathname);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: { code: 'BAD_REQUEST', message: `method ${req.method} is not allowed; use GET` } });
    return;
  }
  if (url.pathname === '/healthz') {
    const st = fe.node.status();
    const serving = st.leader !== null;
    sendText(res, serving ? 200 : 503, serving ? 'ok\n' : 'no leader\n');
    return;
  }
  if (url.pathname === '/metrics') {
    sendText(res, 200, fe.metrics.render(), 'text/plain; version=0.0.4; charset=utf-8');
    return;
  }
  if (url.pathname === '/v1/status') {
    sendJson(res, 200, status(fe, src));
    return;
  }
  if (url.pathname === '/v1/snapshot') {
    // A backup file (format in backup.ts), reflecting every write acknowledged before the request.
    const fail = (err: unknown): void => {
      const e = toVeraError(err, fe);
      sendJson(res, STATUS_OF[e.code] ?? 500, { error: { code: e.code, message: e.message, ...e.hints } });
    };
    void serveBackup(fe.node, req, res, { barrierTimeoutMs: fe.readTimeoutMs, logger: fe.logger, fail });
    return;
  }
  if (url.pathname === '/v1/data' || url.pathname.startsWith('/v1/data/')) {
    void readList(fe, url).then(
      (body) => sendJson(res, 200, body),
      (err: unknown) => {
        const e = toVeraError(err, fe);
        sendJson(res, STATUS_OF[e.code] ?? 500, { error: { code: e.code, message: e.message, ...e.hints } });
      },
    );
    return;
  }
  sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no endpoint ${url.pathname}` } });
}

async function readList(fe: FrontEnd, url: URL): Promise<{ index: number; items: readonly unknown[] }> {
  let path: string;
  try {
    path = decodeURIComponent(url.pathname.slice('/v1/data'.length));
  } catch {
    throw new VeraError('BAD_REQUEST', 'path is not valid percent-encoded UTF-8');
  }
  const problem = validatePath(path, { allowRoot: false });
  if (problem !== null) throw new VeraError('BAD_REQUEST', `bad path ${JSON.stringify(path)}: ${problem}`);
  const consistency = url.searchParams.get('consistency') ?? 'stale';
  if (consistency !== 'stale' && consistency !== 'linearizable') {
    throw new VeraError('BAD_REQUEST', `consistency must be "stale" or "linearizable", not ${JSON.stringify(consistency)}`);
  }
  if (consistency === 'linearizable') await fe.node.linearizableBarrier(fe.readTimeoutMs);
  const view = await fe.node.stateMachine.getList(path);
  return { index: view.index, items: view.items };
}

/** The body of GET /v1/status. */
export interface StatusBody {
  readonly id: string;
  readonly role: Role;
  readonly term: number;
  readonly commit: number;
  readonly applied: number;
  readonly lastIndex: number;
  readonly leader: NodeId | null;
  /** The leader's client URL (`ws://host:port`), or null. */
  readonly leaderUrl: string | null;
  readonly members: ReadonlyArray<{ readonly id: string; readonly clientUrl: string | null; readonly voter: boolean }>;
  /** Live sessions, as this member's state machine knows them. */
  readonly sessions: number;
}

function status(fe: FrontEnd, src: StatusSources): StatusBody {
  const st = fe.node.status();
  return {
    id: st.id,
    role: st.role,
    term: st.term,
    commit: st.commit,
    applied: fe.node.appliedIndex,
    lastIndex: st.lastIndex,
    leader: st.leader,
    leaderUrl: st.leader === null ? null : fe.clientUrl(st.leader),
    members: src.members(),
    sessions: fe.node.stateMachine.sessions().size,
  };
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  sendText(res, code, JSON.stringify(body) + '\n', 'application/json');
}

function sendText(res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
