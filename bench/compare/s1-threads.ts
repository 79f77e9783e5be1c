// Probe (issue 32, S1): where a sequential put's CPU goes, by thread. One client puts
// to a new list at a time on a fresh 3-member cluster, in windows of 3 s; each window
// prints the members' CPU per put (utime + stime from /proc/<pid>/task/*/stat), split
// into the main threads (JavaScript, the event loop) and every other thread (V8's
// compiler and GC workers, libuv's pool doing LevelDB's writes and fsyncs).
//   WINDOWS=6 npx tsx bench/compare/s1-threads.ts   (npm run build first)
// VERA_BENCH_NODE_FLAGS passes V8 flags to the members (e.g. --single-threaded-gc).
// PERF=<window> records that window of the leader with `perf record` into /tmp/s1.perf.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeAll, connectMany } from '../scenarios/context.js';
import { VeraCluster } from '../systems/vera.js';

const CLOCK_TICK_MS = 10; // /proc times are in clock ticks of 10 ms on Linux
const windows = Number(process.env.WINDOWS ?? 4);

/** CPU ms so far of each thread of `pid`, by thread id. */
function threadCpuMs(pid: number): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(tid, (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return cpu;
}

const cluster = new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 's1-threads-')), inspector: false });
await cluster.start();
try {
  const leader = await cluster.leader();
  const [client] = await connectMany(cluster, 1);
  for (let i = 0; i < 300; i++) await client!.put(`warm-${i}`, 'x'.repeat(128));
  const members = cluster.members();
  const leaderPid = members.find((m) => m.id === leader)!.pid!;
  let n = 0;
  for (let w = 0; w < windows; w++) {
    const before = members.map((m) => threadCpuMs(m.pid!));
    const perf = process.env.PERF === String(w) ? spawn('perf', ['record', '-o', '/tmp/s1.perf', '-F', '4000', '-p', String(leaderPid)], { stdio: 'ignore' }) : null;
    const t0 = performance.now();
    let puts = 0;
    while (performance.now() - t0 < 3000) {
      await client!.put(`s1-${n++}`, 'x'.repeat(128));
      puts++;
    }
    const after = members.map((m) => threadCpuMs(m.pid!));
    if (perf !== null) {
      perf.kill('SIGINT');
      await new Promise((resolve) => perf.on('exit', resolve));
    }
    let all = 0;
    let main = 0;
    members.forEach((m, i) => {
      for (const [tid, ms] of after[i]!) {
        const used = ms - (before[i]!.get(tid) ?? 0);
        all += used;
        if (tid === String(m.pid)) main += used;
      }
    });
    console.log(`window ${w}: ${puts} puts in 3 s; CPU ms per put, all members: ${(all / puts).toFixed(2)} (main threads ${(main / puts).toFixed(2)}, other threads ${((all - main) / puts).toFixed(2)}); load ${loadavg()[0]!.toFixed(1)}`);
  }
  await closeAll([client!]);
} finally {
  await cluster.stop();
}
