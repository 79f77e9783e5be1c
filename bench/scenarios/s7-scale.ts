// S7 scale, on a fresh cluster: the data grows step by step (loaded with 1024
// appends in flight), and at each step one client's sequential write latency
// and every server's RSS are recorded. Then sessions are opened (each holds
// one ephemeral item, so it is a live session/lease with heartbeats) and each
// session watches several lists; latency and RSS are recorded again.
import { connectionsFor, runClosedLoop, value128 } from '../lib/load.js';
import { currentRss } from '../lib/rss.js';
import type { LatencySummary } from '../lib/samples.js';
import type { BenchClient } from '../systems/system.js';
import { closeAll, connectMany, type ScenarioContext } from './context.js';

const VALUE = value128('scale');
const LOAD_IN_FLIGHT = 1024;

export interface ScaleStep {
  readonly items: number;
  readonly sessions: number;
  readonly watches: number;
  /** Sequential writes of one client at this size. */
  readonly writeLatencyMs: LatencySummary;
  readonly writeOpsPerSec: number;
  readonly rssBytes: Readonly<Record<string, number>>;
  /** How long loading up to this step took (items/s of the loader). */
  readonly loadItemsPerSec: number | null;
}

export interface S7Result {
  readonly steps: readonly ScaleStep[];
  /** Why the run stopped before the planned scale, if it did. */
  readonly cutShort: string | null;
}

/** `deadline` (performance.now()): a step whose loading would not finish by then is not started. */
export async function runS7(ctx: ScenarioContext, deadline: number): Promise<S7Result> {
  const { itemSteps, sessions, watchesPerSession, probeMs } = ctx.scale.s7;
  const steps: ScaleStep[] = [];
  const loaders = await connectMany(ctx.cluster, connectionsFor(LOAD_IN_FLIGHT));
  const probe = await ctx.cluster.connect();
  let items = 0;
  let rate = Number.NaN;
  let cutShort: string | null = null;
  // Opening sessions and watches, and the last probe, need time too.
  const reserveMs = probeMs + 2_000 + sessions * 10;
  try {
    for (const target of itemSteps) {
      const toLoad = target - items;
      // The first step always runs: without it there is nothing to compare.
      const expectedMs = Number.isFinite(rate) ? (toLoad / rate) * 1000 + probeMs : 0;
      if (steps.length > 0 && performance.now() + expectedMs + reserveMs > deadline) {
        cutShort = `stopped before ${target} items: loading at ${Math.round(rate)} items/s would not fit in the time budget`;
        ctx.log(`S7 ${cutShort}`);
        break;
      }
      const started = performance.now();
      if (toLoad > 0) await load(loaders, toLoad);
      const loadMs = performance.now() - started;
      if (toLoad > 0) rate = (toLoad / loadMs) * 1000;
      items = Math.max(items, target);
      steps.push(await measure(ctx, probe, items, 0, 0, probeMs, toLoad > 0 ? rate : null));
    }
    const holders = await connectMany(ctx.cluster, sessions);
    try {
      for (let i = 0; i < holders.length; i += 100) {
        await Promise.all(
          holders.slice(i, i + 100).map(async (h, j) => {
            const n = i + j;
            await h.appendEphemeral('s7/sessions', VALUE, 10_000);
            for (let w = 0; w < watchesPerSession; w++) await h.watch(`s7/watched/l${(n * watchesPerSession + w) % (sessions * watchesPerSession)}`, () => undefined);
          }),
        );
      }
      steps.push(await measure(ctx, probe, items, sessions, sessions * watchesPerSession, probeMs, null));
    } finally {
      await closeAll(holders);
    }
  } finally {
    await closeAll([probe, ...loaders]);
  }
  return { steps, cutShort };
}

/** Appends exactly `count` items with LOAD_IN_FLIGHT in flight. */
async function load(clients: readonly BenchClient[], count: number): Promise<void> {
  let issued = 0;
  let failures = 0;
  const worker = async (w: number): Promise<void> => {
    const client = clients[w % clients.length]!;
    while (issued < count) {
      issued++;
      try {
        await client.append(`s7/data/c${w % clients.length}`, VALUE);
      } catch (error) {
        issued--;
        if (++failures > 100) throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: LOAD_IN_FLIGHT }, (_, w) => worker(w)));
}

async function measure(ctx: ScenarioContext, probe: BenchClient, items: number, sessions: number, watches: number, probeMs: number, loadItemsPerSec: number | null): Promise<ScaleStep> {
  const run = await runClosedLoop({ clients: [probe], inFlight: 1, durationMs: probeMs, warmupMs: 200, op: (c) => c.append('s7/probe', VALUE) });
  const step: ScaleStep = {
    items,
    sessions,
    watches,
    writeLatencyMs: run.latencyMs,
    writeOpsPerSec: run.opsPerSec,
    rssBytes: currentRss(ctx.cluster.members()),
    loadItemsPerSec,
  };
  const rssMb = Object.values(step.rssBytes).map((b) => (b / 2 ** 20).toFixed(0));
  ctx.log(`S7 ${items} items, ${sessions} sessions, ${watches} watches: write p50 ${run.latencyMs.p50.toFixed(2)} ms; RSS ${rssMb.join('/')} MiB`);
  return step;
}
