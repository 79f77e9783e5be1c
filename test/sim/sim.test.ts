// The seeded simulation run.
//
//   npx vitest run test/sim                          CI: 1,000 seeds x 2,000 fault steps (3- and 5-node),
//                                                    most with log compaction and snapshot transfer
//   VERA_SIM_SEEDS=20000 npx vitest run test/sim     soak: that many seeds
//   VERA_SIM_FIRST_SEED=50000 ...                    start the seed range elsewhere
//   VERA_SIM_STEPS=10000 ...                         longer fault phase per run
//   VERA_SIM_SEED=12345 npx vitest run test/sim      replay one seed, printing every event
//
// A failing run throws an InvariantViolation naming the invariant, the seed, the
// step, the exact replay command and the last events before the failure.

import { describe, expect, it } from 'vitest';
import { readSimEnvironment, runSeed } from './run.js';

const CI_SEEDS = 1000;
const CHUNK = 50;
const env = readSimEnvironment();

if (env.replaySeed !== null) {
  const seed = env.replaySeed;
  describe(`replay of seed ${seed}`, () => {
    it('runs verbosely and passes every check', async () => {
      const result = await runSeed(seed, { faultSteps: env.steps, log: (line) => console.log(line) });
      console.log(JSON.stringify({ config: result.config, stats: result.stats }, null, 2));
      expect(result.stats.steps).toBeGreaterThanOrEqual(env.steps);
    }, 600_000);
  });
} else {
  const count = env.seeds ?? CI_SEEDS;
  const first = env.firstSeed;
  const sizes = new Map<number, number>();
  let totalSteps = 0;
  let totalMs = 0;
  /** Seeds that compacted, that installed a snapshot; totals of snapshot events. */
  const snapshotCoverage = { compactedSeeds: 0, installedSeeds: 0, installed: 0, installCrashes: 0, ignored: 0, aborted: 0 };
  /** Seeds in which some leader held a lease; steps checked under a lease; client reads it answered. */
  const leaseCoverage = { seeds: 0, steps: 0, reads: 0, memberReads: 0 };
  /** The sessions model: sessions expired by a leader (each checked against its holder), sent away, liveness batches acknowledged. */
  const sessionCoverage = { expired: 0, moved: 0, acks: 0, keptAlive: 0 };

  describe(`seeded simulation: ${count} seeds from ${first}, ${env.steps} fault steps each`, () => {
    for (let start = first; start < first + count; start += CHUNK) {
      const end = Math.min(start + CHUNK, first + count);
      it(`seeds ${start}..${end - 1} keep every safety and liveness property`, async () => {
        const t0 = performance.now();
        for (let seed = start; seed < end; seed++) {
          const result = await runSeed(seed, { faultSteps: env.steps, traceTail: 60 });
          expect(result.stats.steps).toBeGreaterThanOrEqual(env.steps);
          sizes.set(result.config.nodeCount, (sizes.get(result.config.nodeCount) ?? 0) + 1);
          totalSteps += result.stats.steps;
          const st = result.stats;
          if (st.compactions > 0) snapshotCoverage.compactedSeeds++;
          if (st.snapshotsInstalled > 0) snapshotCoverage.installedSeeds++;
          snapshotCoverage.installed += st.snapshotsInstalled;
          snapshotCoverage.installCrashes += st.installCrashes;
          snapshotCoverage.ignored += st.snapshotsIgnored;
          snapshotCoverage.aborted += st.snapshotsAborted;
          if (st.leaseSteps > 0) leaseCoverage.seeds++;
          leaseCoverage.steps += st.leaseSteps;
          leaseCoverage.reads += st.leaseReads;
          leaseCoverage.memberReads += st.memberLeaseReads;
          sessionCoverage.expired += st.sessionsExpired;
          sessionCoverage.moved += st.sessionsMoved;
          sessionCoverage.acks += st.livenessAcks;
          sessionCoverage.keptAlive += st.sessionsKeptAlive;
        }
        totalMs += performance.now() - t0;
      }, 600_000);
    }

    it('ran every seed (both cluster sizes when there are enough) and reports throughput', () => {
      expect((sizes.get(3) ?? 0) + (sizes.get(5) ?? 0)).toBe(count);
      if (count >= 50) {
        expect(sizes.get(3) ?? 0).toBeGreaterThan(0);
        expect(sizes.get(5) ?? 0).toBeGreaterThan(0);
      }
      const seconds = totalMs / 1000;
      const c = snapshotCoverage;
      console.log(
        `simulation: ${count} seeds (${sizes.get(3) ?? 0} x 3 nodes, ${sizes.get(5) ?? 0} x 5 nodes), ${totalSteps} steps ` +
          `in ${seconds.toFixed(1)} s = ${(count / seconds).toFixed(1)} seeds/s, ${Math.round(totalSteps / seconds)} steps/s; ` +
          `${c.compactedSeeds} seeds compacted, ${c.installedSeeds} installed snapshots (${c.installed} installs, ` +
          `${c.installCrashes} power losses around an install, ${c.ignored} stale snapshots ignored, ${c.aborted} streams aborted); ` +
          `leases held in ${leaseCoverage.seeds} seeds over ${leaseCoverage.steps} steps, each checked against the cluster, ${leaseCoverage.reads} lease reads, ` +
          `${leaseCoverage.memberReads} members' reads answered under a lease; sessions: ${sessionCoverage.expired} expired (each checked against its holder), ` +
          `${sessionCoverage.moved} sent away (4009), ${sessionCoverage.acks} liveness batches acknowledged, ` +
          `${sessionCoverage.keptAlive} session-steps kept alive by a clean link to the leader (none sent away nor expired)`,
      );
    });

    // A small range proves nothing about coverage, so the check exists only for big ones.
    if (count >= 200) {
      it('exercised compaction and snapshot transfer in most seeds', () => {
        const c = snapshotCoverage;
        expect(c.compactedSeeds).toBeGreaterThan(0.6 * count);
        expect(c.installedSeeds).toBeGreaterThan(0.3 * count);
        expect(c.installCrashes).toBeGreaterThan(0);
        expect(c.ignored).toBeGreaterThan(0);
        expect(c.aborted).toBeGreaterThan(0);
        expect(leaseCoverage.seeds).toBeGreaterThan(0.6 * count);
        expect(leaseCoverage.reads).toBeGreaterThan(count);
        expect(leaseCoverage.memberReads).toBeGreaterThan(count / 10);
        expect(sessionCoverage.acks).toBeGreaterThan(count);
        expect(sessionCoverage.expired).toBeGreaterThan(count / 10);
        expect(sessionCoverage.keptAlive).toBeGreaterThan(count);
      });
    }
  });

  describe('determinism', () => {
    it('the same seed gives the same run (trace hash and statistics)', async () => {
      for (const seed of [7, 4242, 987654321]) {
        const a = await runSeed(seed, { faultSteps: 1500 });
        const b = await runSeed(seed, { faultSteps: 1500 });
        expect(b.traceHash).toBe(a.traceHash);
        expect(b.stats).toEqual(a.stats);
      }
    });

    it('a verbose replay follows exactly the same run and logs its events', async () => {
      const lines: string[] = [];
      const quiet = await runSeed(3, { faultSteps: 400 });
      const verbose = await runSeed(3, { faultSteps: 400, log: (line) => lines.push(line) });
      expect(verbose.traceHash).toBe(quiet.traceHash);
      expect(lines.some((l) => / is LEADER of term \d+/.test(l))).toBe(true);
      expect(lines.some((l) => l.includes('deliver n'))).toBe(true);
      expect(lines.some((l) => l.includes('faults stop'))).toBe(true);
    });

    it('different seeds give different runs', async () => {
      const hashes = new Set<number>();
      for (const seed of [1, 2, 3, 4, 5, 6]) hashes.add((await runSeed(seed, { faultSteps: 500 })).traceHash);
      expect(hashes.size).toBe(6);
    });
  });
}
