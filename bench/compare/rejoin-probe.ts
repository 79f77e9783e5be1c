// Probe (issue 32, rejoin): a killed member restarted on its data, until every member
// serves under one leader again (S5's rejoin), on this checkout and on REF (a built
// checkout), interleaved A B B A ..., with the restarted process's CPU at that moment.
//   npx tsx bench/compare/rejoin-probe.ts /path/to/built/ref [rounds] [puts]   (npm run build first)
// `puts` (default 2,000, each to a new list) sizes the store the restarted member opens.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProcCpuSeconds } from '../lib/cpu.js';
import { connectMany, closeAll } from '../scenarios/context.js';
import { VeraCluster } from '../systems/vera.js';
import { runWrites } from './workloads.js';

const ref = process.argv[2];
const rounds = Number(process.argv[3] ?? 4);
const puts = Number(process.argv[4] ?? 2_000);
if (ref === undefined) throw new Error('usage: rejoin-probe.ts REF_CHECKOUT [rounds] [puts]');
const builds = [
  { label: 'this', cluster: new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 'rj-a-')), inspector: false }) },
  { label: 'ref', cluster: new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 'rj-b-')), inspector: false, checkout: ref }) },
];
const results: Record<string, Array<{ ms: number; cpuMs: number }>> = { this: [], ref: [] };
try {
  for (const b of builds) {
    await b.cluster.start();
    const clients = await connectMany(b.cluster, 16);
    await runWrites(clients, b.cluster.members(), { id: 'load', clients: 16, inFlight: 64, puts, keys: 'new' }, 'rj');
    await closeAll(clients);
  }
  for (let r = 0; r < rounds; r++) {
    for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
      const victim = await b.cluster.leader();
      await b.cluster.kill9(victim);
      await b.cluster.leader(10_000);
      const t0 = performance.now();
      await b.cluster.restart(victim);
      await b.cluster.waitHealthy(60_000);
      const ms = performance.now() - t0;
      const pid = b.cluster.members().find((m) => m.id === victim)?.pid ?? null;
      const cpuMs = pid === null ? Number.NaN : (readProcCpuSeconds(pid) ?? Number.NaN) * 1000;
      results[b.label]!.push({ ms, cpuMs });
      console.log(`${b.label} round ${r + 1}: rejoined in ${ms.toFixed(0)} ms, restarted member's CPU ${cpuMs.toFixed(0)} ms (load ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`);
    }
  }
} finally {
  await Promise.allSettled(builds.map((b) => b.cluster.stop()));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [label, rs] of Object.entries(results)) console.log(`${label}: median rejoin ${median(rs.map((x) => x.ms)).toFixed(0)} ms, median CPU at healthy ${median(rs.map((x) => x.cpuMs)).toFixed(0)} ms`);
