// What the hibernation probes (probe.ts, large-ab.ts, freeze-prepare.ts, thaw-read.ts)
// share: a GC-pause meter, a loader that pushes items from 256 workers, and H1's active set.
import { PerformanceObserver } from 'node:perf_hooks';
import { connect, type VeraClient } from '../../src/client/index.js';
import { LOOPBACK } from '../lib/net.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
import type { VeraCluster } from '../systems/vera.js';

/** GC pauses observed since the last reset. */
export interface GcMeter {
  readonly totalMs: number;
  readonly longestMs: number;
  reset(): void;
}

/** Starts counting GC pauses after a full collection has settled (the process runs with --expose-gc). */
export async function startGcMeter(gc: () => void): Promise<GcMeter> {
  let totalMs = 0;
  let longestMs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      totalMs += e.duration;
      longestMs = Math.max(longestMs, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  gc();
  // Let the observer see the collection above, so it is not counted after the reset.
  await new Promise((go) => setTimeout(go, 50));
  const meter = {
    get totalMs() {
      return totalMs;
    },
    get longestMs() {
      return longestMs;
    },
    reset() {
      totalMs = 0;
      longestMs = 0;
    },
  };
  meter.reset();
  return meter;
}

/** Pushes `count` persistent items, item n to `path(n)`, from 256 workers spread over `pushers`. */
export async function pushItems(pushers: readonly VeraClient[], count: number, path: (n: number) => string): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 256 }, async (_, w) => {
      for (let n = next++; n < count; n = next++) await pushers[w % pushers.length]!.push(path(n), { n, pad: 'x'.repeat(64) }, { persistent: true, watch: false });
    }),
  );
}

/** A client of the cluster's leader, kept in `opened` so the probe closes it at the end. */
export async function leaderClient(cluster: VeraCluster, opened: VeraClient[]): Promise<VeraClient> {
  const leader = await cluster.leader();
  const c = await connect(`ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`, { connectTimeoutMs: 20_000, requestTimeoutMs: 60_000 });
  c.on('failed', () => undefined);
  opened.push(c);
  return c;
}

/**
 * H1's active set as the probes drive it: 16 pushes in flight over 8 leader clients to
 * `active` units until `done`, each push's latency sampled (and, in `slow`, stamped with
 * `stamp()` at its start); then the clients are replaced, so their sessions end as in H1,
 * and a linearizable read waits until those ends are applied. A failed push (a restart
 * under way) is logged and its client reopened when it closed.
 */
export class ActiveSet {
  private constructor(
    private readonly cluster: VeraCluster,
    private readonly opened: VeraClient[],
    private pushers: VeraClient[],
    private readonly active: number,
    private readonly options: { readonly persistent: boolean; readonly stamp: () => number; readonly log: (m: string) => void },
  ) {}

  static async open(cluster: VeraCluster, opened: VeraClient[], active: number, options: ActiveSet['options']): Promise<ActiveSet> {
    return new ActiveSet(cluster, opened, await ActiveSet.clients(cluster, opened), active, options);
  }

  private static clients(cluster: VeraCluster, opened: VeraClient[]): Promise<VeraClient[]> {
    return Promise.all(Array.from({ length: 8 }, () => leaderClient(cluster, opened)));
  }

  /** The clients now writing (to load data through). */
  get clients(): readonly VeraClient[] {
    return this.pushers;
  }

  async write(done: () => boolean, slow?: Array<[number, number]>): Promise<LatencySummary> {
    const samples = new Samples();
    const pushers = this.pushers;
    await Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let n = 0; !done(); n++) {
          const t = performance.now();
          const at = this.options.stamp();
          try {
            await pushers[w % pushers.length]!.push(`/users/u${(w * 7919 + n) % this.active}/items`, { n }, { persistent: this.options.persistent, watch: false });
          } catch (err) {
            this.options.log(`push failed: ${(err as Error).message}`);
            if (pushers[w % pushers.length]!.state !== 'open') pushers[w % pushers.length] = await leaderClient(this.cluster, this.opened);
            continue;
          }
          const ms = performance.now() - t;
          samples.add(ms);
          slow?.push([at, ms]);
        }
      }),
    );
    for (const c of pushers) await c.close().catch(() => undefined);
    this.pushers = await ActiveSet.clients(this.cluster, this.opened);
    // The sessions' ends (each deleting its thousands of items, on every member) are not the next window's.
    await this.cluster.settled();
    return samples.summary();
  }

  /** The active set's latencies while `work` runs, and for at least a second. */
  async whileDoing(work: () => Promise<void>, slow?: Array<[number, number]>): Promise<{ seconds: number; writes: LatencySummary }> {
    let running = true;
    const started = performance.now();
    const writes = this.write(() => !running && performance.now() - started >= 1000, slow);
    await work();
    const seconds = (performance.now() - started) / 1000;
    running = false;
    return { seconds, writes: await writes };
  }
}
