// The plain-HTTP endpoints of the client port: one-list reads, status, health,
// metrics, backups, and the dashboard's files (/ui). Answered by any member; only linearizable reads involve the leader.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonText } from '../../protocol/json.js';
import type { NodeId, Role } from '../../raft/types.js';
import { serveBackup } from '../admin/backup.js';
import { serveList } from './http-list.js';
import { toVeraError, type FrontEnd } from '../front/context.js';
import type { PluginRoute } from '../../kit/plugin.js';
import { readJsonBody } from './http-body.js';
import { ADMIN_PATHS, handleAdmin, issueChallenge, type AdminContext } from '../admin/membership.js';
import { runFamilyOp } from '../guard/access.js';
import { VeraError, type ErrorCode, type FamilyRequest, type FamilyResult } from '../../protocol/index.js';
import { cluster } from '../../families/cluster/index.js';
import { COMMAND_VERSION } from '../../families/registry.js';
import { defaultUiDirectory, FAVICON_PATHS, isUiTarget, serveFavicon, serveUi, UI_PATH } from './ui-files.js';
import { readiness, type Readiness } from './health.js';
import { liveSessions } from '../../families/sessions/queries.js';

const STATUS_OF: Partial<Record<ErrorCode, number>> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  QUOTA_EXCEEDED: 429,
  RATE_LIMITED: 429,
  TOO_LARGE: 413,
  NOT_LEADER: 421,
  NO_LEADER: 503,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
};

/** The dashboard's files (dist/ui), found once beside the running server. */
const UI_DIRECTORY = defaultUiDirectory();

export interface StatusSources {
  members(): Array<{ id: string; clientUrl: string | null; voter: boolean }>;
  /** The membership endpoints (/v1/members, /v1/leader/transfer; see membership.ts). */
  readonly admin: AdminContext;
}

