// Credentials that end while a connection is open: a password change, a token's
// expiry, the user's removal, and authentication turned off and on again each end
// what the connection may do. Its next request is refused (or it is already
// closed, with 4008), and its watch gets no event from then on, on a real server.
import { describe, expect, it } from 'vitest';
import { endEachTest, securedServer } from './secured.js';
import { WireClient } from '../server/wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
endEachTest(wires, () => vp, () => (vp = null));

async function as(p: VeraProcess, hello: Record<string, unknown>): Promise<WireClient> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  await w.hello({ timeoutMs: 30_000, ...hello });
  return w;
}

/** alice (reader: watch on /pub) watching /pub/news, proved by `hello`; and root, who pushes there. */
async function aliceWatching(p: VeraProcess, hello: Record<string, unknown>): Promise<{ alice: WireClient; root: WireClient }> {
  const root = await as(p, { user: 'root', password: 'root-pw' });
  const alice = await as(p, hello);
  await alice.call('watch', { path: '/pub/news' });
  await root.call('push', { path: '/pub/news', data: 'before', persistent: true });
  await alice.waitEvent((e) => e.item.data === 'before', 'the event before the change');
  return { alice, root };
}

/** After the change: alice's next request is refused or finds the connection closed, it is closed with 4008, and root's next push never reaches her. */
async function expectCutOff(alice: WireClient, root: WireClient, reason: RegExp): Promise<void> {
  const next = await alice.request('get', { path: '/pub/news' }).then(
    (r) => (r.error === undefined ? 'served' : `${r.error.code}: ${r.error.message}`),
    () => 'closed',
  );
  expect(next).toMatch(/^(closed|UNAUTHORIZED: .+)$/);
  await root.call('push', { path: '/pub/news', data: 'after', persistent: true });
  const closed = await alice.waitClose();
  expect(closed.code).toBe(4008);
  expect(closed.reason).toMatch(reason);
  // root's own watch (its push watches the list) saw the event: it was sent, just not to alice.
  await root.waitEvent((e) => e.item.data === 'after', "root's own event");
  expect(alice.events().map((e) => e.item.data)).toEqual(['before']);
}

describe('credentials that end while a connection is open', () => {
  it('a password change ends connections made with the old password and with tokens issued before it', async () => {
    vp = await securedServer();
    const { alice, root } = await aliceWatching(vp, { user: 'alice', password: 'alice-pw' });
    const { token } = await alice.call('auth.login', { user: 'alice', password: 'alice-pw' });
    const byToken = await as(vp, { token });
    await byToken.call('watch', { path: '/pub/news' });
    await root.call('auth.userPasswd', { name: 'alice', password: 'new-pw' });
    await expectCutOff(alice, root, /credentials changed/);
    expect((await byToken.waitClose()).code).toBe(4008);
    expect(byToken.events().map((e) => e.item.data)).toEqual([]);
    // The new password opens a connection as before.
    const again = await as(vp, { user: 'alice', password: 'new-pw' });
    expect((await again.call('get', { path: '/pub/news' })).items).toHaveLength(2);
  });

  it("a token's expiry ends the connection it opened, though nothing changed in the log", async () => {
    vp = await securedServer();
    const login = await as(vp, { user: 'alice', password: 'alice-pw' });
    const { token, expiresAt } = await login.call('auth.login', { user: 'alice', password: 'alice-pw', ttlMs: 1000 });
    const { alice, root } = await aliceWatching(vp, { token });
    const closed = await alice.waitClose();
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt as number);
    expect(closed).toMatchObject({ code: 4008, reason: expect.stringMatching(/token expired/) });
    await root.call('push', { path: '/pub/news', data: 'after', persistent: true });
    await root.waitEvent((e) => e.item.data === 'after', "root's own event");
    expect(alice.events().map((e) => e.item.data)).toEqual(['before']);
    // The password connection of the same user is untouched.
    expect((await login.call('get', { path: '/pub/news' })).items).toHaveLength(2);
  });

  it("the user's removal ends its connections", async () => {
    vp = await securedServer();
    const { alice, root } = await aliceWatching(vp, { user: 'alice', password: 'alice-pw' });
    await root.call('auth.userRm', { name: 'alice' });
    await expectCutOff(alice, root, /user was removed/);
  });

  it('authentication turned off and on again ends connections authenticated before', async () => {
    vp = await securedServer();
    const { alice, root } = await aliceWatching(vp, { user: 'alice', password: 'alice-pw' });
    await root.call('auth.disable');
    await root.call('auth.enable');
    // root's own connection was made before too: it is closed as well, and a new one works.
    expect((await root.waitClose()).code).toBe(4008);
    const writer = await as(vp, { user: 'root', password: 'root-pw' });
    await expectCutOff(alice, writer, /turned off and on again/);
    const again = await as(vp, { user: 'alice', password: 'alice-pw' });
    expect((await again.call('get', { path: '/pub/news' })).items).toHaveLength(2);
  });
});
