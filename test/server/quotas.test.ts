// Quotas against a real server. Checked before proposing, concurrent requests
// once passed a limit together (1,240 watches of 1,000); judged in apply, the
// limit holds however many requests are in flight, with QUOTA_EXCEEDED.

import { afterEach, describe, expect, it } from 'vitest';
import { killAll } from '../support/vera-process.js';
import { openSession, startLeader } from './fixture.js';
import { WireClient } from './wire-client.js';

const clients: WireClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  await killAll();
});

describe('quotas over the wire', () => {
  it('a session sending 60 watches at once ends up with exactly --watches-per-session of them', async () => {
    const vp = await startLeader({ args: ['--watches-per-session', '10'] });
    const { client } = await openSession(vp, 'msgpack');
    clients.push(client);
    // The pushes ask for their watch (watch: true); an implicit one gives way instead (next test).
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => client.request(i % 2 === 0 ? 'watch' : 'push', i % 2 === 0 ? { path: `/w/${i}` } : { path: `/p/${i}`, data: i, watch: true })));
    const ok = replies.filter((r) => r.error === undefined);
    const refused = replies.filter((r) => r.error !== undefined);
    expect(ok).toHaveLength(10);
    expect(refused.every((r) => r.error!.code === 'QUOTA_EXCEEDED' && /--watches-per-session 10/.test(r.error!.message))).toBe(true);
    // The refused pushes wrote nothing: /p lists exactly the pushes that succeeded.
    const pushedOk = replies.map((_, i) => `${i}`).filter((i) => Number(i) % 2 === 1 && replies[Number(i)]!.error === undefined);
    const lists = await client.call('ls', { path: '/p' });
    expect(lists.children).toEqual(pushedOk.sort());
  });

  it("a push's implicit watch never refuses the push: past --watches-per-session it is left out, and the reply says so", async () => {
    const vp = await startLeader({ args: ['--watches-per-session', '5'] });
    const { client } = await openSession(vp, 'json');
    clients.push(client);
    const replies = [];
    for (let i = 0; i < 12; i++) replies.push(await client.call('push', { path: `/implicit/${i}`, data: i }));
    expect(replies.slice(0, 5).every((r) => r.watched === undefined)).toBe(true);
    expect(replies.slice(5).every((r) => r.watched === false)).toBe(true);
    expect((await client.call('ls', { path: '/implicit' })).children).toHaveLength(12);
    // The session holds exactly its 5 watches: an explicit one more is refused, and a watched list notifies.
    expect((await client.request('watch', { path: '/implicit/extra' })).error?.code).toBe('QUOTA_EXCEEDED');
    expect((await client.request('push', { path: '/implicit/explicit', data: 1, watch: true })).error?.code).toBe('QUOTA_EXCEEDED');
    const other = (await openSession(vp, 'json')).client;
    clients.push(other);
    // In log order /implicit/9 (not watched) comes first: had it been watched, its event would come before /implicit/0's.
    await other.call('push', { path: '/implicit/9', data: 'unwatched', persistent: true, watch: false });
    await other.call('push', { path: '/implicit/0', data: 'from another session', persistent: true, watch: false });
    await client.waitEvent((e) => e.path === '/implicit/0' && e.item.data === 'from another session', 'the push to a watched list');
    expect(client.events().filter((e) => e.path === '/implicit/9')).toEqual([]);
  });

  it('one address may open only --sessions-per-address sessions; another address still can', async () => {
    const vp = await startLeader({ args: ['--sessions-per-address', '3'] });
    for (let i = 0; i < 3; i++) clients.push((await openSession(vp, 'json')).client);
    const fourth = await WireClient.connect(vp.url, 'json');
    clients.push(fourth);
    const reply = await fourth.request('hello', { timeoutMs: 30_000 });
    expect(reply.error?.code).toBe('QUOTA_EXCEEDED');
    expect(reply.error?.message).toMatch(/127\.0\.0\.1 already has 3 sessions/);
    const elsewhere = await WireClient.connect(vp.url, 'json', { localAddress: '127.0.0.2' });
    clients.push(elsewhere);
    expect((await elsewhere.hello({ timeoutMs: 30_000 })).session).toEqual(expect.any(String));
  });
});
