// What the hibernation probes (probe.ts, large-ab.ts, freeze-prepare.ts, thaw-read.ts)
// share: a GC-pause meter and a loader that pushes items from 256 workers.
import { PerformanceObserver } from 'node:perf_hooks';
import type { VeraClient } from '../../src/client/index.js';

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
