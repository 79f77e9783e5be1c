// Probe (issue 32): a timeline of single puts across the three members. Warms a cluster up,
// then puts 30 items one at a time with strace attached to every member (fdatasync, socket
// and file reads/writes, wall-clock µs) and writes OUT.strace and OUT.marks (each put's
// client-side start and end, each member's threads); bench/compare/timeline-parse.py
// lines them up. Needs strace and ptrace rights (root).
//   npx tsx bench/compare/tl-probe.ts /tmp/tl && python3 bench/compare/timeline-parse.py /tmp/tl
import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { closeAll } from '../scenarios/context.js';
import { startWarmCluster } from './warm-cluster.js';

const out = process.argv[2] ?? '/tmp/perfprobe/tl';
const { cluster, leader, client } = await startWarmCluster('tl', 200);
try {
  const members = cluster.members();
  console.log('leader', leader, members.map((m) => `${m.id}=${m.pid}`).join(' '));
  const args = ['-f', '-tt', '-T', '-e', 'trace=fdatasync,fsync,write,writev,read,pwrite64', '-o', `${out}.strace`, ...members.flatMap((m) => ['-p', String(m.pid)])];
  const st = spawn('strace', args, { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1500));
  const marks: string[] = [];
  const now = (): string => { const t = performance.timeOrigin + performance.now(); const d = new Date(t); return `${d.toISOString().slice(11, 19)}.${String(Math.floor((t % 1000) * 1000)).padStart(6, '0')}`; };
  for (let i = 0; i < 30; i++) {
    const a = now();
    await client.append(`tl/k${i}`, 'y'.repeat(128));
    marks.push(`${i} ${a} ${now()}`);
    await new Promise((r) => setTimeout(r, 30));
  }
  const tasks = members.map((m) => `${m.id} tasks ${readdirSync(`/proc/${m.pid}/task`).join(',')}`);
  st.kill('SIGINT');
  await new Promise((r) => st.on('exit', r));
  writeFileSync(`${out}.marks`, `${tasks.join('\n')}\n${members.map((m) => `${m.id} ${m.pid}${m.id === leader ? ' leader' : ''}`).join('\n')}\n${marks.join('\n')}\n`);
  await closeAll([client]);
} finally {
  await cluster.stop();
}
