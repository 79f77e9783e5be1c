// The write workloads of `--compare`: S1 (one client, one write at a time) and
// S2 (16 clients, 1,024 in flight), each in two forms: every put to a NEW list
// (as etcd's `benchmark put --key-space-size` spreads keys; what an application
// storing many objects does) and puts to a few lists (one per connection).
// A run is a fixed number of puts, so every system does the same work, and the
// members' CPU time comes from /proc/<pid>/stat around it.
import { readProcCpuSeconds } from '../lib/cpu.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
import { value128 } from '../lib/load.js';
import type { BenchClient, MemberInfo } from '../systems/system.js';

export type KeySpace = 'new' | 'few';

export interface WriteWorkload {
  /** s1-new, s1-few, s2-new, s2-few. */
  readonly id: string;
  readonly clients: number;
  readonly inFlight: number;
  readonly puts: number;
  readonly keys: KeySpace;
}

export function writeWorkloads(quick: boolean): WriteWorkload[] {
  const s1 = quick ? 150 : 600;
  const s2 = quick ? 3_000 : 20_000;
  return [
    { id: 's1-new', clients: 1, inFlight: 1, puts: s1, keys: 'new' },
    { id: 's1-few', clients: 1, inFlight: 1, puts: s1, keys: 'few' },
    { id: 's2-new', clients: 16, inFlight: 1024, puts: s2, keys: 'new' },
    { id: 's2-few', clients: 16, inFlight: 1024, puts: s2, keys: 'few' },
  ];
}

export interface WriteOutcome {
  readonly ok: number;
  /** Puts that failed (refusals included): counted, never retried by the generator. */
  readonly failed: number;
  readonly firstError: string | null;
  readonly seconds: number;
  readonly opsPerSec: number;
  readonly latencyMs: LatencySummary;
  /** CPU seconds (user + system) each member used during the run. */
  readonly cpuSeconds: Readonly<Record<string, number>>;
  /** All members' CPU per successful put, ms. */
  readonly cpuMsPerOp: number;
}

const VALUE = value128('compare');

/** The list a put goes to: a new one per put, or one per connection. */
export function listFor(keys: KeySpace, runTag: string, clientIndex: number, seq: number): string {
  return keys === 'new' ? `${runTag}/k${seq}` : `${runTag}/c${clientIndex}`;
}

/**
 * Puts `workload.puts` items through `clients` (workload.inFlight at a time) and
 * measures throughput, latency and the members' CPU. `runTag` keeps every run's
 * lists apart, so a new-keys run never writes a list an earlier run made.
 */
export async function runWrites(clients: readonly BenchClient[], members: readonly MemberInfo[], workload: WriteWorkload, runTag: string): Promise<WriteOutcome> {
  let next = 0;
  let ok = 0;
  let failed = 0;
  let firstError: string | null = null;
  const samples = new Samples(Math.min(workload.puts, 65_536));
  const cpu0 = cpuOf(members);
  const t0 = performance.now();
  const worker = async (w: number): Promise<void> => {
    const clientIndex = w % clients.length;
    const client = clients[clientIndex]!;
    for (let seq = next++; seq < workload.puts; seq = next++) {
      const started = performance.now();
      try {
        await client.append(listFor(workload.keys, runTag, clientIndex, seq), VALUE);
        samples.add(performance.now() - started);
        ok++;
      } catch (error) {
        failed++;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: workload.inFlight }, (_, w) => worker(w)));
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = cpuOf(members);
  const cpuSeconds: Record<string, number> = {};
  let total = 0;
  for (const [id, s0] of cpu0) {
    const s1 = cpu1.get(id);
    if (s1 === undefined) continue;
    cpuSeconds[id] = s1 - s0;
    total += s1 - s0;
  }
  return {
    ok,
    failed,
    firstError,
    seconds,
    opsPerSec: ok / seconds,
    latencyMs: samples.summary(),
    cpuSeconds,
    cpuMsPerOp: ok > 0 ? (total * 1000) / ok : Number.NaN,
  };
}

function cpuOf(members: readonly MemberInfo[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of members) {
    if (!m.alive || m.pid === null) continue;
    const s = readProcCpuSeconds(m.pid);
    if (s !== null) out.set(m.id, s);
  }
  return out;
}
