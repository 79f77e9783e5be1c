// S1 (sequential writes, one client) and S2 (concurrent writes at several
// in-flight levels), plus the election count during S2: a healthy cluster
// under load should not elect anyone.
import { startCpuMeter, type CpuShare } from '../lib/cpu.js';
import { connectionsFor, runClosedLoop, value128, type ClosedLoopResult } from '../lib/load.js';
import type { BenchClient } from '../systems/system.js';
import { closeAll, connectMany, type ScenarioContext } from './context.js';

const VALUE = value128('write');

export interface WriteRun {
  readonly inFlight: number;
  readonly connections: number;
  readonly result: ClosedLoopResult;
  /** CPU use while the load ran (percent of one core). */
  readonly cpu: CpuShare;
}

export interface S2Result {
  readonly levels: readonly WriteRun[];
  /** The highest level again, each put to a key no other put used (absent when the run predates it). */
  readonly newKeys?: WriteRun;
  /** Elections while S2 ran (Raft term or ZooKeeper epoch increase). */
  readonly electionsDuring: number;
}

/** `few`: one list per connection; `new`: every put to a key no other put used. */
export type KeySpace = 'few' | 'new';

export async function runWriteLoad(ctx: ScenarioContext, inFlight: number, durationMs: number, warmupMs: number, listPrefix: string, keys: KeySpace = 'few'): Promise<WriteRun> {
  const connections = connectionsFor(inFlight);
  const clients = await connectMany(ctx.cluster, connections);
  try {
    const stopMeter = startCpuMeter(ctx.cluster.members());
    const result = await runClosedLoop<BenchClient>({
      clients,
      inFlight,
      durationMs,
      warmupMs,
      minOps: inFlight * 2,
      // One list per connection: spreads the items the way independent applications would.
      op: keys === 'few' ? (client, worker) => client.append(`${listPrefix}/c${worker % connections}`, VALUE) : (client, worker, seq) => client.put(`${listPrefix}/w${worker}-${seq}`, VALUE),
    });
    return { inFlight, connections, result, cpu: stopMeter() };
  } finally {
    await closeAll(clients);
  }
}

export async function runS1(ctx: ScenarioContext): Promise<WriteRun> {
  const { durationMs, warmupMs } = ctx.scale.s1;
  const run = await runWriteLoad(ctx, 1, durationMs, warmupMs, 's1');
  ctx.log(`S1 ${run.result.opsPerSec.toFixed(0)} ops/s, p50 ${run.result.latencyMs.p50.toFixed(2)} ms, p99 ${run.result.latencyMs.p99.toFixed(2)} ms`);
  return run;
}

export async function runS2(ctx: ScenarioContext): Promise<S2Result> {
  const before = await ctx.cluster.electionCounter();
  const runs: WriteRun[] = [];
  for (const level of ctx.scale.s2.levels) runs.push(await runS2Level(ctx, level));
  const top = Math.max(...ctx.scale.s2.levels);
  const { durationMs, warmupMs } = ctx.scale.s2;
  const newKeys = await runWriteLoad(ctx, top, durationMs, warmupMs, `s2n/${top}`, 'new');
  ctx.log(`S2 ${top} in flight, a new key per put: ${newKeys.result.opsPerSec.toFixed(0)} ops/s, p99 ${newKeys.result.latencyMs.p99.toFixed(2)} ms${newKeys.result.errors > 0 ? `, ${newKeys.result.errors} errors (${newKeys.result.firstError})` : ''}`);
  const after = await ctx.cluster.electionCounter();
  return { levels: runs, newKeys, electionsDuring: Math.max(0, after - before) };
}

/** One in-flight level of S2 (runS2 runs them all in turn; the security run interleaves configurations level by level). */
export async function runS2Level(ctx: ScenarioContext, level: number): Promise<WriteRun> {
  const { durationMs, warmupMs } = ctx.scale.s2;
  const run = await runWriteLoad(ctx, level, durationMs, warmupMs, `s2/${level}`);
  ctx.log(`S2 ${level} in flight: ${run.result.opsPerSec.toFixed(0)} ops/s, p50 ${run.result.latencyMs.p50.toFixed(2)} ms, p99 ${run.result.latencyMs.p99.toFixed(2)} ms${run.result.errors > 0 ? `, ${run.result.errors} errors (${run.result.firstError})` : ''}`);
  return run;
}
