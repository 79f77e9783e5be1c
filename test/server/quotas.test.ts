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
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => client.request(i % 2 === 0 ? 'watch' : 'push', i % 2 === 0 ? { path: `/w/${i}` } : { path: `/p/${i}`, data: i })));
    const ok = replies.filter((r) => r.error === undefined);
    const refused = replies.filter((r) => r.error !== undefined);
    expect(ok).toHaveLength(10);
    expect(refused.every((r) => r.error!.code === 'QUOTA_EXCEEDED' && /--watches-per-session 10/.test(r.error!.message))).toBe(true);
    // The refused pushes wrote nothing: /p lists exactly the pushes that succeeded.
    const pushedOk = replies.map((r, i) => `${i}`).filter((i) => Number(i) % 2 === 1 && replies[Number(i)]!.error === undefined);
    const lists = await client.call('ls', { path: '/p' });
    expect(lists.children).toEqual(pushedOk.sort());
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
