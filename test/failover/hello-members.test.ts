// hello's `role` and `members` on a real 3-member cluster (docs/scale-out.md, step 8a):
// the leader answers `role: "leader"` and the client URLs of the members that accept
// sessions, which today is the leader alone; a follower still answers NOT_LEADER; after
// the leader is killed, the next one answers so about itself. The cluster runs with the
// peer service wired, and this is also its failover check.
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
  it("the leader names itself the leader and its own URL as the one member serving sessions; a follower refuses as before", async () => {
    const leader = await leaderAtV9();
    const answer = await hello(leader);
    expect(answer).toMatchObject({ ok: true, node: leader.id, leader: leader.id, role: 'leader', members: [leader.url] });
    const follower = cluster.members.find((m) => m !== leader)!;
    const refused = await hello(follower);
    expect(refused).toMatchObject({ ok: false, error: { code: 'NOT_LEADER', leader: leader.url } });
    expect(refused).not.toHaveProperty('members');
  });

  it('after the leader is killed, the next leader answers so about itself', async () => {
    const old = await leaderAtV9();
    await old.process.kill9();
    const next = await leaderAtV9(old.id);
    const answer = await hello(next);
    expect(answer).toMatchObject({ ok: true, node: next.id, role: 'leader', members: [next.url] });
  });
});
