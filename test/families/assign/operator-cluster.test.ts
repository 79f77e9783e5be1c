// The operator tools on a real three-member cluster: each member's node counters
// (load, available) are checked against the records that member holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/index.js';
import { AssignClient } from '../../../src/families/assign/client.js';
import { ChaosCluster } from '../../cluster/harness.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';

let cluster: ChaosCluster;
let client: VeraClient;
let assign: AssignClient;

beforeAll(async () => {
  cluster = await ChaosCluster.start({ size: 3 });
  client = await connect(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 20_000 });
  assign = new AssignClient(client);
  await pollUntil('the cluster to accept command version 9 ops', async () => {
    await assign.service('probe-1.0');
    await assign.addNode('probe-1.0', 'https://probe', { capacity: 1 });
    await assign.place('probe-1.0', 'probe@example.com', 'https://probe');
    return true;
  }, 30_000);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await cluster?.close();
  await killAll();
});

interface MemberView {
  readonly nodes: Array<{ node: string; load: number; available: number; capacity: number }>;
  readonly current: Map<string, { uid: number; node: string }>;
}

/** What one member holds, read from it alone (stale reads) once every member applied the same index. */
async function viewOf(httpUrl: string, service: string, emails: readonly string[]): Promise<MemberView> {
  const nodes = ((await fetch(`${httpUrl}/v1/assign/services/${service}`).then((r) => r.json())) as MemberView).nodes;
  const current = new Map<string, { uid: number; node: string }>();
  for (const email of emails) {
    const res = await fetch(`${httpUrl}/v1/assign/services/${service}/users/${encodeURIComponent(email)}`);
    if (res.status === 404) continue;
    const l = (await res.json()) as { current: { uid: number; node: string; replacedAt: number } };
    if (l.current.replacedAt === 0) current.set(email, { uid: l.current.uid, node: l.current.node });
  }
  return { nodes, current };
}

/** Every member: each node's load is its current records, and every member holds the same. */
async function expectExactCounters(service: string, emails: readonly string[]): Promise<MemberView> {
  await cluster.waitForQuiet();
  const views = await Promise.all(cluster.members.map((m) => viewOf(m.httpUrl, service, emails)));
  for (const [i, v] of views.entries()) {
    for (const n of v.nodes) expect(n.load, `member ${i} ${n.node}`).toBe([...v.current.values()].filter((c) => c.node === n.node).length);
    expect(v, `member ${i} against member 0`).toEqual(views[0]);
  }
  return views[0]!;
}

describe('operator tools on three members', () => {
  it('place: a user onto a named node, one entry, load and available exact on every member', async () => {
    const service = 'place-1.5';
    await assign.service(service);
    for (const node of ['https://a', 'https://b', 'https://c']) await assign.addNode(service, node, { capacity: 100 });
    const emails = Array.from({ length: 12 }, (_, i) => `p${i}@example.com`);
    for (const e of emails.slice(0, 6)) await assign.user(service, e, { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    // Half of them moved to c, one placed where it already is, two unknown placed on b.
    for (const e of emails.slice(0, 3)) expect(await assign.place(service, e, 'https://c')).toMatchObject({ node: 'https://c', generation: 1, clientState: 'aa' });
    const there = await assign.place(service, emails[0]!, 'https://c');
    expect(there.moved).toBe(false);
    for (const e of emails.slice(6, 8)) expect(await assign.place(service, e, 'https://b')).toMatchObject({ created: true, moved: true, node: 'https://b' });
    const view = await expectExactCounters(service, emails);
    expect(view.current.size).toBe(8);
    expect([...view.current.values()].filter((c) => c.node === 'https://c')).toHaveLength(3 + 1);
    await expect(assign.place(service, emails[0]!, 'https://nowhere')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  }, 60_000);

  it('drain: the node takes no new users, its users are replaced a batch at a time with progress, and move elsewhere; counters exact on every member', async () => {
    const service = 'drain-1.5';
    await assign.service(service);
    await assign.addNode(service, 'https://a', { capacity: 1000 });
    const emails = Array.from({ length: 240 }, (_, i) => `d${i}@example.com`);
    for (let i = 0; i < emails.length; i += 60) await Promise.all(emails.slice(i, i + 60).map((e) => assign.user(service, e, { generation: 1 })));
    await assign.addNode(service, 'https://b', { capacity: 1000 });
    await assign.addNode(service, 'https://c', { capacity: 1000 });
    // Its users page by page, by uid.
    const listed: number[] = [];
    let after: number | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await assign.nodeUsers(service, 'https://a', { limit: 100, ...(after === undefined ? {} : { after }) });
      listed.push(...page.users.map((u) => u.uid));
      if (page.next === null) break;
      after = page.next;
    }
    expect(listed).toHaveLength(240);
    expect([...listed].sort((x, y) => x - y)).toEqual(listed);
    const progress: Array<{ replaced: number; load: number }> = [];
    const r = await assign.drain(service, 'https://a', { ratePerSecond: 2000, batch: 50, onBatch: (p) => progress.push({ replaced: p.replaced, load: p.load }) });
    expect(r).toMatchObject({ replaced: 240, done: true });
    // Paced batches of at most 50 (from 25 up while steps stay quick), each told with the node's load left.
    for (const p of progress) expect(p.load).toBe(240 - p.replaced);
    expect(progress.at(-1)!.replaced).toBe(240);
    const perStep = progress.map((p, i) => p.replaced - (i === 0 ? 0 : progress[i - 1]!.replaced));
    expect(Math.max(...perStep)).toBeLessThanOrEqual(50);
    expect(perStep[0]).toBe(25);
    // Up, but closed: every user moves to b or c, and so does a new one.
    for (let i = 0; i < emails.length; i += 60) await Promise.all(emails.slice(i, i + 60).map(async (e) => expect((await assign.user(service, e, { generation: 1 })).node).not.toBe('https://a')));
    expect((await assign.user(service, 'new@example.com')).node).not.toBe('https://a');
    expect((await assign.nodes(service)).find((n) => n.node === 'https://a')).toMatchObject({ load: 0, downed: false, backoff: 1 });
    expect((await assign.nodeUsers(service, 'https://a')).users).toEqual([]);
    const view = await expectExactCounters(service, [...emails, 'new@example.com']);
    expect(view.current.size).toBe(241);
  }, 120_000);
});
