// S5 failover: a steady write load runs (closed-loop writers), the leader is
// killed with SIGKILL, and we time the gap until the first write issued
// after the kill is acknowledged. Writes already in flight do not count: a
// reply already on its way would hide the gap, and a write stuck with the
// dead leader only says how long the client waits for it. A prober issues a
// new write every PROBE_EVERY_MS besides, so the gap does not depend on when
// stuck writers give up. The killed member is then restarted on its data so
// the next trial starts from a full cluster.
import { delay } from '../lib/net.js';
import type { PeakRssTracker } from '../lib/rss.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
import { value128 } from '../lib/load.js';
import type { BenchClient } from '../systems/system.js';
import { closeAll, connectMany, type ScenarioContext } from './context.js';

const VALUE = value128('failover');

export interface FailoverTrial {
  readonly killed: string;
  readonly newLeader: string | null;
  /** NaN when no write was acknowledged within the trial's limit. */
  readonly gapMs: number;
  readonly errorsDuringGap: number;
  /**
   * From restarting the killed member on its data until every member serves
   * under one leader again (NaN if it was not restarted): what a rolling restart
   * or a crashed member costs. Counts the process start, opening the store and
   * catching up.
   */
  readonly rejoinMs: number;
}

export interface S5Result {
  readonly trials: readonly FailoverTrial[];
  readonly gapMs: LatencySummary;
  /** Absent in results written before rejoin was measured. */
  readonly rejoinMs?: LatencySummary;
}

const GAP_LIMIT_MS = 30_000;
const PROBE_EVERY_MS = 10;
const PROBE_MAX_OUTSTANDING = 200;

export async function runS5(ctx: ScenarioContext, rss: PeakRssTracker): Promise<S5Result> {
  const trials: FailoverTrial[] = [];
  for (let t = 0; t < ctx.scale.s5.trials; t++) {
    await ctx.cluster.waitHealthy(60_000);
    const trial = await failoverTrial(ctx, rss);
    ctx.log(`S5 trial ${t + 1}: killed ${trial.killed}, gap ${trial.gapMs.toFixed(0)} ms, new leader ${trial.newLeader ?? 'unknown'}, rejoined in ${trial.rejoinMs.toFixed(0)} ms`);
    trials.push(trial);
  }
  const gaps = new Samples();
  const rejoins = new Samples();
  for (const t of trials) {
    if (Number.isFinite(t.gapMs)) gaps.add(t.gapMs);
    if (Number.isFinite(t.rejoinMs)) rejoins.add(t.rejoinMs);
  }
  return { trials, gapMs: gaps.summary(), rejoinMs: rejoins.summary() };
}

async function failoverTrial(ctx: ScenarioContext, rss: PeakRssTracker): Promise<FailoverTrial> {
  const { writers, beforeKillMs } = ctx.scale.s5;
  const clients = await connectMany(ctx.cluster, 4);
  let stop = false;
  let killAt = Number.NaN;
  let errorsDuringGap = 0;
  let firstAckAfterKill: (at: number) => void = () => undefined;
  const acked = new Promise<number>((resolve) => (firstAckAfterKill = resolve));
  const worker = async (client: BenchClient, w: number): Promise<void> => {
    while (!stop) {
      const issuedAt = performance.now();
      try {
        await client.append(`s5/w${w}`, VALUE);
        if (issuedAt >= killAt) firstAckAfterKill(performance.now());
      } catch {
        if (performance.now() >= killAt) errorsDuringGap++;
        // Same pause for every system: do not spin on a refusing client.
        await delay(10);
      }
    }
  };
  const workers = Array.from({ length: writers }, (_, w) => worker(clients[w % clients.length]!, w));
  let outstanding = 0;
  let probeSeq = 0;
  const prober = setInterval(() => {
    if (stop || outstanding >= PROBE_MAX_OUTSTANDING) return;
    const client = clients[probeSeq++ % clients.length]!;
    const issuedAt = performance.now();
    outstanding++;
    client.append('s5/probe', VALUE).then(
      () => {
        outstanding--;
        if (issuedAt >= killAt) firstAckAfterKill(performance.now());
      },
      () => {
        outstanding--;
        if (performance.now() >= killAt) errorsDuringGap++;
      },
    );
  }, PROBE_EVERY_MS);
  let killed = '';
  let newLeader: string | null = null;
  let gapMs = Number.NaN;
  let rejoinMs = Number.NaN;
  try {
    await delay(beforeKillMs);
    killed = await ctx.cluster.leader();
    rss.sample();
    killAt = performance.now();
    await ctx.cluster.kill9(killed);
    let timer: NodeJS.Timeout | undefined;
    const ackAt = await Promise.race([acked, new Promise<number>((resolve) => (timer = setTimeout(() => resolve(Number.NaN), GAP_LIMIT_MS)))]);
    clearTimeout(timer);
    gapMs = ackAt - killAt;
    newLeader = await ctx.cluster.leader(5_000).catch(() => null);
  } finally {
    stop = true;
    clearInterval(prober);
    // Writers blocked on a dead connection give up on their own; do not wait for the client's request timeout.
    await Promise.race([Promise.allSettled(workers), delay(5_000)]);
    await closeAll(clients);
    if (killed !== '') {
      const restartAt = performance.now();
      await ctx.cluster.restart(killed);
      await ctx.cluster.waitHealthy(60_000);
      rejoinMs = performance.now() - restartAt;
    }
  }
  return { killed, newLeader, gapMs, errorsDuringGap, rejoinMs };
}
