import { it } from 'vitest';
import { JournalHarness, SETTINGS } from '../../../test/families/journal/harness.js';
import { startedFromRange, startedByRange } from '../../../src/families/journal/keys.js';

it('scan cost', async () => {
  const h = await JournalHarness.open();
  await h.ok({ op: 'create', name: 'j', settings: { ...SETTINGS, maxItems: 1_000_000 } });
  for (let b = 0; b < 40; b++) {
    await h.ok({ op: 'add', name: 'j', items: Array.from({ length: 1000 }, (_, i) => ({ key: `k${b}-${i}`, data: i })) });
    const lease = h.nextIndex;
    await h.ok({ op: 'claim', name: 'j', max: 1000 });
    await h.ok({ op: 'doneMany', name: 'j', items: Array.from({ length: 1000 }, (_, i) => [`k${b}-${i}`, lease] as const) });
    h.now += 10;
  }
  const T1 = h.now + 5000;
  const db = h.temp.db;
  const scan = async (range: { gte: Buffer; lt: Buffer }): Promise<number> => {
    const snapshot = db.snapshot();
    const t = performance.now();
    for await (const _ of db.keys({ ...range, snapshot, limit: 1000 })) void _;
    const ms = performance.now() - t;
    await snapshot.close();
    return ms;
  };
  const rounds = 40;
  let head = 0;
  let cursor = 0;
  for (let i = 0; i < rounds; i++) {
    head += await scan(startedByRange('j', T1 - 1000));
    cursor += await scan(startedFromRange('j', T1 - 1000));
  }
  console.log(`40000 finished claims: scan from the head ${(head / rounds).toFixed(2)} ms, from the cursor ${(cursor / rounds).toFixed(3)} ms (mean of ${rounds})`);
  await h.close();
}, 300_000);
