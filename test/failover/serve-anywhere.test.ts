// Every member serves clients (docs/scale-out.md, step 8b), on a real 3-member cluster
// at command version 9: a session opened on a follower is held there; its writes are
// forwarded to the leader and answered once applied on the follower (a stale read on the
// same connection sees them at once); its watch is served from the follower's own apply
// stream; it resumes on another member (the first one's connection closes, 4002); it
// outlives a leader change without reconnecting (the follower's liveness batches keep it
// alive at the new leader); and a follower that loses every leader sends its clients on
// (4009) once their sessions went unconfirmed for half their timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { WireClient, type Item } from '../server/wire-client.js';
import { SESSION_FLAGS } from '../server/fixture.js';
import { Cluster, fetchStatus, type Member } from './cluster.js';

let cluster: Cluster;
const clients: WireClient[] = [];

beforeAll(async () => {
  cluster = await Cluster.start(3, SESSION_FLAGS);
});

afterAll(async () => {
  for (const c of clients) c.terminate();
  await killAll();
  cluster?.removeData();
});

async function atV9(member: Member): Promise<void> {
  await pollUntil(`${member.id} at command version 9`, async () => ((await fetchStatus(member.clientPort)).commandVersion.active >= 9 ? true : undefined));
}

async function connect(member: Member): Promise<WireClient> {
  const client = await WireClient.connect(member.url, 'json');
  clients.push(client);
  return client;
}

/** The leader and the followers, every running member at command version 9. */
async function roles(): Promise<{ leader: Member; followers: Member[] }> {
  const leader = await cluster.leader();
  for (const m of cluster.running) await atV9(m);
  return { leader, followers: cluster.running.filter((m) => m !== leader) };
}

describe('every member serves clients', () => {
  it('a hello on a follower opens the session there, and its write is answered once applied there', async () => {
    const { leader, followers } = await roles();
    const follower = followers[0]!;
    const client = await connect(follower);
    const hello = await client.hello({ timeoutMs: 30_000 });
    expect(hello).toMatchObject({ node: follower.id, leader: leader.id, role: 'follower' });
    const pushed = (await client.call('push', { path: '/so8b/ryw', data: 'mine', persistent: true })).item as Item;
    // Read-your-writes on the connection: a stale read on the follower, with no barrier, already has it.
    const read = await client.call('get', { path: '/so8b/ryw', consistency: 'stale' });
    expect((read.items as Item[]).map((i) => i.index)).toContain(pushed.index);
    expect(read.index as number).toBeGreaterThanOrEqual(pushed.index);
    // The leader applied the same entry.
    const onLeader = await connect(leader);
    await onLeader.hello({ timeoutMs: 30_000 });
    const there = await onLeader.call('get', { path: '/so8b/ryw' });
    expect((there.items as Item[]).map((i) => i.data)).toEqual(['mine']);
  });

  it("a watch on a follower receives the events of another member's writes", async () => {
    const { leader, followers } = await roles();
    const watcher = await connect(followers[0]!);
    await watcher.hello({ timeoutMs: 30_000 });
    await watcher.call('watch', { path: '/so8b/watched' });
    const writer = await connect(followers[1] ?? leader);
    await writer.hello({ timeoutMs: 30_000 });
    const pushed = (await writer.call('push', { path: '/so8b/watched', data: 'news', persistent: true })).item as Item;
    const event = await watcher.waitEvent((e) => e.path === '/so8b/watched' && e.type === 'push', 'the push event');
    expect(event.index).toBe(pushed.index);
  });

  it('a session resumes on another member, and its connection on the first one closes (4002)', async () => {
    const { leader, followers } = await roles();
    const first = await connect(followers[0]!);
    const hello = await first.hello({ timeoutMs: 30_000 });
    const elsewhere = await connect(followers[1] ?? leader);
    const resumed = await elsewhere.hello({ session: hello.session, resume: hello.resume, timeoutMs: 30_000 });
    expect(resumed).toMatchObject({ session: hello.session, node: (followers[1] ?? leader).id });
    expect((await first.waitClose()).code).toBe(4002);
    // The session works where it moved.
    await elsewhere.call('push', { path: '/so8b/moved', data: 1 });
  });

  it("HTTP family routes keep their answers on a follower: a read is served there, a leader op's POST names the leader", async () => {
    const { leader, followers } = await roles();
    const follower = followers[0]!;
    const read = await fetch(`http://127.0.0.1:${follower.clientPort}/v1/journals`, { signal: AbortSignal.timeout(5000) });
    expect(read.status).toBe(200);
    const post = await fetch(`http://127.0.0.1:${follower.clientPort}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'nobody', password: 'x' }),
      signal: AbortSignal.timeout(5000),
    });
    const body = (await post.json()) as { error?: { code?: string; leader?: string } };
    expect(body.error).toMatchObject({ code: 'NOT_LEADER', leader: leader.url });
  });

  it('a session on a follower outlives a leader change without reconnecting', async () => {
    const { leader, followers } = await roles();
    const timeoutMs = 3000;
    // One session on each follower: whichever does not become the leader keeps its session alive only by its liveness batches.
    const held = await Promise.all(
      followers.map(async (follower) => {
        const client = await connect(follower);
        const hello = await client.hello({ timeoutMs });
        const path = `/so8b/survivor-${follower.id}`;
        await client.call('push', { path, data: 'before' });
        return { follower, client, hello, path };
      }),
    );
    await leader.process.kill9();
    const next = await cluster.leader({ not: leader.id, timeoutMs: 20_000 });
    expect(held.some((h) => h.follower.id !== next.id)).toBe(true);
    // Past a whole timeout after the new leader took over, pinging every third of it on the same connections.
    const until = performance.now() + timeoutMs * 1.5;
    while (performance.now() < until) {
      await Promise.all(held.map((h) => h.client.call('ping', {})));
      await new Promise((resolve) => setTimeout(resolve, timeoutMs / 3));
    }
    for (const h of held) {
      const pushed = (await h.client.call('push', { path: h.path, data: 'after' })).item as Item;
      expect(pushed.owner).toBe(h.hello.session);
      // The ephemeral item pushed before the change is still there: the session never expired.
      const items = (await h.client.call('get', { path: h.path })).items as Item[];
      expect(items.map((i) => i.data)).toEqual(['before', 'after']);
    }
  });

  it('a follower that loses every leader closes its connections with 4009 at half their timeout', async () => {
    const { leader, followers } = await roles();
    const kept = followers[0]!;
    const client = await connect(kept);
    const timeoutMs = 2000;
    await client.hello({ timeoutMs });
    await leader.process.kill9();
    for (const other of followers.slice(1)) await other.process.kill9();
    const killedAt = performance.now();
    const closed = client.waitClose(timeoutMs * 3);
    // The client keeps talking; no leader confirms its session any more.
    const pinging = setInterval(() => client.send({ id: client.newId(), op: 'ping' }), 200);
    try {
      const info = await closed;
      expect(info.code).toBe(4009);
      expect(performance.now() - killedAt).toBeLessThan(timeoutMs * 1.5);
    } finally {
      clearInterval(pinging);
    }
  });
});
