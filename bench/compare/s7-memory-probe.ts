// Probe (issue 32, memory): S7's first step (10,000 items loaded with 1,024 appends in
// flight on a fresh cluster, then 2 s of one client's sequential writes; the bench's own
// runS7) on this checkout and on built REF checkouts, interleaved A B, B A, ..., with each
// member's RSS split into file-backed and anonymous pages (/proc/<pid>/status) and the
// largest member's V8 heap read through its inspector right after.
//   npx tsx bench/compare/s7-memory-probe.ts [rounds] [REF_CHECKOUT ...]   (npm run build first)
// VERA_BENCH_NODE_FLAGS gives this checkout's members Node flags (bench/systems/vera.ts), so
// `s7-memory-probe.ts 3 .` compares this build with and without them.
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import WebSocket from 'ws';
import { FULL_SCALE } from '../scenarios/context.js';
import { runS7 } from '../scenarios/s7-scale.js';
import { VeraCluster } from '../systems/vera.js';

const rounds = Number(process.argv[2] ?? 3);
const refs = process.argv.slice(3).map((r) => resolve(r));
const builds = [{ label: 'this', checkout: undefined as string | undefined }, ...refs.map((r, i) => ({ label: `ref${i + 1}`, checkout: r }))];
const MiB = (b: number): string => (b / 2 ** 20).toFixed(1);

/** VmRSS, RssAnon and RssFile of `pid`, bytes. */
function rssParts(pid: number): { rss: number; anon: number; file: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (f: string): number => Number(new RegExp(`^${f}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** process.memoryUsage() and the V8 heap spaces of a member, through its inspector. */
async function heapOf(url: string): Promise<string> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((ok, fail) => ws.once('open', ok).once('error', fail));
  const expression = `JSON.stringify({ m: process.memoryUsage(), spaces: require('node:v8').getHeapSpaceStatistics().filter((s) => s.physical_space_size > 0).map((s) => [s.space_name, s.space_size, s.space_used_size]) })`;
  const reply = await new Promise<string>((ok) => {
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as { id?: number; result?: { result?: { value?: string } } };
      if (msg.id === 1) ok(msg.result?.result?.value ?? '{}');
    });
    ws.send(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression, includeCommandLineAPI: true } }));
  });
  ws.close();
  const { m, spaces } = JSON.parse(reply) as { m: Record<string, number>; spaces: Array<[string, number, number]> };
  return `heap total ${MiB(m.heapTotal!)} used ${MiB(m.heapUsed!)} external ${MiB(m.external!)} (arrayBuffers ${MiB(m.arrayBuffers!)}); ${spaces.map(([n, size, used]) => `${n} ${MiB(size)}/${MiB(used)}`).join(', ')}`;
}

const results: Record<string, number[]> = Object.fromEntries(builds.map((b) => [b.label, []]));
for (let r = 0; r < rounds; r++) {
  for (const b of r % 2 === 0 ? builds : [...builds].reverse()) {
    const cluster = new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 's7m-')), inspector: true, ...(b.checkout === undefined ? {} : { checkout: b.checkout }) });
    try {
      await cluster.start();
      const ctx = { cluster, scale: { ...FULL_SCALE, s7: { itemSteps: [10_000], sessions: 0, watchesPerSession: 0, probeMs: 2_000 } }, log: () => undefined };
      const { steps } = await runS7(ctx, performance.now() + 120_000);
      const rss = steps[0]!.rssBytes;
      const largest = Object.entries(rss).sort((x, y) => y[1] - x[1])[0]!;
      results[b.label]!.push(largest[1]);
      const member = cluster.members().find((m) => m.id === largest[0])!;
      const parts = rssParts(member.pid!);
      console.log(`${b.label} round ${r + 1}: RSS ${Object.entries(rss).map(([id, v]) => `${id} ${MiB(v)}`).join(', ')} MiB; largest ${largest[0]} now: anon ${MiB(parts.anon)}, file ${MiB(parts.file)}; ${await heapOf(cluster.inspectorUrl(largest[0])!)} (load ${loadavg()[0]!.toFixed(1)})`);
    } finally {
      await cluster.stop();
    }
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [label, xs] of Object.entries(results)) console.log(`${label}: largest member's RSS at 10,000 items, median ${MiB(median(xs))} MiB (${xs.map(MiB).join(', ')})`);
