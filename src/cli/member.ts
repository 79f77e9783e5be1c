// `vera member list|add|promote|remove` and `vera leader transfer`: the
// membership endpoints of the client port over HTTP (see src/server/admin/membership.ts).
// Writes must reach the leader: a 421 NOT_LEADER answer names it and is followed;
// a 503 with retryAfterMs (no leader yet, another change pending) is retried
// until --timeout runs out.
import { httpBaseUrl } from '../client/urls.js';
import { SECRET_ENV } from './config.js';
import { devClusterSecret } from './dev-secret.js';
import { operatorHeaders } from './operator-call.js';
import { boolFlag, stringFlag, type FlagSpecs, type ParsedArgs } from './args.js';
import { serverList, timeoutArg } from './client-commands.js';
import { EXIT, UsageError } from './errors.js';
import type { CliIO } from './io.js';
import type { TlsClientOptions } from '../client/connection.js';
import { cliFetch, tlsClientOptions, TLS_FLAGS } from './tls-options.js';

export const ADMIN_FLAGS: FlagSpecs = {
  server: { kind: 'string' },
  secret: { kind: 'string' },
  json: { kind: 'boolean' },
  timeout: { kind: 'string' },
  peer: { kind: 'string' },
  client: { kind: 'string' },
  ...TLS_FLAGS,
  help: { kind: 'boolean', short: 'h' },
};

/** How many NOT_LEADER redirects one command follows before giving up (leadership is moving). */
const MAX_REDIRECTS = 3;

interface Request {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: object;
}

interface Target {
  /** Asked in turn when one cannot be reached (see call). */
  readonly servers: readonly string[];
  readonly secret: string | null;
  readonly timeoutMs: number;
  /** CA and client certificate for https:// servers. */
  readonly tls: TlsClientOptions;
}

type Reply = { readonly ok: true; readonly body: Record<string, unknown> } | { readonly ok: false; readonly exit: number };

/** `vera member ...` (verb 'member') or `vera leader ...` (verb 'leader'), parsed args in hand. */
export async function runAdmin(verb: 'member' | 'leader', args: ParsedArgs, io: CliIO): Promise<number> {
  const [sub, ...rest] = args.positionals;
  const target: Target = {
    servers: serverList(args, io),
    secret: stringFlag(args, 'secret') ?? nonEmpty(io.env[SECRET_ENV]) ?? devClusterSecret(io),
    timeoutMs: timeoutArg(args),
    tls: tlsClientOptions(args, io),
  };
  const json = boolFlag(args, 'json');
  const addOnly = ['peer', 'client'].filter((f) => args.flags.has(f));
  if (!(verb === 'member' && sub === 'add') && addOnly.length > 0) {
    throw new UsageError(`--${addOnly[0]!} is only for 'vera member add'`);
  }
  if (verb === 'leader') {
    if (sub !== 'transfer') throw new UsageError(`expected 'vera leader transfer ID', got ${JSON.stringify(sub ?? '')}`);
    const to = oneId(rest, 'leader transfer');
    const reply = await call(target, { method: 'POST', path: '/v1/leader/transfer', body: { to } }, io);
    if (!reply.ok) return reply.exit;
    io.stdout(json ? `${JSON.stringify(reply.body)}\n` : `${String(reply.body.leader)} is the leader now (${String(reply.body.leaderUrl)})\n`);
    return EXIT.ok;
  }
  let request: Request;
  let done: (body: Record<string, unknown>) => string;
  switch (sub) {
    case 'list': {
      if (rest.length > 0) throw new UsageError(`'vera member list' takes no arguments, got ${rest.join(' ')}`);
      const reply = await listFromLeader(target, io);
      if (!reply.ok) return reply.exit;
      io.stdout(json ? `${JSON.stringify(reply.body)}\n` : `${formatMembers(reply.body)}\n`);
      return EXIT.ok;
    }
    case 'add': {
      const id = oneId(rest, 'member add');
      const peer = stringFlag(args, 'peer');
      const client = stringFlag(args, 'client');
      if (peer === undefined || client === undefined) throw new UsageError("'vera member add' needs --peer HOST:PORT and --client HOST:PORT");
      request = { method: 'POST', path: '/v1/members', body: { action: 'add', id, peer, client } };
      done = (b) => `added ${id} as a learner at index ${String(b.index)}; start it with 'vera start --id ${id} --join ...', then promote it once it has caught up`;
      break;
    }
    case 'promote': {
      const id = oneId(rest, 'member promote');
      request = { method: 'POST', path: '/v1/members', body: { action: 'promote', id } };
      done = (b) => `promoted ${id} to voter at index ${String(b.index)}`;
      break;
    }
    case 'remove': {
      const id = oneId(rest, 'member remove');
      request = { method: 'POST', path: '/v1/members', body: { action: 'remove', id } };
      done = (b) => `removed ${id} at index ${String(b.index)}`;
      break;
    }
    default:
      throw new UsageError(`expected one of: list, add, promote, remove; got ${JSON.stringify(sub ?? '')}`);
  }
  const reply = await call(target, request, io);
  if (!reply.ok) return reply.exit;
  io.stdout(json ? `${JSON.stringify(reply.body)}\n` : `${done(reply.body)}\n${formatMembers(reply.body)}\n`);
  return EXIT.ok;
}

