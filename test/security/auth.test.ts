// Users, roles and permissions on a real server process: authentication turned
// on over the wire, hello refused without credentials or with wrong ones, a
// role's allow and the deny below it, tokens from login, the session-hijack
// attempt by another user, and a permission revoked while a prefix watch is
// open (the watch stops at once and its owner is told).
import { describe, expect, it } from 'vitest';
import { startLeader, untilCommandVersion } from '../server/fixture.js';
import { endEachTest, securedServer } from './secured.js';
import { WireClient } from '../server/wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
endEachTest(wires, () => vp, () => (vp = null));

async function wire(p: VeraProcess): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  return w;
}

async function as(p: VeraProcess, hello: Record<string, unknown>): Promise<WireClient> {
  const w = await wire(p);
  await w.hello({ timeoutMs: 30_000, ...hello });
  return w;
}


describe('authentication and permissions', () => {
  it('refuses hellos without credentials or with wrong ones, and judges each op by the role', async () => {
    vp = await securedServer();
    const none = await wire(vp);
    expect((await none.request('hello', { timeoutMs: 30_000 })).error?.code).toBe('UNAUTHORIZED');
    const wrong = await wire(vp);
    const refused = await wrong.request('hello', { user: 'alice', password: 'nope' });
    expect(refused.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'wrong user name or password' });
    const half = await wire(vp);
    expect((await half.request('hello', { user: 'alice' })).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/password/) });
    const both = await wire(vp);
    expect((await both.request('hello', { token: 'vt1.x.y', user: 'alice', password: 'alice-pw' })).error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(/not both/) });
    const ghost = await wire(vp);
    expect((await ghost.request('hello', { user: 'mallory', password: 'x' })).error).toMatchObject({ code: 'UNAUTHORIZED', message: 'wrong user name or password' });

    const root = await as(vp, { user: 'root', password: 'root-pw' });
    await root.call('push', { path: '/app/config', data: 'v1', persistent: true });
    await root.call('push', { path: '/app/secret/key', data: 'k', persistent: true });

    const alice = await as(vp, { user: 'alice', password: 'alice-pw' });
    expect((await alice.call('get', { path: '/app/config' })).items).toHaveLength(1);
    expect((await alice.request('get', { path: '/app/secret/key' })).error?.code).toBe('FORBIDDEN');
    const denied = await alice.request('push', { path: '/app/config', data: 'v2' });
    expect(denied.error).toMatchObject({ code: 'FORBIDDEN', message: 'user alice may not write /app/config' });
    // Nothing changed: still one item.
    expect((await root.call('get', { path: '/app/config' })).items).toHaveLength(1);
    // ls shows only children alice may read something in.
    expect((await root.call('ls', { path: '/app' })).children).toEqual(['config', 'secret']);
    expect((await alice.call('ls', { path: '/app' })).children).toEqual(['config']);
    // Managing users is for admins on 'auth'.
    expect((await alice.request('auth.userAdd', { name: 'eve', password: 'x' })).error?.code).toBe('FORBIDDEN');
    expect(((await root.call('auth.users')).users as Array<{ name: string }>).map((u) => u.name)).toEqual(['alice', 'bob', 'root']);
  });

  it('issues tokens at login that work on hello until the password changes', async () => {
    vp = await securedServer();
    const alice = await as(vp, { user: 'alice', password: 'alice-pw' });
    const { token } = await alice.call('auth.login', { user: 'alice', password: 'alice-pw' });
    expect(token).toMatch(/^vt1\./);
    const byToken = await as(vp, { token });
    expect((await byToken.call('auth.status')).user).toBe('alice');
    const forged = await wire(vp);
    expect((await forged.request('hello', { token: `${String(token).slice(0, -4)}AAAA` })).error?.code).toBe('UNAUTHORIZED');
    const root = await as(vp, { user: 'root', password: 'root-pw' });
    await root.call('auth.userPasswd', { name: 'alice', password: 'new-pw' });
    const stale = await wire(vp);
    expect((await stale.request('hello', { token })).error).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(String((await stale.request('hello', { token })).error?.message)).toMatch(/changed or removed/);
    await as(vp, { user: 'alice', password: 'new-pw' });
  });

  it('refuses a session resumed by another user, even with its resume token', async () => {
    vp = await securedServer();
    const alice = await wire(vp);
    const hello = await alice.hello({ timeoutMs: 30_000, user: 'alice', password: 'alice-pw' });
    expect((hello as { user?: string }).user).toBe('alice');
    await alice.call('push', { path: '/pub/lock', data: 'alice' });
    alice.terminate();
    const bob = await wire(vp);
    const taken = await bob.request('hello', { user: 'bob', password: 'bob-pw', session: hello.session, resume: hello.resume! });
    expect(taken.error).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(String(taken.error?.message)).toMatch(/belongs to another user/);
    // alice herself may resume it, and her ephemeral item is still there.
    const back = await as(vp, { user: 'alice', password: 'alice-pw', session: hello.session, resume: hello.resume });
    expect((await back.call('get', { path: '/pub/lock' })).items).toHaveLength(1);
  });

  it('stops a prefix watch at once when its permission is revoked, and tells its owner', async () => {
    vp = await securedServer();
    const root = await as(vp, { user: 'root', password: 'root-pw' });
    const alice = await as(vp, { user: 'alice', password: 'alice-pw' });
    await alice.call('watch', { path: '/app', prefix: true });
    await alice.call('watch', { path: '/pub/news' });
    await root.call('push', { path: '/app/a', data: 1, persistent: true });
    await alice.waitEvent((e) => e.path === '/app/a', 'the first /app event');
    // Allowed below the watch, but the deny on /app/secret filters those events out.
    await root.call('push', { path: '/app/secret/s', data: 1, persistent: true });
    await root.call('push', { path: '/pub/news', data: 'first', persistent: true });
    await alice.waitEvent((e) => e.path === '/pub/news', 'the first /pub/news event');
    expect(alice.events().map((e) => e.path)).toEqual(['/app/a', '/pub/news']);

    await root.call('auth.roleRevoke', { name: 'reader', prefix: '/app' });
    const told = await alice.waitFrame((f) => Array.isArray((f.value as { revoked?: unknown } | undefined)?.revoked), 'the revoked notify');
    expect(told.value).toMatchObject({ op: 'notify', revoked: [{ path: '/app', prefix: true }] });
    await root.call('push', { path: '/app/b', data: 2, persistent: true });
    await root.call('push', { path: '/pub/news', data: 'second', persistent: true });
    await alice.waitEvents(3);
    // Events reach a session in log order: the /app/b push came first and was withheld.
    expect(alice.events().map((e) => e.path)).toEqual(['/app/a', '/pub/news', '/pub/news']);
    expect((await alice.request('get', { path: '/app/a' })).error?.code).toBe('FORBIDDEN');
  });

  it('keeps /metrics for users with read on cluster when told to, and open by default', async () => {
    const basic = (user: string, password: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
    const metrics = async (p: VeraProcess, headers: Record<string, string> = {}): Promise<number> => (await fetch(`${p.httpUrl}/metrics`, { headers, signal: AbortSignal.timeout(5000) })).status;
    vp = await securedServer({ args: ['--metrics-need-auth'] });
    expect(await metrics(vp)).toBe(401);
    expect(await metrics(vp, basic('alice', 'alice-pw'))).toBe(403);
    expect(await metrics(vp, basic('root', 'root-pw'))).toBe(200);
    await vp.stop();
    vp.removeData();
    vp = await securedServer();
    expect(await metrics(vp)).toBe(200);
  });

  it('turning authentication on ends what unauthenticated connections may do', async () => {
    const p = (vp = await startLeader());
    const open = await as(p, {});
    await untilCommandVersion(() => open.call('auth.userAdd', { name: 'root', password: 'root-pw' }));
    expect((await open.request('auth.enable')).error?.code).toBe('CONFLICT'); // root lacks the root role
    await open.call('auth.userGrant', { name: 'root', role: 'root' });
    const watcher = await as(p, {});
    await open.call('auth.enable');
    const closed = await watcher.waitClose();
    expect(closed.code).toBe(4007);
  });

  it('a session opened while authentication was off is resumed by no user once it is on, even with its token', async () => {
    const p = (vp = await startLeader());
    const early = await wire(p);
    const opened = await early.hello({ timeoutMs: 30_000 });
    await early.call('push', { path: '/app/early', data: 'no owner' });
    const setup = await as(p, {});
    await untilCommandVersion(() => setup.call('auth.userAdd', { name: 'root', password: 'root-pw' }));
    await setup.call('auth.userGrant', { name: 'root', role: 'root' });
    await setup.call('auth.enable');
    await early.waitClose();
    const root = await wire(p);
    const taken = await root.request('hello', { user: 'root', password: 'root-pw', session: opened.session, resume: opened.resume });
    expect(taken.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/opened while authentication was off/) });
    // Nothing was taken: the session's item is where it was, until the session expires.
    const reader = await as(p, { user: 'root', password: 'root-pw' });
    expect((await reader.call('get', { path: '/app/early' })).items).toMatchObject([{ owner: opened.session }]);
  });
});
