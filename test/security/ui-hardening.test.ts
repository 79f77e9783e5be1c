// The dashboard keeps an admin's token in the browser: its pages carry a
// Content-Security-Policy, answers are never content-sniffed, and logging out
// revokes the token on the cluster (a copy of it is good for nothing after).
import { afterEach, describe, expect, it } from 'vitest';
import { auth, MAX_REVOKED_TOKENS, type AuthCommand } from '../../src/families/auth/index.js';
import { AuthState } from '../../src/families/auth/state.js';
import type { PlanContext } from '../../src/statemachine/family.js';
import { dashboardPolicy } from '../../src/server/http/ui-files.js';
import { securedServer } from './secured.js';
import { WireClient } from '../server/wire-client.js';
import { startLeader } from '../server/fixture.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
afterEach(async () => {
  await vp?.stop();
  vp?.removeData();
  vp = null;
});

async function login(base: string, user: string, password: string): Promise<string> {
  const res = await fetch(`${base}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user, password }) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}

const logout = (base: string, body: unknown): Promise<Response> =>
  fetch(`${base}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** 'ok' when a hello with `token` is answered, else the refusal (its error as JSON). */
async function helloWith(url: string, token: string): Promise<string> {
  const c = await WireClient.connect(url, 'json');
  try {
    await c.hello({ timeoutMs: 10_000, token });
    return 'ok';
  } catch (err) {
    return String((err as Error).message);
  } finally {
    c.terminate();
  }
}

describe('headers', () => {
  it('a dashboard page has a Content-Security-Policy naming its members; every answer has nosniff', async () => {
    vp = await startLeader();
    const page = await fetch(`${vp.httpUrl}/ui/`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toBe(dashboardPolicy([vp.url]));
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).toContain(`connect-src 'self' ${vp.url}`);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    for (const path of ['/v1/status', '/v1/data/app', '/v1/nothing', '/v1/challenge', '/metrics', '/healthz']) {
      const res = await fetch(`${vp.httpUrl}${path}`);
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  });
});

describe('a token revocation, applied', () => {
  /** Applies `c` to `state` at time `now` as the store would: its writes, then its index updates. */
  const apply = (state: AuthState, c: AuthCommand, now: number): { ok: boolean; puts: number; dels: number } => {
    const ctx = { states: { of: () => state }, index: 1, now } as unknown as PlanContext;
    const plan = auth.plan(c, ctx);
    if (!('ops' in plan)) return { ok: false, puts: 0, dels: 0 };
    for (const f of plan.after) f();
    return { ok: true, puts: plan.ops.filter((o) => o.type === 'put').length, dels: plan.ops.filter((o) => o.type === 'del').length };
  };
  const digest = (n: number): string => n.toString(16).padStart(64, '0');

  it('is kept until its token would have expired, by the entry\'s clock, and bounded', () => {
    const state = new AuthState();
    expect(apply(state, { op: 'revokeToken', digest: digest(1), expiresAt: 2000 }, 1000)).toEqual({ ok: true, puts: 1, dels: 0 });
    expect(state.revoked.get(digest(1))).toBe(2000);
    // Again: nothing new. Already expired: nothing kept.
    expect(apply(state, { op: 'revokeToken', digest: digest(1), expiresAt: 2000 }, 1000)).toEqual({ ok: true, puts: 0, dels: 0 });
    expect(apply(state, { op: 'revokeToken', digest: digest(2), expiresAt: 900 }, 1000)).toEqual({ ok: true, puts: 0, dels: 0 });
    // Later revocations drop the ones whose tokens expired since.
    expect(apply(state, { op: 'revokeToken', digest: digest(3), expiresAt: 9000 }, 2500)).toEqual({ ok: true, puts: 1, dels: 1 });
    expect([...state.revoked.keys()]).toEqual([digest(3)]);
    for (let i = 0; i < MAX_REVOKED_TOKENS - 1; i++) state.revoked.set(digest(100 + i), 10_000);
    expect(apply(state, { op: 'revokeToken', digest: digest(4), expiresAt: 9000 }, 2500)).toEqual({ ok: false, puts: 0, dels: 0 });
    expect(state.revoked.size).toBe(MAX_REVOKED_TOKENS);
  });
});

describe('logout', () => {
  it('revokes that token on the server, kept across a restart; other tokens stay good', async () => {
    vp = await securedServer();
    const token = await login(vp.httpUrl, 'root', 'root-pw');
    const other = await login(vp.httpUrl, 'alice', 'alice-pw');
    expect(await helloWith(vp.url, token)).toBe('ok');
    expect((await fetch(`${vp.httpUrl}/v1/audit`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);

    const out = await logout(vp.httpUrl, { token });
    expect(out.status).toBe(200);
    expect(await helloWith(vp.url, token)).toMatch(/"code":"UNAUTHORIZED".*revoked/);
    expect((await fetch(`${vp.httpUrl}/v1/audit`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    expect(await helloWith(vp.url, other)).toBe('ok');
    // Again: no error. A token this cluster never issued: refused, nothing revoked.
    expect((await logout(vp.httpUrl, { token })).status).toBe(200);
    expect((await logout(vp.httpUrl, { token: 'vt1.forged.token' })).status).toBe(401);
    expect((await logout(vp.httpUrl, {})).status).toBe(400);

    // The revocation is replicated state, not memory: a restart keeps it.
    const dataDir = vp.dataDir;
    await vp.stop();
    vp = await startLeader({ dataDir });
    expect(await helloWith(vp.url, token)).toMatch(/"code":"UNAUTHORIZED".*revoked/);
    expect(await helloWith(vp.url, other)).toBe('ok');
  });
});
