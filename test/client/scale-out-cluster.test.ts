// The client's shuffled ring against a real 3-member cluster at command version 9,
// where every member accepts sessions (docs/scale-out.md, step 8b): a client that
// starts on a follower keeps its session there (no NOT_LEADER), and clients spread
// over the members they were given. (Rewritten in step 8b: it asserted that followers
// sent clients to the leader; that contract stays tested below version 9 in
// test/families/versions.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ConnectOptions, type VeraClient } from '../../src/client/index.js';
import { killAll } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { Cluster, fetchStatus, type Member } from '../failover/cluster.js';

let cluster: Cluster;
let leader: Member;
/** The leader first, then the two followers. */
let urls: string[];
const clients: VeraClient[] = [];

beforeAll(async () => {
  cluster = await Cluster.start(3);
  leader = await cluster.leader();
  urls = [leader.url, ...cluster.members.filter((m) => m !== leader).map((m) => m.url)];
  for (const m of cluster.members) {
    await pollUntil(`${m.id} at command version 9`, async () => ((await fetchStatus(m.clientPort)).commandVersion.active >= 9 ? true : undefined));
  }
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

describe('a shuffled ring on a cluster where every member serves', () => {
  it('a source that answers 0 keeps the given order: the leader, given first, answers at once', async () => {
    const before = await followerRedirects();
    const c = await open({ random: () => 0 });
    expect(c.serverUrl).toBe(`${leader.url}/v1/connect`);
    expect(await followerRedirects()).toEqual(before);
  });

  it('a client the shuffle starts on a follower keeps its session there', async () => {
    const [first] = urls.slice(1);
    const follower = cluster.members.find((m) => m.url === first)!;
    const before = await helloRedirects(follower);
    // With 0.99 the shuffle of [leader, f1, f2] is [f1, f2, leader].
    const c = await open({ random: () => 0.99 });
    expect(await helloRedirects(follower)).toBe(before);
    expect(c.serverUrl).toBe(`${follower.url}/v1/connect`);
    const item = await c.push('/scale-out/client', 'here');
    expect(item.owner).toBe(c.session);
  });

  it('clients spread over the members they were given, none sent to the leader', async () => {
    const before = await followerRedirects();
    // The chance that 12 clients all start on one member is 3 x 3^-12.
    const spread = await Promise.all(Array.from({ length: 12 }, () => open()));
    expect(new Set(spread.map((c) => c.serverUrl)).size).toBeGreaterThan(1);
    expect(await followerRedirects()).toEqual(before);
  });
});
