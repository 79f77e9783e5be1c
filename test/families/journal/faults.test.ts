// The journal on a real three-member cluster (real processes on loopback, a
// fault proxy on every peer link) while the leader is killed with kill -9 and
// restarted, twice, during thousands of add/claim/done cycles. The chaos trials
// (test/cluster) run the same workload and checker under every other fault;
// this one is about volume. See test/cluster/journal-checker.ts for what is
// checked: nothing acknowledged lost, nothing done twice, no superseded lease
// honoured, nothing claimed after its done, every member agreeing.
import { afterAll, describe, expect, it } from 'vitest';
import { ChaosCluster } from '../../cluster/harness.js';
import { checkJournal } from '../../cluster/journal-checker.js';
import { JournalWorkload } from '../../cluster/journal-workload.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';

afterAll(async () => {
  await killAll();
});

const CYCLES = 3000;

describe('the journal under leader kills', () => {
  it('loses no acknowledged item, completes none twice, and never honours a superseded lease', { timeout: 150_000 }, async () => {
    const cluster = await ChaosCluster.start({ size: 3 });
    const load = await JournalWorkload.start(cluster.urls, { workers: 6, batch: 10, maxBacklog: 600 });
    try {
      for (let round = 1; round <= 2; round++) {
        await pollUntil('work to flow', async () => (load.completedCount >= (round * CYCLES) / 3 ? true : undefined), 60_000);
        const leader = await cluster.waitForLeader();
        await cluster.kill9(leader);
        await cluster.waitForLeader({ not: leader });
        await cluster.restart(leader);
      }
      await pollUntil('thousands of cycles', async () => (load.completedCount >= CYCLES ? true : undefined), 60_000);
      await load.drain();
      await cluster.waitForQuiet();
      const report = checkJournal(load.history(), await load.final(cluster, cluster.members.map((m) => m.index)));
      console.info(`journal under leader kills: ${report.checked} operations checked; ${report.notes.join('; ')}; faults: ${cluster.faults.map((f) => f.what).join('; ')}`);
      expect(report.problems).toEqual([]);
      expect(cluster.faults.filter((f) => f.what.startsWith('kill9'))).toHaveLength(2);
    } finally {
      await load.close();
      await cluster.close();
    }
  });
});
