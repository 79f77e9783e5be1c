// A journal of 10^6 items on a real state machine over a real LevelDB: added in
// entries of 1000, claimed in priority order from the top without reading the
// rest, 10% expired through the expiration index in bounded entries, reloaded
// as a restarted member would, and dropped in bounded entries. What a unit test
// at a few items cannot show: a one-shot batch or a scan over every item would
// show here as time or memory (the figures are printed; the bounds asserted are
// on work per entry, not on time).
import { afterAll, describe, expect, it } from 'vitest';
import type { JournalValue } from '../../src/families/journal/apply.js';
import { journal } from '../../src/families/journal/index.js';
import { JournalBucket } from '../../src/families/journal/keys.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { bucketRange } from '../../src/keys/index.js';
import { JournalHarness, SETTINGS } from '../families/journal/harness.js';
import { lap } from './lap.js';
import { REGISTRY } from '../../src/families/registry.js';

// VERA_SCALE_ITEMS (a multiple of 1000) runs it at another size.
const ITEMS = Number(process.env.VERA_SCALE_ITEMS ?? 1_000_000);
const PER_ADD = 1000;
const key = (i: number): string => `job-${String(i).padStart(7, '0')}`;
const priorityOf = (i: number): number => i % 256;
const expires = (i: number): boolean => i % 10 === 0;

let h: JournalHarness | null = null;
afterAll(async () => {
  await h?.close();
});

async function countKeys(harness: JournalHarness, bucket: number): Promise<number> {
  let n = 0;
  for await (const _ of harness.temp.db.keys(bucketRange(bucket))) n++;
  return n;
}

describe('10^6 journal items', () => {
  it('adds, claims in order, expires, reloads and drops them in bounded entries', { timeout: 600_000 }, async () => {
    h = await JournalHarness.open();
    const harness = h;
    const t0 = performance.now();
    await harness.ok({ op: 'create', name: 'big', settings: { ...SETTINGS, maxItems: 2 * ITEMS } });
    const start = harness.now;
    for (let from = 0; from < ITEMS; from += PER_ADD) {
      const items = [];
      for (let i = from; i < from + PER_ADD; i++) {
        items.push({ key: key(i), data: i, priority: priorityOf(i), processAt: start - 1000 + (i % 1000), ...(expires(i) ? { expiresAt: start + 5000 } : {}) });
      }
      const added = await harness.ok({ op: 'add', name: 'big', items });
      if (added.op !== 'add' || added.inserted !== PER_ADD) throw new Error(`add at ${from} inserted ${JSON.stringify(added)}`);
    }
    let t = lap(`added ${ITEMS}`, t0);
    const counts = harness.definition('big')!.counts;
    expect(counts.waiting).toBe(ITEMS);
    expect(Object.values(counts.byPriority).reduce((a, b) => a + b, 0)).toBe(ITEMS);

    // The first claim takes the 1000 smallest by (priority, process date, key): the oracle sorts one priority at a time.
    const expected: number[] = [];
    for (let p = 0; expected.length < 1000; p++) {
      const ofP: number[] = [];
      for (let i = p; i < ITEMS; i += 256) ofP.push(i);
      ofP.sort((a, b) => (a % 1000) - (b % 1000) || (key(a) < key(b) ? -1 : 1));
      expected.push(...ofP.slice(0, 1000 - expected.length));
    }
    const claim = (await harness.ok({ op: 'claim', name: 'big', max: 1000 })) as Extract<JournalValue, { op: 'claim' }>;
    expect(claim.items.map((i) => i.key)).toEqual(expected.map(key));
    t = lap('claimed the first 1000', t);
    for (const item of claim.items) await harness.ok({ op: 'done', name: 'big', key: item.key, lease: claim.lease });
    const doneExpiring = claim.items.filter((i) => expires(Number(i.key.slice(4)))).length;

    // Past the expiry date, the expiration index deletes the 10% in entries of at most 1000.
    harness.now = start + 10_000;
    let expired = 0;
    let expireEntries = 0;
    for (;;) {
      const v = (await harness.ok({ op: 'expire', name: 'big', max: 1000 })) as Extract<JournalValue, { op: 'expire' }>;
      if (v.expired === 0) break;
      expect(v.expired).toBeLessThanOrEqual(1000);
      expired += v.expired;
      expireEntries++;
    }
    expect(expired).toBe(ITEMS / 10 - doneExpiring);
    expect(expireEntries).toBe(Math.ceil(expired / 1000));
    t = lap(`expired ${expired} in ${expireEntries} entries`, t);
    const left = ITEMS - 1000 - expired;
    expect(harness.definition('big')!.counts).toMatchObject({ waiting: left, processing: 0 });
    expect(await countKeys(harness, JournalBucket.expiry)).toBe(0);

    // A restarted member loads the journal's state from the db: the definitions, not the items.
    const reloaded = await StateMachine.open(harness.temp.db, REGISTRY);
    expect(reloaded.stateOf(journal).journals.get('big')!.counts).toEqual(harness.definition('big')!.counts);
    t = lap('reloaded', t);

    // Dropped in entries of at most 5000 keys (an item and its waiting-index key each).
    const keys = (await countKeys(harness, JournalBucket.item)) + (await countKeys(harness, JournalBucket.waiting));
    expect(keys).toBe(2 * left);
    let dropEntries = 0;
    while (harness.definition('big') !== undefined) {
      await harness.ok({ op: 'drop', name: 'big' });
      dropEntries++;
    }
    expect(dropEntries).toBeGreaterThanOrEqual(Math.ceil(keys / 5000));
    expect(dropEntries).toBeLessThanOrEqual(Math.ceil(keys / 5000) + 2);
    expect(await countKeys(harness, JournalBucket.item)).toBe(0);
    expect(await countKeys(harness, JournalBucket.waiting)).toBe(0);
    lap(`dropped ${keys} keys in ${dropEntries} entries`, t);
  });
});
