// What a large unit's thaw read costs a member (issue 34): a 100,000-item unit's cold
// file read four times with ColdStore.readInSlices and held (as a member holds its
// thaw reads for the steps), timing the CPU, the garbage collector's pauses meanwhile,
// one full collection with the reads held, and the heap they take. Run it against a
// checkout's build (its dist/), this one's and another's in turn, under nice:
//   node --expose-gc --import tsx bench/hibernate/thaw-read.ts DIR
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startGcMeter } from './probe-tools.js';

const checkout = resolve(process.argv[2] ?? '.');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const { ColdStore } = (await import(join(checkout, 'dist/families/hibernate/cold-store.js'))) as typeof import('../../src/families/hibernate/cold-store.js');
const dir = mkdtempSync(join(tmpdir(), 'thaw-read-'));
try {
  const store = await ColdStore.open(join(dir, 'cold'));
  // Keys and values shaped as the lists family stores H1's large unit.
  const entries: Array<readonly [Buffer, Buffer]> | null = Array.from({ length: 100_000 }, (_, i) => [Buffer.from(`\x01/large/unit/${i % 2 ? 'a' : 'b'}\x00${String(i).padStart(10, '0')}`), Buffer.from(JSON.stringify({ data: { n: i, pad: 'x'.repeat(64) }, t: 1 }))] as const);
  await store.write({ unit: '/large/unit', meta: { frozenAt: 1 }, entries });
  entries.length = 0;
  const gcPauses = await startGcMeter(gc);
  const held: unknown[] = [];
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let k = 0; k < 4; k++) held.push(await store.readInSlices('/large/unit'));
  const cpu = process.cpuUsage(cpu0);
  const wallMs = (performance.now() - t0) / 4;
  await new Promise((go) => setTimeout(go, 50));
  const t1 = performance.now();
  gc();
  const fullGcMs = performance.now() - t1;
  console.log(JSON.stringify({ checkout, perRead: { wallMs: Math.round(wallMs), cpuMs: Math.round((cpu.user + cpu.system) / 4000) }, gcPausesMs: Math.round(gcPauses.totalMs), longestGcMs: Math.round(gcPauses.longestMs), fullGcWithFourHeldMs: Math.round(fullGcMs), heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20), held: held.length }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