export function handleHttp(fe: FrontEnd, src: StatusSources, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  // Before anything routes on the parsed (normalised) path.
  if (isDataTarget(req.url ?? '/')) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendJson(res, 405, { error: { code: 'BAD_REQUEST', message: `method ${req.method} is not allowed; use GET` } });
      return;
    }
    serveList(fe, req, res, (response, err) => {
      const e = toVeraError(err, fe);
      sendError(response, e);
    });
    return;
  }
  // The dashboard's static files (ui-files.ts), judged on the raw target too.
  if (isUiTarget(req.url ?? '/')) {
    serveUi(UI_DIRECTORY, req, res, src.members().flatMap((m) => m.clientUrl ?? []));
    return;
  }
  if (ADMIN_PATHS.has(url.pathname)) {
    handleAdmin(src.admin, req, res, url.pathname);
    return;
  }
  const route = fe.familyHttp.find((r) => url.pathname === r.prefix || url.pathname.startsWith(`${r.prefix}/`));
  if (route !== undefined) {
    serveFamily(fe, route, req, res, url);
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: { code: 'BAD_REQUEST', message: `method ${req.method} is not allowed; use GET` } });
    return;
  }
  if (url.pathname === '/') {
    // Someone opened the member in a browser: the dashboard is what there is to see.
    res.writeHead(302, { location: `${UI_PATH}/`, 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(`the dashboard is at ${UI_PATH}/\n`);
    return;
  }
  if (FAVICON_PATHS.has(url.pathname)) {
    serveFavicon(req, res);
    return;
  }
  if (url.pathname === '/livez') {
    sendText(res, 200, 'ok\n');
    return;
  }
  if (url.pathname === '/healthz' || url.pathname === '/readyz') {
    // /healthz is the contract's "serving": a member is serving when it is ready (health.ts).
    const r = readinessOf(fe);
    sendText(res, r.ready ? 200 : 503, r.ready ? 'ok\n' : `not ready: ${r.reason}\n`);
    return;
  }
  if (url.pathname === '/metrics') {
    // Open like etcd's, unless the member was told to keep them for users with read on 'cluster'. With
    // authentication on, the families' metrics (which name journals, services and nodes: user data)
    // are shown only to a caller proving such a user; anyone else gets the member's own figures.
    const credentials = req.headers.authorization !== undefined;
    const admitted = fe.metricsNeedAuth || (fe.guard.enabled && credentials) ? fe.guard.admitHttp(req, [{ perm: 'read', resource: 'cluster' }], 'GET /metrics').then(() => true) : Promise.resolve(!fe.guard.enabled);
    void admitted
      .then((full) => Promise.all([fe.metrics.render(), ...(full ? fe.familyMetrics.map((render) => render().catch(() => '')) : [])]))
      .then(
        (parts) => sendText(res, 200, parts.filter((p) => p !== '').join('\n'), 'text/plain; version=0.0.4; charset=utf-8'),
        (err: unknown) => sendError(res, toVeraError(err, fe)),
      );
    return;
  }
  if (url.pathname === '/v1/challenge') {
    // Anyone may ask: a nonce proves nothing until answered with the cluster secret. Bounded per address and in all.
    try {
      sendJson(res, 200, issueChallenge(src.admin.challenges, req.socket.remoteAddress ?? 'unknown'));
    } catch (err) {
      const e = toVeraError(err, fe);
      const retryAfterMs = typeof e.hints.retryAfterMs === 'number' ? e.hints.retryAfterMs : 1000;
      res.setHeader('retry-after', String(Math.ceil(retryAfterMs / 1000)));
      sendJson(res, e.code === 'RATE_LIMITED' ? 429 : 500, { error: { code: e.code, message: e.message, ...e.hints } });
    }
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
      sendError(res, e);
    };
    // The whole database, session ids included: for operators only.
    src.admin.authorize(req, 'backups (GET /v1/snapshot)', new Uint8Array(0)).then(() => serveBackup(fe.node, req, res, { barrierTimeoutMs: fe.readTimeoutMs, logger: fe.logger, fail }), fail);
    return;
  }
  sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no endpoint ${url.pathname}` } });
}

/** A family's route: GET (and HEAD) always, POST with a JSON body when the family takes it. */
function serveFamily(fe: FrontEnd, route: PluginRoute, req: IncomingMessage, res: ServerResponse, url: URL): void {
  const rest = url.pathname.slice(route.prefix.length);
  const posts = route.post !== undefined;
  let answer: Promise<unknown>;
  if (req.method === 'GET' || req.method === 'HEAD') answer = Promise.resolve().then(() => answerFamilyOp(fe, req, route.get(rest, url)));
  else if (req.method === 'POST' && posts) answer = readJsonBody(req).then((body) => answerFamilyOp(fe, req, route.post!(rest, url, body)));
  else {
    sendJson(res, 405, { error: { code: 'BAD_REQUEST', message: `method ${req.method} is not allowed; use ${posts ? 'GET or POST' : 'GET'}` } });
    return;
  }
  answer.then(
    (body) => sendJson(res, 200, body),
    (err: unknown) => {
      const e = toVeraError(err, fe);
      sendError(res, e);
    },
  );
}

/** A family op an HTTP request names, judged like a WebSocket request and run without a session. */
async function answerFamilyOp(fe: FrontEnd, req: IncomingMessage, request: FamilyRequest): Promise<FamilyResult> {
  const op = fe.familyOps.get(request.op);
  if (op === undefined) throw new VeraError('NOT_FOUND', `no command family answers ${request.op}`);
  const principal = await fe.guard.principalOfHttp(req, op.needs(request));
  return runFamilyOp(fe, op, request, { principal, remote: req.socket.remoteAddress ?? 'unknown', session: '', frameBytes: 0, what: `${req.method ?? 'GET'} ${req.url ?? ''} (${request.op})` });
}

/** Judged on the raw target: URL parsing would turn /v1/data/../status into /v1/status. */
function isDataTarget(target: string): boolean {
  const path = target.split('?', 1)[0]!;
  return path === '/v1/data' || path.startsWith('/v1/data/');
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
  /** The command version this member applies, and the one the cluster runs (docs/architecture.md). */
  readonly commandVersion: { readonly applies: number; readonly active: number };
  /** Whether authentication is on: the dashboard asks for a login first instead of knocking without credentials (a failure the audit log would record). */
  readonly authentication: boolean;
}

function readinessOf(fe: FrontEnd): Readiness {
  const st = fe.node.status();
  return readiness({
    leader: st.leader,
    active: fe.node.stateMachine.stateOf(cluster).active,
    applies: COMMAND_VERSION,
    selfId: st.id,
    members: [...st.config.voters, ...st.config.learners],
    peers: fe.peerCommandVersions,
  });
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
    sessions: liveSessions(fe.node.stateMachine).size,
    commandVersion: { applies: COMMAND_VERSION, active: fe.node.stateMachine.stateOf(cluster).active },
    authentication: fe.guard.enabled,
  };
}

/** An error as JSON, with its status; one to retry later (RATE_LIMITED, NO_LEADER, ...) says when in Retry-After (whole seconds). */
function sendError(res: ServerResponse, e: VeraError): void {
  const retryAfterMs = e.hints.retryAfterMs;
  if (retryAfterMs !== undefined) res.setHeader('retry-after', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
  sendJson(res, STATUS_OF[e.code] ?? 500, { error: { code: e.code, message: e.message, ...e.hints } });
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  sendText(res, code, jsonText(body) + '\n', 'application/json');
}

function sendText(res: ServerResponse, code: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(code, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
