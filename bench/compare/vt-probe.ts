// Probe (issue 32): per-step timestamps of single puts on all three members. Needs the temporary
// trace points of bench/compare/vt-points.py in a build (see there); warms a cluster up, then puts
// one item at a time (PUTS, default 60, GAP ms apart, default 20) and writes VERA_TRACE/marks beside
// the members' traces; bench/compare/vt-parse.py lines them up.
//   VERA_TRACE=/tmp/vt npx tsx bench/compare/vt-probe.ts && python3 bench/compare/vt-parse.py /tmp/vt
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { closeAll } from '../scenarios/context.js';
import { startWarmCluster } from './warm-cluster.js';

const out = process.env.VERA_TRACE!;
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const { cluster, leader, client } = await startWarmCluster('vt', 500);
try {
  const members = cluster.members();
  const marks: string[] = [];
  const now = (): string => (performance.timeOrigin + performance.now()).toFixed(3);
  const n = Number(process.env.PUTS ?? 60);
  const gap = Number(process.env.GAP ?? 20);
  for (let i = 0; i < n; i++) {
    const a = now();
    await client.append(`vt/k${i}`, 'y'.repeat(128));
    marks.push(`${a} ${now()}`);
    if (gap > 0) await new Promise((r) => setTimeout(r, gap));
  }
  await new Promise((r) => setTimeout(r, 1200));
  writeFileSync(`${out}/marks`, `${members.map((m) => `member ${m.id} ${m.pid}${m.id === leader ? ' leader' : ''}`).join('\n')}\n${marks.join('\n')}\n`);
  await closeAll([client]);
} finally {
  await cluster.stop();
}