/** Members as the leader sees them (with replication progress); the asked member's view if the leader cannot be reached. */
async function listFromLeader(target: Target, io: CliIO): Promise<Reply> {
  const first = await call(target, { method: 'GET', path: '/v1/members' }, io);
  if (!first.ok || first.body.role === 'leader' || typeof first.body.leaderUrl !== 'string') return first;
  const silent: CliIO = { ...io, stderr: () => undefined };
  const fromLeader = await call({ ...target, servers: [first.body.leaderUrl] }, { method: 'GET', path: '/v1/members' }, silent);
  return fromLeader.ok ? fromLeader : first;
}

async function call(target: Target, request: Request, io: CliIO): Promise<Reply> {
  const deadline = performance.now() + target.timeoutMs;
  const untried = [...target.servers];
  let server = untried.shift()!;
  let redirects = 0;
  for (;;) {
    const url = `${httpBaseUrl(server)}${request.path}`;
    let response: Response;
    try {
      // A challenge answered with the secret, not the secret itself: it may cross a network.
      const body = request.body === undefined ? undefined : JSON.stringify(request.body);
      const headers = await operatorHeaders(httpBaseUrl(server), target.secret, request.method, request.path, undefined, target.tls, Buffer.from(body ?? '', 'utf8'));
      if (body !== undefined) headers['content-type'] = 'application/json';
      response = await cliFetch(url, {
        method: request.method,
        headers,
        ...(body === undefined ? {} : { body }),
        // With more servers to try, this one gets its share of the time left, not all of it.
        signal: AbortSignal.timeout(Math.max(1, Math.ceil((deadline - performance.now()) / (untried.length + 1)))),
      }, target.tls);
    } catch (error) {
      io.stderr(`vera: cannot reach ${url}: ${causeOf(error)}\n`);
      // Another server is asked only when this request surely did nothing: a read, or a refused connection.
      const next = untried.shift();
      if (next !== undefined && (request.method === 'GET' || refused(error))) {
        server = next;
        continue;
      }
      return { ok: false, exit: EXIT.cannotConnect };
    }
    const text = await response.text();
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      io.stderr(`vera: ${url} answered ${response.status} with something other than a JSON object: ${text.slice(0, 200)}\n`);
      return { ok: false, exit: EXIT.serverError };
    }
    if (response.ok) return { ok: true, body };
    const error = (typeof body.error === 'object' && body.error !== null ? body.error : {}) as Record<string, unknown>;
    if (error.code === 'NOT_LEADER' && typeof error.leader === 'string' && redirects < MAX_REDIRECTS) {
      redirects++;
      server = error.leader;
      continue;
    }
    const retryAfter = typeof error.retryAfterMs === 'number' ? error.retryAfterMs : null;
    if (response.status === 503 && retryAfter !== null && performance.now() + retryAfter < deadline) {
      await new Promise((resolve) => setTimeout(resolve, retryAfter));
      continue;
    }
    io.stderr(`vera: ${String(error.code ?? response.status)}: ${String(error.message ?? text.slice(0, 200))}\n`);
    return { ok: false, exit: EXIT.serverError };
  }
}

function refused(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  return typeof cause === 'object' && cause !== null && (cause as { code?: unknown }).code === 'ECONNREFUSED';
}

/** One line per member: id, role, addresses, and the leader's view of its progress. */
export function formatMembers(body: Record<string, unknown>): string {
  const members = Array.isArray(body.members) ? (body.members as Array<Record<string, unknown>>) : [];
  const rows = members.map((m) => [
    String(m.id),
    String(m.role),
    `peer=${String(m.peer ?? '?')}`,
    `client=${String(m.client ?? '?')}`,
    m.match === undefined ? '' : `match=${String(m.match)} lag=${String(m.lag)}`,
    m.id === body.leader ? '(leader)' : '',
  ]);
  const widths = rows.reduce<number[]>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  const lines = rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
  const view = body.role === 'leader' ? `as seen by leader ${String(body.id)}` : `as seen by ${String(body.id)} (${String(body.role)}; leader ${String(body.leader ?? 'unknown')})`;
  return [`members ${view}:`, ...lines.map((l) => `  ${l}`)].join('\n');
}

function oneId(rest: readonly string[], what: string): string {
  if (rest.length !== 1) throw new UsageError(`'vera ${what}' takes exactly one member id, got ${rest.length === 0 ? 'none' : rest.join(' ')}`);
  return rest[0]!;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function causeOf(error: unknown): string {
  if (error instanceof Error && error.cause instanceof Error) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}
