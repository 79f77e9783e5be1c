// What every panel shares: the live client (a WebSocket session on the leader,
// followed across leader changes by the client library), the token it logged in
// with, and HTTP calls to the member that served the page with that token.
import { connect, VeraError, type VeraClient } from '../client/index.js';
import { AuthClient } from '../families/auth/client.js';
import { parseMetrics, type Sample } from './prometheus.js';

const TOKEN_KEY = 'vera-dashboard-token';

export class Dashboard {
  constructor(
    readonly client: VeraClient,
    /** null: authentication is off. */
    readonly token: string | null,
    /** Who the session is, when authentication is on. */
    readonly user: string | null,
  ) {}

  /** An HTTP call to the member that served the page, as the dashboard's user; throws the server's error. */
  async http<T>(path: string, init: RequestInit = {}): Promise<T> {
    const headers = new Headers(init.headers);
    if (this.token !== null) headers.set('authorization', `Bearer ${this.token}`);
    if (init.body !== undefined) headers.set('content-type', 'application/json');
    const res = await fetch(path, { ...init, headers });
    const text = await res.text();
    const body = text === '' ? {} : (JSON.parse(text) as { error?: { code: string; message: string } });
    if (!res.ok) throw new VeraError((body.error?.code ?? 'INTERNAL') as never, body.error?.message ?? `HTTP ${res.status}`);
    return body as T;
  }

  /** The serving member's /metrics, parsed (charts and figures of every panel come from here). */
  async metrics(): Promise<Sample[]> {
    const res = await fetch('/metrics', { headers: this.token === null ? {} : { authorization: `Bearer ${this.token}` } });
    if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
    return parseMetrics(await res.text());
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** The WebSocket URL of the member that served the page. */
function memberUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}`;
}

/** Opens the dashboard's session: with the stored token, or without credentials; UNAUTHORIZED means log in first. */
export async function openDashboard(token: string | null = sessionStorage.getItem(TOKEN_KEY)): Promise<Dashboard> {
  // Without a token, ask first whether one is needed: a hello without credentials to a member with
  // authentication on is a failed authentication, recorded in the audit log at every page load.
  if (token === null && (await authenticationIsOn())) throw new VeraError('UNAUTHORIZED', 'authentication is on: log in');
  const client = await connect(memberUrl(), { encoding: 'json', timeoutMs: 30_000, ...(token === null ? {} : { token }) });
  const status = await new AuthClient(client).status();
  return new Dashboard(client, status.enabled ? token : null, status.user ?? null);
}

/** What GET /v1/status says of authentication; false when it does not say (an older member), so the page tries as before. */
async function authenticationIsOn(): Promise<boolean> {
  try {
    const res = await fetch('/v1/status');
    return res.ok && ((await res.json()) as { authentication?: unknown }).authentication === true;
  } catch {
    return false;
  }
}

/** Logs in over HTTP (POST /v1/auth/login) and keeps the token for this tab. */
export async function logIn(user: string, password: string): Promise<Dashboard> {
  const res = await fetch('/v1/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user, password }) });
  const body = (await res.json()) as { token?: string; error?: { code: string; message: string } };
  if (!res.ok || body.token === undefined) throw new VeraError((body.error?.code ?? 'UNAUTHORIZED') as never, body.error?.message ?? `HTTP ${res.status}`);
  sessionStorage.setItem(TOKEN_KEY, body.token);
  return openDashboard(body.token);
}

export function hasStoredToken(): boolean {
  return sessionStorage.getItem(TOKEN_KEY) !== null;
}

/** Forgets the token here and revokes it on the cluster, so a copy of it (taken from this tab) is good for nothing. */
export async function logOut(): Promise<void> {
  const token = sessionStorage.getItem(TOKEN_KEY);
  sessionStorage.removeItem(TOKEN_KEY);
  if (token === null) return;
  await fetch('/v1/auth/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) }).catch(() => undefined);
}

export function isUnauthorized(err: unknown): boolean {
  return err instanceof VeraError && err.code === 'UNAUTHORIZED';
}

export function describe(err: unknown): string {
  return err instanceof VeraError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
}
