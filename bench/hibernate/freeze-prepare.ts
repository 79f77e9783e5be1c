// What a large unit's freeze costs a member beside the log (issue 34): a 100,000-item
// unit read from LevelDB at a snapshot and its cold file written, as each member does
// after `freezeUnits` (prepareUnit, paced), then the result held until the commit,
// timing the CPU, the garbage collector's pauses meanwhile, one full collection with
// the result held, and the heap it takes. Run against a checkout's build (its dist/),
// this one's and another's in turn, under nice:
//   node --expose-gc --import tsx bench/hibernate/freeze-prepare.ts DIR
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startGcMeter } from './probe-tools.js';
import { ClassicLevel } from 'classic-level';

const checkout = resolve(process.argv[2] ?? '.');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');
const from = async <T>(path: string): Promise<T> => (await import(join(checkout, 'dist', path))) as T;
const { Breather, ColdStore, READ_PAGE_PAUSE_MS } = await from<typeof import('../../src/families/hibernate/cold-store.js')>('families/hibernate/cold-store.js');
const { prepareUnit } = await from<typeof import('../../src/families/hibernate/freezing.js')>('families/hibernate/freezing.js');
const { itemKey } = await from<typeof import('../../src/families/lists/keys.js')>('families/lists/keys.js');
const { encodeItemValue } = await from<typeof import('../../src/families/lists/codec.js')>('families/lists/codec.js');
const dir = mkdtempSync(join(tmpdir(), 'freeze-prepare-'));
const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
await db.open();
try {
  const ITEMS = 100_000;
  for (let at = 0; at < ITEMS; at += 10_000) {
    const batch = db.batch();
    for (let n = at; n < at + 10_000; n++) batch.put(itemKey(n % 2 === 0 ? '/large/unit/a' : '/large/unit/b', n + 1), encodeItemValue({ owner: null, data: { n, pad: 'x'.repeat(64) } }));
    await batch.write();
  }
  const cold = await ColdStore.open(join(dir, 'cold'));
  const gcPauses = await startGcMeter(gc);
  const held: unknown[] = [];
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let k = 0; k < 2; k++) {
    const snapshot = db.snapshot();
    held.push(await prepareUnit(db as never, cold, '/large/unit', ITEMS, k + 1, snapshot as never, () => true, new Breather(READ_PAGE_PAUSE_MS)));
    await snapshot.close();
  }
  const cpu = process.cpuUsage(cpu0);
  const wallMs = (performance.now() - t0) / 2;
  await new Promise((go) => setTimeout(go, 50));
  const t1 = performance.now();
  gc();
  const fullGcMs = performance.now() - t1;
  console.log(JSON.stringify({ checkout, perFreeze: { wallMs: Math.round(wallMs), cpuMs: Math.round((cpu.user + cpu.system) / 2000) }, gcPausesMs: Math.round(gcPauses.totalMs), longestGcMs: Math.round(gcPauses.longestMs), fullGcWithTwoHeldMs: Math.round(fullGcMs), heapMiB: Math.round(process.memoryUsage().heapUsed / 2 ** 20), held: held.length }));
} finally {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
}
