// The leader's purge job on a real three-member cluster, with the leader killed with
// kill -9 in the middle of it: the new leader goes on from the replicated cursor, the
// job finishes, and its counts are exact: every record due purged once, each passed
// over once, one clean-up job per purged record, the same on every member.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/index.js';
import { AssignClient, type ImportedUser, type PurgeJob } from '../../../src/families/assign/client.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { ChaosCluster } from '../../cluster/harness.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';

const SERVICE = 'pj-1.5';
/** Users with a replaced record on a (purged) and on d, downed (passed over), each with a current record on a. */
const ON_A = 600;
const ON_D = 40;

let cluster: ChaosCluster;
let client: VeraClient;
let assign: AssignClient;
let journal: JournalClient;

beforeAll(async () => {
  cluster = await ChaosCluster.start({ size: 3 });
  client = await connect(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 20_000 });
  assign = new AssignClient(client);
  journal = new JournalClient(client);
  await pollUntil('the cluster to accept command version 9 ops', async () => {
    await assign.service(SERVICE);
    await assign.addNode(SERVICE, 'https://a', { capacity: 100_000 });
    await assign.addNode(SERVICE, 'https://d', { capacity: 100_000 });
    await assign.importUsers(SERVICE, [{ uid: 1_000_000, email: 'probe@example.com', generation: 1, clientState: '', keysChangedAt: 0, createdAt: 1, replacedAt: 0, node: 'https://a' }]);
    return true;
  }, 30_000);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await cluster?.close();
  await killAll();
});

/** Each user: a replaced record (uid 2i+1, replaced at i+1000) on `node` and a current one (uid 2i+2) on a. */
function users(from: number, count: number, node: string): ImportedUser[] {
  const out: ImportedUser[] = [];
  for (let i = from; i < from + count; i++) {
    const email = `u${i}@example.com`;
    out.push({ uid: 2 * i + 1, email, generation: 1, clientState: 'aa', keysChangedAt: 1, createdAt: 1, replacedAt: 1000 + i, node });
    out.push({ uid: 2 * i + 2, email, generation: 2, clientState: 'bb', keysChangedAt: 2, createdAt: 2, replacedAt: 0, node: 'https://a' });
  }
  return out;
}

describe('a purge job across a leader kill', () => {
  it('finishes from the replicated cursor, with exact counts on every member', { timeout: 180_000 }, async () => {
    // The downed node's records interleave with the others' (every 16th user).
    const all: ImportedUser[] = [];
    for (let i = 0; i < ON_A + ON_D; i++) all.push(...users(i, 1, i % 16 === 0 && i / 16 < ON_D ? 'https://d' : 'https://a'));
    for (let i = 0; i < all.length; i += 1000) await assign.importUsers(SERVICE, all.slice(i, i + 1000));
    await assign.updateNode(SERVICE, 'https://d', { downed: true });
    await journal.create('pj-cleanup');
    expect(await assign.purgeable(SERVICE, { graceMs: 0, max: 10_000 })).toMatchObject({ records: ON_A + ON_D });

    const started = await assign.purgeStart(SERVICE, { graceMs: 0, max: 8, journal: 'pj-cleanup' });
    expect(started).toMatchObject({ state: 'running', seq: 1, batches: 0, journal: 'pj-cleanup' });
    await expect(assign.purgeStart(SERVICE, { graceMs: 0 })).rejects.toMatchObject({ code: 'CONFLICT' });

    // Mid-purge (some batches done, most not): kill the leader.
    const midway = await pollUntil('the job to be under way', async () => {
      const j = await assign.purgeStatus(SERVICE);
      return j.batches >= 5 ? j : undefined;
    }, 60_000);
    expect(midway.state).toBe('running');
    expect(midway.purged).toBeLessThan(ON_A / 2);
    const leader = await cluster.waitForLeader();
    await cluster.kill9(leader);
    await cluster.waitForLeader({ not: leader });
    await cluster.restart(leader);

    const done = await pollUntil('the job to finish', async () => {
      const j = await assign.purgeStatus(SERVICE);
      return j.state === 'running' ? undefined : j;
    }, 150_000);
    expect(done).toMatchObject({ state: 'done', purged: ON_A, skipped: ON_D, overridden: 0, activeData: 0 });
    expect(done.batches).toBeGreaterThan(midway.batches);
    expect(cluster.faults.filter((f) => f.what.startsWith('kill9'))).toHaveLength(1);

    // Every member: only the downed node's replaced records are left, every current one is, and load is exact.
    await cluster.waitForQuiet();
    for (const m of cluster.members) {
      const member = await connect(m.url, { timeoutMs: 10_000 });
      try {
        const a = new AssignClient(member);
        expect(await a.purgeable(SERVICE, { graceMs: 0, max: 10_000, consistency: 'stale' }), m.url).toMatchObject({ records: ON_D });
        expect(await a.purgeStatus(SERVICE, { consistency: 'stale' }), m.url).toEqual(done);
        const nodes = await a.nodes(SERVICE, { consistency: 'stale' });
        expect(nodes.find((n) => n.node === 'https://a')?.load, m.url).toBe(ON_A + ON_D + 1);
      } finally {
        await member.close();
      }
    }
    // One clean-up job per purged record, none doubled by the step the new leader ran again.
    expect((await journal.show('pj-cleanup')).counts.waiting).toBe(ON_A);
    // Over HTTP too: the progress is readable on any member.
    const viaHttp = (await fetch(`${cluster.members[0]!.httpUrl}/v1/assign/services/${SERVICE}/purge`).then((r) => r.json())) as PurgeJob;
    expect(viaHttp).toEqual(done);
    // Stopped or ended, it can be started again: with force, the downed node's records go too.
    const forced = await assign.purgeStart(SERVICE, { graceMs: 0, max: 8, force: true });
    expect(forced.seq).toBe(2);
    const second = await pollUntil('the forced job to finish', async () => {
      const j = await assign.purgeStatus(SERVICE);
      return j.state === 'running' ? undefined : j;
    }, 60_000);
    expect(second).toMatchObject({ state: 'done', purged: ON_D, skipped: 0 });
    expect((await assign.purgeStop(SERVICE)).stopped).toBe(false);
  });
});
