// Probe: where one client's get-or-create request spends its time. On a fresh
// 3-member cluster, one client sends, one at a time: stale gets (socket + dispatch
// floor), linearizable gets (+ the lease check), returning-user logins (the read
// path), new-user logins (the write path) and plain pushes (a Raft round of the
// core, for comparison); prints each kind's p50/p90/mean and the leader's
// linearizable-read counters.
//   npx tsx bench/assign/path-probe.ts [--n 2000] [--checkout DIR]
import { connect } from '../../src/client/index.js';
import { AssignClient } from '../../src/families/assign/client.js';
import { LOOPBACK } from '../lib/net.js';
import { Samples } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';
import { NODES, RELEASE_RATE, SERVICE, VALUES } from './a1.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const n = Number(args[args.indexOf('--n') + 1] ?? 2000) || 2000;
const checkout = args.includes('--checkout') ? args[args.indexOf('--checkout') + 1] : undefined;
const cluster = new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 'ap-')), inspector: false, ...(checkout === undefined ? {} : { checkout }) });
await cluster.start();
try {
  const leader = await cluster.leader();
  const url = `ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`;
  const c = await connect(url, { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
  const a = new AssignClient(c);
  for (let tries = 0; ; tries++) {
    try {
      await a.service(SERVICE, { releaseRate: RELEASE_RATE });
      break;
    } catch (err) {
      if (tries > 200) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  for (const x of NODES) await a.addNode(SERVICE, x.node, { capacity: x.capacity, available: x.available });
  const known: string[] = [];
  for (let i = 0; i < 300; i++) {
    await a.user(SERVICE, `seed-${i}@example.com`, VALUES);
    known.push(`seed-${i}@example.com`);
  }
  await c.push('/probe/x', 'v');
  const kinds: Record<string, () => Promise<unknown>> = {
    'get stale': () => c.get('/probe/x', { consistency: 'stale' } as never),
    'get linearizable': () => c.get('/probe/x'),
    'login returning': () => a.user(SERVICE, known[Math.floor(Math.random() * known.length)]!, VALUES),
    'login new': () => a.user(SERVICE, `new-${Math.random().toString(36).slice(2)}@example.com`, VALUES),
    'push (core write)': () => c.push('/probe/y', 'v'),
  };
  const samples = new Map(Object.keys(kinds).map((k) => [k, new Samples()]));
  // Interleaved kind by kind so a load that changes favours none; warm up first.
  for (let round = -1; round < n / 100; round++) {
    for (const [k, f] of Object.entries(kinds)) {
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        await f();
        if (round >= 0) samples.get(k)!.add(performance.now() - t);
      }
    }
  }
  for (const [k, s] of samples) {
    const m = s.summary();
    console.log(`${k.padEnd(20)} n ${s.count} p50 ${m.p50.toFixed(3)} p90 ${m.p90.toFixed(3)} p99 ${m.p99.toFixed(3)} mean ${m.mean.toFixed(3)} ms`);
  }
  await c.close();
} finally {
  await cluster.stop();
}
