// S6 reads of one small object: linearizable and stale (ZooKeeper: plain
// getData; etcd: serializable), one client in sequence and many in flight.
import { connectionsFor, runClosedLoop, value128, type ClosedLoopResult } from '../lib/load.js';
import type { BenchClient, ReadMode } from '../systems/system.js';
import { closeAll, connectMany, type Scale, type ScenarioContext } from './context.js';

export interface ReadRun {
  readonly mode: ReadMode;
  readonly inFlight: number;
  readonly connections: number;
  /** null when the system's client cannot make this kind of read. */
  readonly result: ClosedLoopResult | null;
  readonly unsupported: string | null;
}

const KEY = 's6/object';

export async function runS6(ctx: ScenarioContext): Promise<ReadRun[]> {
  await prepareS6(ctx);
  const runs: ReadRun[] = [];
  for (const [mode, inFlight] of s6Steps(ctx.scale)) runs.push(await runS6Step(ctx, mode, inFlight));
  return runs;
}

/** The reads S6 makes, in order: each mode, one client in sequence and then many in flight. */
export function s6Steps(scale: Scale): Array<[ReadMode, number]> {
  return (['linearizable', 'stale'] as const).flatMap((mode) => [1, scale.s6.concurrency].map((inFlight): [ReadMode, number] => [mode, inFlight]));
}

/** Writes the object S6 reads. */
export async function prepareS6(ctx: ScenarioContext): Promise<void> {
  const setup = await ctx.cluster.connect();
  try {
    await setup.prepareReadable(KEY, value128('read'));
  } finally {
    await setup.close();
  }
}

/** One kind of read at one in-flight level (after prepareS6). */
export async function runS6Step(ctx: ScenarioContext, mode: ReadMode, inFlight: number): Promise<ReadRun> {
  const { durationMs, warmupMs } = ctx.scale.s6;
  const connections = connectionsFor(inFlight);
  const clients = await connectMany(ctx.cluster, connections);
  try {
    // One probe tells "this client cannot do it" apart from a failure under load.
    try {
      await clients[0]!.read(KEY, mode);
    } catch (error) {
      return { mode, inFlight, connections, result: null, unsupported: error instanceof Error ? error.message : String(error) };
    }
    const result = await runClosedLoop<BenchClient>({ clients, inFlight, durationMs, warmupMs, minOps: inFlight * 2, op: (client) => client.read(KEY, mode) });
    ctx.log(`S6 ${mode} x${inFlight}: ${result.opsPerSec.toFixed(0)} ops/s, p50 ${result.latencyMs.p50.toFixed(2)} ms, p99 ${result.latencyMs.p99.toFixed(2)} ms`);
    return { mode, inFlight, connections, result, unsupported: null };
  } finally {
    await closeAll(clients);
  }
}
