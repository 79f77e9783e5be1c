// Operations under load on a real cluster (issue 5), checked like every fault
// scenario (scenarios.test.ts) by the five checkers of checkers.ts:
// - a full rolling replacement: two members added to a 3-node cluster, then two
//   of the original ones removed, the leader first;
// - a follower killed -9 in the middle of receiving a snapshot, restarted, and
//   caught up by a fresh one.

import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client/index.js';
import { describeTrial, runTrial, type TrialPlan, type TrialResult } from './chaos.js';
import { pollUntil } from '../support/poll.js';
import type { ChaosCluster } from './harness.js';
import { pushMany } from '../snapshot/support.js';
import { killAll } from '../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

async function trial(plan: TrialPlan): Promise<TrialResult> {
  const result = await runTrial(plan);
  console.info(`${describeTrial(result)}\n  faults: ${result.faults.map((f) => f.what).join('; ')}\n  ${result.notes.join('\n  ')}`);
  expect(result.error, describeTrial(result)).toBeNull();
  expect(result.reports.filter((r) => r.problems.length > 0).map((r) => `${r.name}: ${r.problems.join('; ')}`)).toEqual([]);
  expect(result.reports).toHaveLength(5 + (plan.journal === false ? 0 : 1) + (plan.assign === false ? 0 : 1));
  return result;
}

/** The voters and learners member `i` reports, sorted. */
async function configOf(c: ChaosCluster, i: number): Promise<{ voters: string[]; learners: string[] }> {
  const members = (await c.status(i)).members;
  return {
    voters: members.filter((m) => m.voter).map((m) => m.id).sort(),
    learners: members.filter((m) => !m.voter).map((m) => m.id).sort(),
  };
}

const TIMEOUT_MS = 150_000;

describe('operations under load on a real cluster', () => {
  it('a rolling replacement: add two members to three, remove two of the first (the leader first)', { timeout: TIMEOUT_MS }, async () => {
    let finalConfig: { voters: string[]; learners: string[] } | null = null;
    let removedLeader = '';
    const result = await trial({
      name: 'rolling-replacement',
      seed: 5005,
      size: 3,
      spares: 2,
      faults: async (t) => {
        const c = t.cluster;
        await c.addMember(3);
        await t.progress(15);
        await c.addMember(4);
        await t.progress(15);
        const leader = await c.waitForLeader();
        removedLeader = c.member(leader).id;
        await c.removeMember(leader);
        await c.waitForLeader();
        await t.progress(15);
        const another = [0, 1, 2].find((i) => c.stateOf(i) !== 'absent')!;
        await c.removeMember(another);
        await t.progress(15);
        const survivor = c.live[0]!;
        finalConfig = await pollUntil('the final configuration on every member', async () => {
          const configs = await Promise.all(c.live.map((i) => configOf(c, i)));
          return configs.every((k) => JSON.stringify(k) === JSON.stringify(configs[0])) ? configs[0] : undefined;
        }, 20_000);
        t.note(`final configuration seen by ${c.member(survivor).id}: ${JSON.stringify(finalConfig)}`);
      },
    });
    expect(result.faults.map((f) => f.what.split(' ')[0])).toEqual(expect.arrayContaining(['add', 'remove']));
    const kept = ['n1', 'n2', 'n3'].filter((id) => id !== removedLeader);
    expect(removedLeader).toMatch(/^n[123]$/);
    expect(finalConfig).toEqual({ voters: [kept[1]!, 'n4', 'n5'].sort(), learners: [] });
  });

  it('a follower killed -9 while receiving a snapshot restarts clean and catches up', { timeout: TIMEOUT_MS }, async () => {
    const BULK = '/bulk';
    const BULK_ITEMS = 2000;
    let bulkOnFollower = -1;
    let installedBeforeKill = true;
    await trial({
      name: 'crash-mid-snapshot',
      seed: 5006,
      size: 3,
      clusterArgs: ['--snapshot-entries', '200', '--snapshot-keep', '20'],
      faults: async (t) => {
        const c = t.cluster;
        const leader = await c.waitForLeader();
        const follower = [0, 1, 2].find((i) => i !== leader)!;
        const followerId = c.member(follower).id;
        c.isolate(follower);
        // About 2 MB the follower misses, then compaction past everything it has: it can only catch up by snapshot.
        const bulk = await connect(c.urls, { requestTimeoutMs: 15_000 });
        try {
          await pushMany(bulk, BULK_ITEMS, { prefix: BULK, lists: 4, concurrency: 32, dataBytes: 1000 });
        } finally {
          await bulk.close();
        }
        const behind = (await c.status(follower)).applied;
        await c.process(leader).waitForLog((l) => l.event === 'snapshot-compacted' && typeof l.index === 'number' && l.index > behind + 20, 20_000);
        const link = c.proxy(leader, follower);
        const before = link.stats().forward.forwardedBytes;
        c.heal();
        // A quarter of the snapshot has gone through: freeze the link, then kill the follower with the rest missing.
        await link.waitFor((s) => s.forward.forwardedBytes > before + 512 * 1024);
        link.block('forward');
        await c.kill9(follower);
        installedBeforeKill = c.logsOf(follower).some((l) => l.event === 'snapshot-installed');
        link.heal();
        await c.restart(follower);
        await c.process(follower).waitForLog((l) => l.event === 'snapshot-installed', 30_000);
        await t.progress(15);
        const target = (await c.status(leader)).commit;
        await pollUntil(`${followerId} to apply index ${target}`, async () => ((await c.status(follower)).applied >= target ? true : undefined), 20_000);
        let n = 0;
        for (let k = 0; k < 4; k++) {
          const [mine, theirs] = await Promise.all([c.readLocal(follower, `${BULK}/${k}`), c.readLocal(leader, `${BULK}/${k}`)]);
          expect(mine.items).toEqual(theirs.items);
          n += mine.items.length;
        }
        bulkOnFollower = n;
      },
    });
    expect(installedBeforeKill).toBe(false);
    expect(bulkOnFollower).toBe(BULK_ITEMS);
  });
});
