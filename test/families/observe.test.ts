// The observe family on real servers: the cluster as its leader sees it (a
// follower killed shows as unreachable, not as caught up), and sessions with
// their users, watches, notification lag and ephemeral items, a page at a time.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { ObserveClient } from '../../src/families/observe/client.js';
import { Cluster } from '../failover/cluster.js';
import { startLeader } from '../server/fixture.js';
import { pollUntil } from '../support/poll.js';
import { killAll, type VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
let cluster: Cluster | null = null;
const clients: VeraClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await vp?.stop();
  vp?.removeData();
  vp = null;
});
afterAll(async () => {
  await killAll();
  cluster?.removeData();
});

async function open(urls: string | string[]): Promise<VeraClient> {
  const c = await connect(urls, { timeoutMs: 30_000 });
  clients.push(c);
  return c;
}

describe('observing the cluster', () => {
  it('lists sessions with their watches, lag and items, a page at a time', async () => {
    vp = await startLeader();
    const a = await open(vp.url);
    const b = await open(vp.url);
    await a.push('/o/a', 'mine');
    await a.watch('/o', { prefix: true });
    await b.push('/o/b', 'persistent', { persistent: true, watch: false });
    const observe = new ObserveClient(b);

    const all = await observe.sessions();
    expect(all.total).toBe(2);
    const byId = new Map(all.sessions.map((s) => [s.session, s]));
    expect(byId.get(a.session)).toMatchObject({ principal: null, connected: true, watches: 2 }); // the push's own watch and the prefix watch
    expect(byId.get(b.session)).toMatchObject({ watches: 0, lag: 0 }); // owed no notifications
    expect([...byId.keys()]).toEqual([...byId.keys()].sort());

    const first = await observe.sessions(undefined, 1);
    expect(first.sessions).toHaveLength(1);
    const second = await observe.sessions(first.next, 1);
    expect(second.sessions.map((s) => s.session)).toEqual([all.sessions[1]!.session]);
    expect(second.next).toBeUndefined();

    const detail = await observe.session(a.session);
    expect(detail).toMatchObject({ live: true, items: [{ path: '/o/a' }], watchList: expect.arrayContaining([{ path: '/o', prefix: true }]) });
    await a.close();
    expect(await observe.session(a.session)).toEqual({ session: a.session, live: false });

    const view = await observe.cluster();
    expect(view).toMatchObject({ role: 'leader', leader: view.member, sessions: 1, members: [{ id: view.member, voter: true, lag: 0, reachable: true }] });
    // The member holding each session's connection, as its openSession recorded it (command version 9).
    expect((await observe.sessions()).sessions.map((s) => s.member)).toEqual([view.member]);
  });

  it('shows a killed follower as unreachable and falling behind', async () => {
    cluster = await Cluster.start(3);
    const leader = await cluster.leader();
    const client = await open(cluster.urls);
    const observe = new ObserveClient(client);
    await pollUntil('both followers caught up', async () => {
      const v = await observe.cluster();
      return v.members.every((m) => m.reachable === true && m.lag === 0) ? true : undefined;
    });
    const follower = cluster.members.find((m) => m.id !== leader.id)!;
    await follower.process.kill9();
    for (let i = 0; i < 5; i++) await client.push('/o/after-kill', i, { persistent: true, watch: false });
    const seen = await pollUntil('the killed follower unreachable', async () => {
      const v = await observe.cluster();
      const m = v.members.find((x) => x.id === follower.id);
      return m?.reachable === false ? m : undefined;
    });
    expect(seen.lag).toBeGreaterThanOrEqual(5);
  });
});

describe('the member holding a session', () => {
  it('moves to the next leader when the session is resumed there (attachSession), and observe shows it', async () => {
    const moved = await Cluster.start(3);
    try {
      const first = await moved.leader();
      const client = await open(moved.urls);
      const observe = new ObserveClient(client);
      const holderOf = async (): Promise<string | null | undefined> => (await observe.sessions()).sessions.find((s) => s.session === client.session)?.member;
      expect(await holderOf()).toBe(first.id);

      const resumed = new Promise<void>((resolve) => {
        const off = client.on('connected', (info) => {
          if (!info.resumed) return;
          off();
          resolve();
        });
      });
      await first.process.kill9();
      await resumed;
      const next = await moved.leader({ not: first.id });
      expect(client.serverUrl).toContain(`:${next.clientPort}/`);
      // The resume committed its new holder before the connection was established there.
      expect(await holderOf()).toBe(next.id);
    } finally {
      await moved.stop();
      moved.removeData();
    }
  });
});
