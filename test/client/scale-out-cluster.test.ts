// The client's shuffled ring against a real 3-member cluster as it is today, where
// only the leader accepts sessions: a client that starts on a follower is sent to
// the leader (NOT_LEADER), so spreading clients over the members breaks nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ConnectOptions, type VeraClient } from '../../src/client/index.js';
import { killAll } from '../support/vera-process.js';
import { Cluster, type Member } from '../failover/cluster.js';

let cluster: Cluster;
let leader: Member;
/** The leader first, then the two followers. */
let urls: string[];
const clients: VeraClient[] = [];

beforeAll(async () => {
  cluster = await Cluster.start(3);
  leader = await cluster.leader();
  urls = [leader.url, ...cluster.members.filter((m) => m !== leader).map((m) => m.url)];
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await killAll();
  cluster?.removeData();
});

async function open(options: ConnectOptions = {}): Promise<VeraClient> {
  const c = await connect(urls, { connectTimeoutMs: 20_000, ...options });
  clients.push(c);
  return c;
}

/** How many hellos `member` refused with NOT_LEADER, from its /metrics. */
async function helloRedirects(member: Member): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${member.clientPort}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
  const line = text.split('\n').find((l) => l.startsWith('vera_requests_total{') && l.includes('op="hello"') && l.includes('code="NOT_LEADER"'));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function followerRedirects(): Promise<number[]> {
  return Promise.all(cluster.members.filter((m) => m !== leader).map(helloRedirects));
}

describe('a shuffled ring on a cluster where only the leader serves', () => {
  it('a source that answers 0 keeps the given order: the leader, given first, answers at once', async () => {
    const before = await followerRedirects();
    const c = await open({ random: () => 0 });
    expect(c.serverUrl).toBe(`${leader.url}/v1/connect`);
    expect(await followerRedirects()).toEqual(before);
  });

  it('a client the shuffle starts on a follower is sent to the leader and keeps its session there', async () => {
    const [first] = urls.slice(1);
    const follower = cluster.members.find((m) => m.url === first)!;
    const before = await helloRedirects(follower);
    // With 0.99 the shuffle of [leader, f1, f2] is [f1, f2, leader].
    const c = await open({ random: () => 0.99 });
    expect(await helloRedirects(follower)).toBe(before + 1);
    expect(c.serverUrl).toBe(`${leader.url}/v1/connect`);
    const item = await c.push('/scale-out/client', 'here');
    expect(item.owner).toBe(c.session);
  });

  it('clients spread over the members they were given, and all end on the leader', async () => {
    const before = (await followerRedirects()).reduce((a, b) => a + b, 0);
    // The chance that 12 clients all start on the leader is 3^-12.
    const spread = await Promise.all(Array.from({ length: 12 }, () => open()));
    for (const c of spread) expect(c.serverUrl).toBe(`${leader.url}/v1/connect`);
    expect((await followerRedirects()).reduce((a, b) => a + b, 0)).toBeGreaterThan(before);
  });
});
