// Probe (issue 32): per-step timestamps of single puts on all three members. Needs the temporary
// trace points of bench/compare/vt-points.py in a build (see there); warms a cluster up, then puts
// one item at a time (PUTS, default 60, GAP ms apart, default 20) and writes VERA_TRACE/marks beside
// the members' traces; bench/compare/vt-parse.py lines them up.
//   VERA_TRACE=/tmp/vt npx tsx bench/compare/vt-probe.ts && python3 bench/compare/vt-parse.py /tmp/vt
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VeraCluster } from '../systems/vera.js';
import { connectMany, closeAll } from '../scenarios/context.js';
import { runWrites } from '../compare/workloads.js';

const out = process.env.VERA_TRACE!;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const logDir = mkdtempSync(join(tmpdir(), 'vt-'));
const cluster = new VeraCluster({ logDir, inspector: false });
await cluster.start();
try {
  const warm = await connectMany(cluster, 16);
  await runWrites(warm, cluster.members(), { id: 'warm', clients: 16, inFlight: 64, puts: 4000, keys: 'few' }, 'warm');
  await closeAll(warm);
  const leader = await cluster.leader();
  const members = cluster.members();
  const [client] = await connectMany(cluster, 1);
  for (let i = 0; i < 500; i++) await client!.append(`vtw/k${i}`, 'x'.repeat(128));
  const marks: string[] = [];
  const now = (): string => (performance.timeOrigin + performance.now()).toFixed(3);
  const n = Number(process.env.PUTS ?? 60);
  const gap = Number(process.env.GAP ?? 20);
  for (let i = 0; i < n; i++) {
    const a = now();
    await client!.append(`vt/k${i}`, 'y'.repeat(128));
    marks.push(`${a} ${now()}`);
    if (gap > 0) await new Promise((r) => setTimeout(r, gap));
  }
  await new Promise((r) => setTimeout(r, 1200));
  writeFileSync(`${out}/marks`, `${members.map((m) => `member ${m.id} ${m.pid}${m.id === leader ? ' leader' : ''}`).join('\n')}\n${marks.join('\n')}\n`);
  await closeAll([client!]);
} finally {
  await cluster.stop();
}
