// Shared set-up for the server conformance tests: start a real `vera` process,
// wait until it leads, open sessions, and read its HTTP endpoints.

import { VeraProcess, type VeraProcessOptions } from '../support/vera-process.js';
import { WireClient, type HelloResult, type WireEncoding } from './wire-client.js';

export const ENCODINGS: readonly WireEncoding[] = ['json', 'msgpack'];

/** Session timeout bounds every test server runs with, so tests can use short sessions. */
export const SESSION_TIMEOUT_MIN_MS = 100;
export const SESSION_TIMEOUT_MAX_MS = 60_000;
export const SESSION_FLAGS: readonly string[] = [
  '--session-timeout-min', String(SESSION_TIMEOUT_MIN_MS),
  '--session-timeout-max', String(SESSION_TIMEOUT_MAX_MS),
];

/** Starts a single-member server (with the short-session flags plus `args`) and waits until it leads. */
export async function startLeader(opts: VeraProcessOptions = {}): Promise<VeraProcess> {
  const vp = await VeraProcess.start({ ...opts, args: [...SESSION_FLAGS, ...(opts.args ?? [])] });
  await waitForLeadership(vp);
  return vp;
}

/** A single member elects itself; sessions can only be opened once it has. */
export async function waitForLeadership(vp: VeraProcess, timeoutMs = 20_000): Promise<void> {
  await vp.waitForLog((l) => l.event === 'role-changed' && l.role === 'leader', timeoutMs);
}

export interface Session {
  readonly client: WireClient;
  readonly hello: HelloResult;
}

/** Connects and says hello; `timeoutMs` defaults to a value long enough to outlive any one test. */
export async function openSession(vp: VeraProcess, encoding: WireEncoding, hello: Record<string, unknown> = {}): Promise<Session> {
  const client = await WireClient.connect(vp.url, encoding);
  const result = await client.hello({ timeoutMs: 30_000, ...hello });
  return { client, hello: result };
}

export interface HttpResult {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

export async function httpGet(vp: VeraProcess, path: string): Promise<HttpResult> {
  const res = await fetch(`${vp.httpUrl}${path}`, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

export async function httpJson(vp: VeraProcess, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await httpGet(vp, path);
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    throw new Error(`GET ${path} answered ${r.status} with a body that is not JSON: ${r.text.slice(0, 200)}`);
  }
  return { status: r.status, body: body as Record<string, unknown> };
}

export interface Status {
  readonly id: string;
  readonly role: string;
  readonly term: number;
  readonly commit: number;
  readonly applied: number;
  readonly leader: string | null;
  readonly leaderUrl: string | null;
  readonly members: Array<{ id: string; clientUrl: string | null; voter: boolean }>;
  readonly [field: string]: unknown;
}

export async function status(vp: VeraProcess): Promise<Status> {
  const { status: code, body } = await httpJson(vp, '/v1/status');
  if (code !== 200) throw new Error(`/v1/status answered ${code}: ${JSON.stringify(body)}`);
  return body as unknown as Status;
}

/** Percent-encodes each segment of a Vera path for /v1/data/<path>. */
export function dataUrl(path: string, consistency?: 'stale' | 'linearizable'): string {
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  return `/v1/data${encoded}${consistency === undefined ? '' : `?consistency=${consistency}`}`;
}

/** Calls `tick` every `everyMs` until `until` settles: paced keep-alive traffic, not synchronisation. */
export async function keepSending<T>(tick: () => void, everyMs: number, until: Promise<T>): Promise<T> {
  const timer = setInterval(tick, everyMs);
  try {
    return await until;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Calls `probe` until the cluster runs the command version it needs: a new cluster raises
 * its version as its first leader starts, and a family's ops are refused until then.
 */
export async function untilCommandVersion(probe: () => Promise<unknown>): Promise<void> {
  for (;;) {
    try {
      await probe();
      return;
    } catch (err) {
      if (!(err instanceof Error && /command version/.test(err.message))) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
