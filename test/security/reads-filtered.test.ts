// Reads that must not show more than their caller may read, on a real server with
// authentication on: observe.session to a user who may read only 'cluster', /metrics
// without credentials, a range.paths cursor that stopped on a hidden list, and the
// address a failed login is audited with.
import { describe, expect, it } from 'vitest';
import type { AuditRecord } from '../../src/families/audit/chain.js';
import { WireClient } from '../server/wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';
import { endEachTest, securedServer } from './secured.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
endEachTest(wires, () => vp, () => (vp = null));

async function as(p: VeraProcess, hello: Record<string, unknown>): Promise<{ w: WireClient; session: string }> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  const r = await w.request('hello', { timeoutMs: 30_000, ...hello });
  if (r.ok !== true) throw new Error(JSON.stringify(r.error));
  return { w, session: r.session as string };
}

/** root, plus olga, whose only grant is read on 'cluster' (what the dashboard's observer needs). */
async function withObserver(p: VeraProcess): Promise<WireClient> {
  const { w: root } = await as(p, { user: 'root', password: 'root-pw' });
  await root.call('auth.roleAdd', { name: 'observer' });
  await root.call('auth.roleGrant', { name: 'observer', prefix: 'cluster', perms: ['read'] });
  await root.call('auth.userAdd', { name: 'olga', password: 'olga-pw' });
  await root.call('auth.userGrant', { name: 'olga', role: 'observer' });
  return root;
}

async function metrics(p: VeraProcess, token?: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${p.clientPort}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

describe('reads filtered by what the caller may read', () => {
  it("observe.session shows a user who may read only 'cluster' that a session exists, not the paths it holds or watches", async () => {
    vp = await securedServer();
    const root = await withObserver(vp);
    const { w: alice, session } = await as(vp, { user: 'alice', password: 'alice-pw' });
    await alice.call('push', { path: '/pub/alices-item', data: 1 });
    await alice.call('watch', { path: '/app/alices-watch' });
    const { w: olga } = await as(vp, { user: 'olga', password: 'olga-pw' });
    const seen = await olga.call('observe.session', { session });
    expect(seen).toMatchObject({ session, live: true, principal: 'alice', items: [], watchList: [] });
    // root may read everything, and sees it all.
    const full = await root.call('observe.session', { session });
    expect((full.items as Array<{ path: string }>).map((i) => i.path)).toEqual(['/pub/alices-item']);
    expect((full.watchList as Array<{ path: string }>).map((w) => w.path).sort()).toEqual(['/app/alices-watch', '/pub/alices-item']);
  });

  it('/metrics without credentials names no journal; a user with read on cluster sees them', async () => {
    vp = await securedServer();
    const root = await withObserver(vp);
    await root.call('journal.create', { name: 'payroll-runs' });
    expect(await metrics(vp)).not.toContain('payroll-runs');
    expect(await metrics(vp)).toContain('vera_raft_term');
    const { token } = await root.call('auth.login', { user: 'olga', password: 'olga-pw' });
    expect(await metrics(vp, String(token))).toContain('payroll-runs');
  });

  it('a range.paths page that stops on a list the caller may not read does not name it in next', async () => {
    vp = await securedServer();
    const { w: root } = await as(vp, { user: 'root', password: 'root-pw' });
    // More hidden lists than one page looks at (10,000), then one alice may read: 64 lists a transaction.
    const hidden = Array.from({ length: 10_048 }, (_, i) => `/app/secret/l${String(i).padStart(5, '0')}`);
    for (let i = 0; i < hidden.length; i += 64 * 8) {
      await Promise.all(
        Array.from({ length: 8 }, (_, j) => hidden.slice(i + j * 64, i + (j + 1) * 64)).filter((b) => b.length > 0).map((batch) => root.call('txn', { compare: [], success: batch.map((path) => ({ op: 'push', path, data: 0, persistent: true })), failure: [] })),
      );
    }
    await root.call('push', { path: '/app/visible', data: 1, persistent: true });
    const { w: alice } = await as(vp, { user: 'alice', password: 'alice-pw' });
    const seen: string[] = [];
    const cursors: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 5; pages++) {
      const page = await alice.call('range.paths', { prefix: '/app', ...(after === undefined ? {} : { after }) });
      seen.push(...(page.paths as Array<{ path: string }>).map((p) => p.path));
      if (page.next === undefined) break;
      after = String(page.next);
      cursors.push(after);
    }
    expect(seen).toEqual(['/app/visible']);
    expect(cursors.length).toBeGreaterThan(0);
    for (const c of cursors) expect(c).not.toContain('secret');
    // A cursor is the server's own: one made up is refused.
    expect((await alice.request('range.paths', { prefix: '/app', after: '~bm90LWEtY3Vyc29y' })).error?.code).toBe('BAD_REQUEST');
  }, 120_000);

  it("audits a failed auth.login with the client's address, not 'login'", async () => {
    vp = await securedServer();
    const { w: anon } = await as(vp, { user: 'alice', password: 'alice-pw' });
    expect((await anon.request('auth.login', { user: 'bob', password: 'not-bobs' })).error?.code).toBe('UNAUTHORIZED');
    const { w: root } = await as(vp, { user: 'root', password: 'root-pw' });
    const deadline = Date.now() + 10_000;
    let failed: AuditRecord | undefined;
    while (failed === undefined && Date.now() < deadline) {
      failed = ((await root.call('audit.list', {})).records as AuditRecord[]).find((r) => r.kind === 'auth-failed' && r.principal === 'bob');
      if (failed === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    expect(failed?.remote).toMatch(/^127\.0\.0\.1(:\d+)?$/);
  });
});
