// Authentication across a leader change on a real 3-member cluster: users,
// roles, the token key and each session's user are replicated, so after a
// kill -9 of the leader a user's client resumes its session on the new leader
// (its ephemeral item kept), a token issued by the old leader still works, and
// another user still cannot take the session over.
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { AuthClient } from '../../src/families/auth/client.js';
import { pollUntil } from '../support/poll.js';
import { killAll } from '../support/vera-process.js';
import { Cluster } from '../failover/cluster.js';
import { untilCommandVersion } from '../server/fixture.js';
import { WireClient } from '../server/wire-client.js';

let cluster: Cluster | null = null;
const clients: VeraClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await killAll();
  cluster?.removeData();
});

async function open(urls: string[], options: Parameters<typeof connect>[1]): Promise<VeraClient> {
  const c = await connect(urls, { timeoutMs: 10_000, connectTimeoutMs: 10_000, requestTimeoutMs: 15_000, ...options });
  clients.push(c);
  return c;
}

describe('authentication across a leader change', () => {
  it('keeps users, tokens and each session\'s owner through a kill -9 of the leader', async () => {
    cluster = await Cluster.start(3);
    const setup = await open(cluster.urls, {});
    const admin = new AuthClient(setup);
    await untilCommandVersion(() => admin.addUser('root', 'root-pw'));
    await admin.grantRole('root', 'root');
    await admin.addRole('worker');
    await admin.grantPermission('worker', '/f', ['read', 'write', 'watch']);
    for (const name of ['alice', 'bob']) {
      await admin.addUser(name, `${name}-pw`);
      await admin.grantRole(name, 'worker');
    }
    await admin.enable();

    const alice = await open(cluster.urls, { user: 'alice', password: 'alice-pw' });
    const token = (await new AuthClient(alice).login('alice', 'alice-pw')).token;
    await alice.push('/f/lock', 'held by alice');
    const session = alice.session;
    const resume = alice.resumeToken!;

    const old = await cluster.leader();
    await old.process.kill9();
    const next = await cluster.leader({ not: old.id, timeoutMs: 20_000 });

    // alice's client finds the new leader and resumes the same session; her ephemeral item is still there.
    await pollUntil('alice resumed on the new leader', async () => (alice.state === 'open' && alice.serverUrl?.includes(String(next.clientPort)) ? true : undefined), 20_000);
    expect(alice.session).toBe(session);
    expect((await alice.get('/f/lock')).items.map((i) => i.data)).toEqual(['held by alice']);

    // A token the old leader issued works on the new one.
    const byToken = await open([next.url], { token });
    expect(await new AuthClient(byToken).status()).toEqual({ enabled: true, user: 'alice' });

    // bob, with alice's session id and even her resume token, is refused: the new leader knows the session is hers.
    const bob = await WireClient.connect(next.url, 'json');
    try {
      const taken = await bob.request('hello', { user: 'bob', password: 'bob-pw', session, resume });
      expect(taken.error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/belongs to another user/) });
    } finally {
      bob.terminate();
    }
    expect((await alice.get('/f/lock')).items).toHaveLength(1);
  });
});
