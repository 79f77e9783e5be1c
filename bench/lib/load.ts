// The load generator every scenario and every system shares: a closed loop
// with a fixed number of operations in flight, spread over a set of clients,
// for a fixed time. Latency is recorded per operation after the warm-up.
import { Samples, type LatencySummary } from './samples.js';

export interface ClosedLoopOptions<C> {
  readonly clients: readonly C[];
  /** Operations in flight at any moment (one worker each). */
  readonly inFlight: number;
  readonly durationMs: number;
  /** Operations completing during the warm-up are not counted. */
  readonly warmupMs: number;
  /** One operation; `worker` is 0..inFlight-1 and `seq` counts that worker's operations. */
  readonly op: (client: C, worker: number, seq: number) => Promise<void>;
  /** After this many failed operations the run stops with an error (a broken system, not a slow one). */
  readonly maxErrors?: number;
  /** Pause after a failed operation, so a refusing server is not spun on. */
  readonly errorPauseMs?: number;
  /**
   * Keep the window open past durationMs (up to maxWindowMs) until this many operations
   * have completed in it: with many in flight on a slow system, a short window
   * could otherwise close before the first operation returns.
   */
  readonly minOps?: number;
  /** The longest the window may stretch to reach minOps (default 4x durationMs). */
  readonly maxWindowMs?: number;
}

export interface ClosedLoopResult {
  readonly inFlight: number;
  readonly ops: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly measuredMs: number;
  readonly opsPerSec: number;
  readonly latencyMs: LatencySummary;
  /** Every latency sample, for plots. */
  readonly samples: Samples;
}

export async function runClosedLoop<C>(options: ClosedLoopOptions<C>): Promise<ClosedLoopResult> {
  const { clients, inFlight, durationMs, warmupMs, op } = options;
  if (clients.length === 0) throw new RangeError('the load generator needs at least one client');
  if (!Number.isInteger(inFlight) || inFlight < 1) throw new RangeError(`in-flight must be a positive integer, got ${inFlight}`);
  if (!(durationMs > 0) || !(warmupMs >= 0)) throw new RangeError('duration must be positive and warm-up non-negative');
  const maxErrors = options.maxErrors ?? 1000;
  const errorPauseMs = options.errorPauseMs ?? 10;
  const minOps = options.minOps ?? 0;
  const samples = new Samples(16_384);
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const plannedEnd = measureFrom + durationMs;
  const hardEnd = measureFrom + (options.maxWindowMs ?? durationMs * 4);
  // The window closes at plannedEnd, or later at the completion that reaches minOps.
  let windowEnd = plannedEnd;
  let windowClosed = false;
  let ops = 0;
  let errors = 0;
  let firstError: string | null = null;
  let failure: Error | null = null;

  const worker = async (index: number): Promise<void> => {
    const client = clients[index % clients.length]!;
    let seq = 0;
    while (failure === null) {
      const t0 = performance.now();
      if (windowClosed || t0 >= hardEnd || (t0 >= plannedEnd && ops >= minOps)) return;
      try {
        await op(client, index, seq++);
        const t1 = performance.now();
        // Counted by completion time, so throughput has no edge losses at either end.
        if (!windowClosed && t1 >= measureFrom && (t1 <= plannedEnd || ops < minOps) && t1 <= hardEnd) {
          samples.add(t1 - t0);
          ops++;
          if (t1 > plannedEnd && ops >= minOps) {
            windowEnd = t1;
            windowClosed = true;
          }
        }
      } catch (error) {
        errors++;
        firstError ??= error instanceof Error ? error.message : String(error);
        if (errors > maxErrors) failure = new Error(`more than ${maxErrors} operations failed; first: ${firstError}`);
        await new Promise((resolve) => setTimeout(resolve, errorPauseMs));
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, (_, i) => worker(i)));
  if (failure !== null) throw failure;
  if (!windowClosed && ops < minOps) windowEnd = Math.min(hardEnd, performance.now());
  const measuredMs = windowEnd - measureFrom;
  return {
    inFlight,
    ops,
    errors,
    firstError,
    measuredMs,
    opsPerSec: (ops / measuredMs) * 1000,
    latencyMs: samples.summary(),
    samples,
  };
}

/** How many connections carry `inFlight` operations: the same rule for every system. */
export function connectionsFor(inFlight: number): number {
  return Math.max(1, Math.min(inFlight, 16));
}

/** A 128-byte value (ASCII, so 128 bytes in every encoding), tagged so watchers can tell writes apart. */
export function value128(tag: string): string {
  if (tag.length > 128) throw new RangeError(`a value tag must fit in 128 bytes, got ${tag.length}`);
  return tag + '.'.repeat(128 - tag.length);
}
