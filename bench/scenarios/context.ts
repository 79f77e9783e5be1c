// What every scenario gets: the cluster under test, the scale of the run, and
// a logger. Scenarios are system-agnostic; they only use the Cluster and
// BenchClient interfaces.
import type { BenchClient, Cluster, ConnectOptions } from '../systems/system.js';

export interface Scale {
  /** Writes at 16 in flight right after a cluster starts, not measured. */
  readonly warmupMs: number;
  readonly s1: { readonly durationMs: number; readonly warmupMs: number };
  readonly s2: { readonly levels: readonly number[]; readonly durationMs: number; readonly warmupMs: number; readonly profileMs: number };
  readonly s3: { readonly watchers: readonly number[]; readonly rounds: readonly number[]; readonly roundTimeoutMs: number };
  readonly s4: { readonly owners: number; readonly ttlMs: number };
  readonly s5: { readonly trials: number; readonly writers: number; readonly beforeKillMs: number };
  readonly s6: { readonly durationMs: number; readonly warmupMs: number; readonly concurrency: number };
  readonly s7: { readonly itemSteps: readonly number[]; readonly sessions: number; readonly watchesPerSession: number; readonly probeMs: number };
}

export const FULL_SCALE: Scale = {
  warmupMs: 3_000,
  s1: { durationMs: 5_000, warmupMs: 500 },
  s2: { levels: [1, 16, 256, 1024], durationMs: 4_000, warmupMs: 500, profileMs: 3_000 },
  s3: { watchers: [100, 1_000], rounds: [40, 20], roundTimeoutMs: 5_000 },
  s4: { owners: 5, ttlMs: 2_000 },
  s5: { trials: 3, writers: 16, beforeKillMs: 1_500 },
  s6: { durationMs: 3_000, warmupMs: 300, concurrency: 256 },
  s7: { itemSteps: [10_000, 30_000, 100_000, 300_000], sessions: 1_000, watchesPerSession: 10, probeMs: 2_000 },
};

/** `--scale`: S7 alone, growing to 10^6 items (the scale issue's target). */
export const SCALE_RUN: Scale = {
  ...FULL_SCALE,
  s7: { ...FULL_SCALE.s7, itemSteps: [10_000, 30_000, 100_000, 300_000, 1_000_000] },
};

/** A smoke run: every scenario once, tiny, so it fits in 3 minutes even on a busy machine. */
export const QUICK_SCALE: Scale = {
  warmupMs: 2_000,
  s1: { durationMs: 800, warmupMs: 100 },
  s2: { levels: [1, 16, 256, 1024], durationMs: 500, warmupMs: 100, profileMs: 500 },
  s3: { watchers: [20, 100], rounds: [3, 2], roundTimeoutMs: 5_000 },
  s4: { owners: 2, ttlMs: 2_000 },
  s5: { trials: 1, writers: 16, beforeKillMs: 500 },
  s6: { durationMs: 400, warmupMs: 100, concurrency: 256 },
  s7: { itemSteps: [500, 1_500], sessions: 20, watchesPerSession: 5, probeMs: 400 },
};

export interface ScenarioContext {
  readonly cluster: Cluster;
  readonly scale: Scale;
  readonly log: (message: string) => void;
}

/** Opens `count` clients, a few at a time (a thousand handshakes at once would only measure the accept queue). */
export async function connectMany(cluster: Cluster, count: number, options: ConnectOptions = {}, batch = 50): Promise<BenchClient[]> {
  const clients: BenchClient[] = [];
  try {
    for (let i = 0; i < count; i += batch) {
      const n = Math.min(batch, count - i);
      clients.push(...(await Promise.all(Array.from({ length: n }, () => cluster.connect(options)))));
    }
  } catch (error) {
    await closeAll(clients);
    throw error;
  }
  return clients;
}

/** Closes clients, a batch at a time, ignoring failures (a closed session is all that matters). */
export async function closeAll(clients: readonly BenchClient[], batch = 100): Promise<void> {
  for (let i = 0; i < clients.length; i += batch) {
    await Promise.allSettled(clients.slice(i, i + batch).map((c) => c.close()));
  }
}
