// Repeatable jobs on a real three-member cluster (real processes on loopback, a fault
// proxy on every peer link) while the leader is killed with kill -9 and restarted, twice:
// exactly one job per tick. A worker claims and finishes every job as it comes, so a tick
// made twice would show as a key done twice (made again after its done), or as more ticks
// counted by the schedule than distinct jobs (made again while it waited, merged into one).
import { afterAll, describe, expect, it } from 'vitest';
import { ChaosCluster } from '../../cluster/harness.js';
import { afterFailure, openClient } from '../../cluster/pace.js';
import { pollUntil } from '../../support/poll.js';
import { killAll } from '../../support/vera-process.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { JournalClient, type ScheduleInfo } from '../../../src/families/journal/client.js';
import type { VeraClient } from '../../../src/client/index.js';
import { VeraError } from '../../../src/protocol/index.js';

afterAll(async () => {
  await killAll();
});

const EVERY_MS = 250;
/** Refusals that are answers, not a member going away: returned, not retried. */
const ANSWERS = new Set(['BAD_REQUEST', 'NOT_FOUND', 'CONFLICT', 'FORBIDDEN', 'TOO_LARGE', 'QUOTA_EXCEEDED']);

describe('schedules under leader kills', () => {
  it('make exactly one job per tick', { timeout: 150_000 }, async () => {
    const cluster = await ChaosCluster.start({ size: 3 });
    const clients: VeraClient[] = [];
    const reopen = (): Promise<VeraClient> => openClient(cluster.urls, { timeoutMs: 10_000, requestTimeoutMs: 15_000 }, clients);
    let client = await reopen();
    let closed = false;
    // A call retried across the failover until it is answered (an answer may be a refusal).
    const call = async <T,>(f: (j: JournalClient) => Promise<T>): Promise<T> => {
      for (;;) {
        try {
          return await f(new JournalClient(client));
        } catch (err) {
          if ((err instanceof VeraError && ANSWERS.has(err.code)) || closed) throw err;
          client = await afterFailure(client, reopen);
        }
      }
    };
    const done = new Map<string, number>();
    const claimed = new Set<string>();
    const doneMaybe = new Set<string>();
    const work = async (): Promise<void> => {
      while (!closed) {
        const claim = await call((j) => j.claim('reports', { max: 50, waitMs: 500 })).catch(() => null);
        for (const item of claim?.items ?? []) {
          claimed.add(item.key);
          // A done whose answer was lost and that is sent again gets CONFLICT: not counted twice.
          const ok = await call((j) => j.done('reports', item.key, claim!.lease)).then(() => true, () => false);
          if (ok) done.set(item.key, (done.get(item.key) ?? 0) + 1);
          else doneMaybe.add(item.key);
        }
      }
    };
    let worker: Promise<void> = Promise.resolve();
    try {
      await call((j) => j.create('reports', { timeoutMs: 3000 }));
      await untilCommandVersion(() => call((j) => j.schedule('reports', 'tick', { everyMs: EVERY_MS, data: { report: 'tick' } })));
      worker = work();
      const produced = async (): Promise<ScheduleInfo> => (await call((j) => j.schedules('reports')))[0]!;
      for (let round = 1; round <= 2; round++) {
        await pollUntil('ticks to come', async () => ((await produced()).produced >= round * 8 ? true : undefined), 30_000);
        const leader = await cluster.waitForLeader();
        await cluster.kill9(leader);
        await cluster.waitForLeader({ not: leader });
        await cluster.restart(leader);
      }
      const before = (await produced()).produced;
      await pollUntil('ticks after the kills', async () => ((await produced()).produced >= before + 8 ? true : undefined), 30_000);
      const last = await produced();
      await call((j) => j.unschedule('reports', 'tick'));
      await pollUntil('every job done', async () => {
        const { counts } = await call((j) => j.show('reports'));
        return counts.waiting + counts.processing === 0 ? true : undefined;
      }, 30_000);
      closed = true;
      await worker;

      const ticks = [...claimed].map((k) => Date.parse(k.slice('tick@'.length)));
      expect(ticks.every((t) => t % EVERY_MS === 0)).toBe(true);
      // Every job made by the ticks counted up to the last one read: one distinct key each, done once.
      const upToLast = [...claimed].filter((k) => Date.parse(k.slice('tick@'.length)) <= last.lastTick);
      expect(upToLast.length).toBe(last.produced);
      expect(last.skipped).toBe(0);
      expect([...done.entries()].filter(([, n]) => n > 1)).toEqual([]);
      // The journal is empty, so every job was done: acknowledged, or by a done whose answer was lost.
      expect([...claimed].filter((k) => !done.has(k) && !doneMaybe.has(k))).toEqual([]);
      expect(cluster.faults.filter((f) => f.what.startsWith('kill9'))).toHaveLength(2);
      console.info(`schedules under leader kills: ${last.produced} ticks made one job each; faults: ${cluster.faults.map((f) => f.what).join('; ')}`);
    } finally {
      closed = true;
      await worker.catch(() => undefined);
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      await cluster.close();
    }
  });
});
