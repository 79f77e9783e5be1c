// Probe (issue 32, rejoin): where a restarted member's rejoin time goes. A killed leader
// restarted on its data, split into spawn -> "started" logged -> every member serves under
// one leader, with the restarted member's log lines from that start (pino times).
//   npx tsx bench/compare/rejoin-steps.ts [rounds]   (npm run build first)
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectMany, closeAll } from '../scenarios/context.js';
import { VeraCluster } from '../systems/vera.js';
import { runWrites } from './workloads.js';

const rounds = Number(process.argv[2] ?? 3);
const logDir = mkdtempSync(join(tmpdir(), 'rj-steps-'));
const cluster = new VeraCluster({ logDir, inspector: false });
try {
  await cluster.start();
  const clients = await connectMany(cluster, 16);
  await runWrites(clients, cluster.members(), { id: 'load', clients: 16, inFlight: 64, puts: 2_000, keys: 'new' }, 'rj');
  await closeAll(clients);
  for (let r = 0; r < rounds; r++) {
    const victim = await cluster.leader();
    await cluster.kill9(victim);
    await cluster.leader(10_000);
    const logFile = join(logDir, `vera-${victim}.log`);
    const before = readFileSync(logFile, 'utf8').length;
    const wall0 = Date.now();
    const t0 = performance.now();
    await cluster.restart(victim);
    const started = performance.now() - t0;
    await cluster.waitHealthy(60_000);
    const healthy = performance.now() - t0;
    console.log(`round ${r + 1}: started ${started.toFixed(0)} ms, healthy ${healthy.toFixed(0)} ms (load ${loadavg()[0]!.toFixed(1)})`);
    for (const line of readFileSync(logFile, 'utf8').slice(before).split('\n')) {
      if (!line.startsWith('{')) continue;
      const rec = JSON.parse(line) as { time: number; event?: string; msg?: string };
      console.log(`  +${rec.time - wall0} ms ${rec.event ?? ''} ${rec.msg ?? ''}`);
    }
  }
} finally {
  await cluster.stop();
}
