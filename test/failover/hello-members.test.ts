// hello's `role` and `members` on a real 3-member cluster (docs/scale-out.md, steps 8a
// and 8b): at command version 9 every member accepts sessions, so the leader answers
// `role: "leader"` and every member's client URL, and a follower opens the session
// itself (`role: "follower"`, the same list); after the leader is killed, the next one
// answers so about itself. (Below version 9 a follower answers NOT_LEADER:
// test/families/versions.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { WireClient } from '../server/wire-client.js';
import { Cluster, fetchStatus, type Member } from './cluster.js';

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

/** A leader running command version 9, where hello says who answered and where sessions are served. */
async function leaderAtV9(not?: string): Promise<Member> {
  const leader = await cluster.leader(not === undefined ? {} : { not });
  await pollUntil('command version 9', async () => ((await fetchStatus(leader.clientPort)).commandVersion.active >= 9 ? true : undefined));
  return leader;
}

async function hello(member: Member): Promise<Record<string, unknown>> {
  const client = await WireClient.connect(member.url, 'json');
  clients.push(client);
  const reply = await client.request('hello', { timeoutMs: 30_000 });
  return reply as Record<string, unknown>;
}

describe("hello's role and members", () => {
  it('the leader names itself the leader and every member as serving sessions; a follower opens the session itself', async () => {
    const leader = await leaderAtV9();
    const answer = await hello(leader);
    expect(answer).toMatchObject({ ok: true, node: leader.id, leader: leader.id, role: 'leader' });
    expect([...(answer.members as string[])].sort()).toEqual([...cluster.urls].sort());
    const follower = cluster.members.find((m) => m !== leader)!;
    await pollUntil('the follower at command version 9', async () => ((await fetchStatus(follower.clientPort)).commandVersion.active >= 9 ? true : undefined));
    const opened = await hello(follower);
    expect(opened).toMatchObject({ ok: true, node: follower.id, leader: leader.id, role: 'follower' });
    expect([...(opened.members as string[])].sort()).toEqual([...cluster.urls].sort());
  });

  it('after the leader is killed, the next leader answers so about itself', async () => {
    const old = await leaderAtV9();
    await old.process.kill9();
    const next = await leaderAtV9(old.id);
    const answer = await hello(next);
    expect(answer).toMatchObject({ ok: true, node: next.id, role: 'leader' });
    expect(answer.members).toContain(next.url);
  });
});
