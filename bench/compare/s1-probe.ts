// Probe (issue 32): the side-by-side's S1 and the compare's s1-new and s1-few on ONE
// cluster, interleaved, to tell a difference of Vera's path from one of timing.
//   ROUNDS=5 WARM=quick|full|<ms> IDLE=<ms> S1MS=800 npx tsx bench/compare/s1-probe.ts
// (npm run build first: the members run dist/). IDLE logs the members' CPU while idle.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VeraCluster } from '../systems/vera.js';
import { runWriteLoad } from '../scenarios/s1-s2-writes.js';
import { QUICK_SCALE, FULL_SCALE, connectMany, closeAll } from '../scenarios/context.js';
import { readProcCpuSeconds } from '../lib/cpu.js';
import { runWrites, writeWorkloads } from './workloads.js';

const rounds = Number(process.env.ROUNDS ?? 3);
const warm = process.env.WARM ?? 'quick';
const logDir = mkdtempSync(join(tmpdir(), 's1probe-'));
const cluster = new VeraCluster({ logDir, inspector: process.env.INSPECT === '1' });
const log = (m: string): void => console.log(`[${new Date().toISOString().slice(11, 23)}] ${m}`);
await cluster.start();
try {
  const ctx = { cluster, scale: QUICK_SCALE, log };
  const warmMs = warm === 'quick' ? QUICK_SCALE.warmupMs : warm === 'full' ? FULL_SCALE.warmupMs : Number(warm);
  log(`warm-up: ${warmMs} ms at 16 in flight`);
  await runWriteLoad(ctx, 16, warmMs, 0, 'warmup');
  for (let i = 0; i < Number(process.env.IDLE ?? 0) / 500; i++) {
    const c0 = cluster.members().map((m) => readProcCpuSeconds(m.pid!) ?? 0);
    await new Promise((r) => setTimeout(r, 500));
    const c1 = cluster.members().map((m) => readProcCpuSeconds(m.pid!) ?? 0);
    log(`idle 500 ms: members' CPU ms ${c1.map((v, j) => ((v - c0[j]!) * 1000).toFixed(0)).join(' ')}`);
  }
  const [s1new, s1few] = writeWorkloads(false);
  for (let r = 0; r < rounds; r++) {
    const s1 = await runWriteLoad(ctx, 1, Number(process.env.S1MS ?? 800), 100, `s1r${r}`);
    log(`S1 ${s1.result.opsPerSec.toFixed(0)} ops/s p50 ${s1.result.latencyMs.p50.toFixed(2)} (${s1.result.ops} ops)`);
    for (const w of [s1new!, s1few!]) {
      const clients = await connectMany(cluster, 1);
      const o = await runWrites(clients, cluster.members(), w, `p/${w.id}/${r}`);
      await closeAll(clients);
      log(`${w.id} ${o.opsPerSec.toFixed(0)} ops/s p50 ${o.latencyMs.p50.toFixed(2)}`);
    }
  }
} finally {
  await cluster.stop();
}
