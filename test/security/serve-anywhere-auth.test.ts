// Authentication when every member serves (docs/scale-out.md, step 8b), on a real
// 3-member cluster at command version 9: a hello without credentials on a follower,
// sent right after the leader acknowledged `auth.enable`, is refused (a member takes a
// ReadIndex before judging a hello, so an auth change acknowledged elsewhere holds there
// too); and a relayed op that ends its caller's own credential (a user removing
// himself, on a follower) is answered on that connection before it closes (4008), as
// on the leader.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { WireClient } from '../server/wire-client.js';
import { Cluster, fetchStatus, type Member } from '../failover/cluster.js';

let cluster: Cluster;
const clients: WireClient[] = [];

beforeAll(async () => {
  cluster = await Cluster.start(3);
});

afterAll(async () => {
  for (const c of clients) c.terminate();
  await killAll();
  cluster?.removeData();
});

async function connect(member: Member): Promise<WireClient> {
  const client = await WireClient.connect(member.url, 'json');
  clients.push(client);
  return client;
}

describe('authentication on followers', () => {
  it('a hello on a follower right after auth.enable is judged with it; a relayed op that ends its own credential is answered before the close', async () => {
    const leader = await cluster.leader();
    for (const m of cluster.members) {
      await pollUntil(`${m.id} at command version 9`, async () => ((await fetchStatus(m.clientPort)).commandVersion.active >= 9 ? true : undefined));
    }
    const [first, second] = cluster.members.filter((m) => m !== leader);
    const admin = await connect(leader);
    await admin.hello({ timeoutMs: 30_000 });
    for (const name of ['root', 'bob']) {
      await admin.call('auth.userAdd', { name, password: `${name}-pw` });
      await admin.call('auth.userGrant', { name, role: 'root' });
    }
    const waiting = await connect(first!);
    // The leader answers once it applied the enable; the followers learn of its commit a moment later. The hello,
    // sent at once, is judged after its member's ReadIndex, so with authentication on.
    expect(await admin.request('auth.enable', {})).toMatchObject({ ok: true });
    const refused = await waiting.request('hello', { timeoutMs: 30_000 });
    expect(refused).toMatchObject({ ok: false, error: { code: 'UNAUTHORIZED' } });

    // bob, on a follower, removes himself: relayed to the leader, answered on his connection, which then closes (4008).
    const bob = await connect(second!);
    expect(await bob.hello({ user: 'bob', password: 'bob-pw', timeoutMs: 30_000 })).toMatchObject({ node: second!.id, user: 'bob' });
    expect(await bob.request('auth.userRm', { name: 'bob' })).toMatchObject({ ok: true });
    expect((await bob.waitClose()).code).toBe(4008);
  });
});
