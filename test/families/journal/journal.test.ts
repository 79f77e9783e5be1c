// The journal family on a real state machine: the seed's merge rules, leases,
// timeouts and flags, expiry, claim order, limits and drop.
import { afterEach, describe, expect, it } from 'vitest';
import { journal } from '../../../src/families/journal/index.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import { JournalHarness, SETTINGS } from './harness.js';
import { REGISTRY } from '../../../src/families/registry.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function withJournal(settings = SETTINGS): Promise<JournalHarness> {
  const h = await JournalHarness.open();
  open.push(h);
  await h.ok({ op: 'create', name: 'jobs', settings });
  return h;
}

function claimOf(value: JournalValue): Extract<JournalValue, { op: 'claim' }> {
  if (value.op !== 'claim') throw new Error(`expected a claim, got ${value.op}`);
  return value;
}

describe('adding', () => {
  it('inserts a new key as Waiting, inserted now, due now unless told', async () => {
    const h = await withJournal();
    expect(await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: { n: 1 } }] })).toEqual({ op: 'add', journal: 'jobs', inserted: 1, merged: 0, deferred: 0, keys: ['a'] });
    const a = (await h.items('jobs')).get('a')!;
    expect(a).toMatchObject({ key: 'a', data: { n: 1 }, priority: 100, processAt: h.now, insertedAt: h.now, expiresAt: 0, status: 'waiting', timeouts: 0, lease: 0 });
  });
});

describe('merging by key (seed 002)', () => {
  it('a Waiting item keeps its insertion date, takes the later expiry and process date, the smaller priority, the new data, and a reset counter', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 'v1', priority: 50, processAt: h.now + 500, expiresAt: h.now + 10_000 }] });
    const inserted = h.now;
    h.now += 100;
    const merged = await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 'v2', priority: 80, processAt: h.now + 100, expiresAt: h.now + 50_000 }] });
    expect(merged).toMatchObject({ inserted: 0, merged: 1, deferred: 0 });
    expect((await h.items('jobs')).get('a')).toMatchObject({
      data: 'v2',
      insertedAt: inserted,
      priority: 50,
      processAt: inserted + 500,
      expiresAt: h.now + 50_000,
      status: 'waiting',
      timeouts: 0,
    });
    // Never expiring is the later expiry.
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 'v3', priority: 10, expiresAt: 0 }] });
    expect((await h.items('jobs')).get('a')).toMatchObject({ data: 'v3', priority: 10, expiresAt: 0 });
  });

  it('an item being processed keeps the new version aside; it becomes Waiting, merged, when processing ends (done, release or timeout)', async () => {
    for (const ending of ['done', 'release', 'timeout'] as const) {
      const h = await withJournal();
      await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 'old', priority: 50 }] });
      const lease = h.nextIndex;
      expect(await h.ok({ op: 'claim', name: 'jobs', max: 1 })).toMatchObject({ lease, items: [{ key: 'a', data: 'old' }] });
      h.now += 10;
      expect(await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 'new', priority: 70, processAt: h.now + 5 }] })).toMatchObject({ deferred: 1 });
      expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'processing', data: 'old', lease });
      if (ending === 'timeout') {
        h.now += SETTINGS.timeoutMs;
        await h.ok({ op: 'timeout', name: 'jobs', claims: [['a', lease]] });
      } else if (ending === 'done') {
        // The result says the kept version is Waiting now: the server wakes a waiting claimer for it.
        expect(await h.ok({ op: 'done', name: 'jobs', key: 'a', lease })).toEqual({ op: 'done', journal: 'jobs', key: 'a', requeued: true });
      } else {
        await h.ok({ op: ending, name: 'jobs', key: 'a', lease });
      }
      expect((await h.items('jobs')).get('a'), ending).toMatchObject({ status: 'waiting', data: 'new', priority: 50, lease: 0, startedAt: 0, timeouts: 0, next: null });
    }
  });

  it('a batch may name one key twice: the second merges into the first', async () => {
    const h = await withJournal();
    const value = await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 1, priority: 9 }, { key: 'a', data: 2, priority: 20 }] });
    expect(value).toMatchObject({ inserted: 1, merged: 1 });
    expect((await h.items('jobs')).get('a')).toMatchObject({ data: 2, priority: 9 });
    expect(h.definition('jobs')!.counts).toEqual({ waiting: 1, processing: 0, flagged: 0, byPriority: { 9: 1 } });
  });
});

describe('claims and leases', () => {
  it('claims due items in (priority, process date, key) order, never one not yet due; the lease is the claim entry index', async () => {
    const h = await withJournal();
    await h.ok({
      op: 'add',
      name: 'jobs',
      items: [
        { key: 'late', data: 0, priority: 0, processAt: h.now + 1 },
        { key: 'b', data: 0, priority: 5, processAt: h.now - 10 },
        { key: 'a', data: 0, priority: 5, processAt: h.now - 10 },
        { key: 'c', data: 0, priority: 5, processAt: h.now - 20 },
        { key: 'urgent', data: 0, priority: 1 },
        { key: 'low', data: 0, priority: 200, processAt: 0 },
      ],
    });
    const lease = h.nextIndex;
    const claimed = await h.ok({ op: 'claim', name: 'jobs', max: 10 });
    expect(claimed).toMatchObject({ lease, items: ['urgent', 'c', 'a', 'b', 'low'].map((key) => ({ key })) });
    expect(await h.ok({ op: 'claim', name: 'jobs', max: 10 })).toMatchObject({ items: [] });
    h.now += 1;
    expect(await h.ok({ op: 'claim', name: 'jobs', max: 10 })).toMatchObject({ items: [{ key: 'late' }] });
  });

  it('a claim takes from the index front held in memory, yet finds every item put back or added in front of it', async () => {
    const h = await withJournal();
    const keys = Array.from({ length: 30 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    await h.ok({ op: 'add', name: 'jobs', items: keys.map((key, i) => ({ key, data: i, processAt: h.now - 100 + i })) });
    const first = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 10 }));
    expect(first.items.map((i) => i.key)).toEqual(keys.slice(0, 10));
    // Put back below where the next claim would start: a release with an early date, a new early item, and a timeout.
    await h.ok({ op: 'release', name: 'jobs', key: 'k03', lease: first.lease, processAt: 0 });
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'early', data: 'e', processAt: h.now - 1000 }] });
    const next = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 3 }));
    expect(next.items.map((i) => i.key)).toEqual(['k03', 'early', 'k10']);
    h.now += SETTINGS.timeoutMs + 1;
    await h.ok({ op: 'timeout', name: 'jobs', claims: [['k05', first.lease]] });
    const after = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 2 }));
    expect(after.items.map((i) => i.key)).toEqual(['k05', 'k11']);
    // A member that restarts (no floors) claims exactly the same next items.
    const rest = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 100 }));
    expect(rest.items.map((i) => i.key)).toEqual(keys.slice(12));
  });

  it('claims past the in-memory front read more of the index, and items put anywhere are found in order', async () => {
    const h = await withJournal();
    const base = h.now - 10_000;
    const keys = Array.from({ length: 700 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    for (let i = 0; i < keys.length; i += 100) {
      await h.ok({ op: 'add', name: 'jobs', items: keys.slice(i, i + 100).map((key, k) => ({ key, data: 0, processAt: base + (i + k) * 10 })) });
    }
    const first = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 300 }));
    expect(first.items.map((i) => i.key)).toEqual(keys.slice(0, 300));
    // Put back in front of what is left, added in the middle and far beyond what any front read.
    await h.ok({ op: 'release', name: 'jobs', key: 'k010', lease: first.lease, processAt: 0 });
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'mid', data: 0, processAt: base + 450 * 10 + 5 }, { key: 'end', data: 0, processAt: base + 699 * 10 + 5 }] });
    const rest = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1000 }));
    const expected = ['k010', ...keys.slice(300, 451), 'mid', ...keys.slice(451), 'end'];
    expect(rest.items.map((i) => i.key)).toEqual(expected);
    // Nothing is left.
    expect(claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 10 })).items).toEqual([]);
  });

  it('stops a claim before its items pass the byte budget the entry carries, always taking one', async () => {
    const h = await withJournal();
    const data = 'x'.repeat(100_000);
    await h.ok({ op: 'add', name: 'jobs', items: ['a', 'b', 'c', 'd'].map((key, i) => ({ key, data, processAt: h.now - 10 + i })) });
    expect(claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 10, maxBytes: 250_000 })).items.map((i) => i.key)).toEqual(['a', 'b']);
    // One item over the budget still goes alone, rather than never.
    expect(claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 10, maxBytes: 1000 })).items.map((i) => i.key)).toEqual(['c']);
    const first = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 10 }));
    expect(first.items.map((i) => i.key)).toEqual(['d']);
    await h.ok({ op: 'add', name: 'jobs', items: ['e', 'f'].map((key) => ({ key, data })) });
    expect(await h.ok({ op: 'done', name: 'jobs', key: 'd', lease: first.lease, claim: 5, claimBytes: 150_000 })).toMatchObject({ next: { items: [{ key: 'e' }] } });
  });

  it('a done may claim the next items in the same entry, under that entry\u2019s lease', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: ['a', 'b', 'c'].map((key, i) => ({ key, data: i, processAt: h.now - 10 + i })) });
    const first = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 }));
    expect(first.items.map((i) => i.key)).toEqual(['a']);
    const lease = h.nextIndex;
    expect(await h.ok({ op: 'done', name: 'jobs', key: 'a', lease: first.lease, claim: 2 })).toMatchObject({
      op: 'done',
      requeued: false,
      next: { lease, items: [{ key: 'b', data: 1 }, { key: 'c', data: 2 }] },
    });
    const items = await h.items('jobs');
    expect([...items.keys()].sort()).toEqual(['b', 'c']);
    expect(items.get('b')).toMatchObject({ status: 'processing', lease });
    // With nothing due the claim part is empty; a refused done claims nothing either.
    expect(await h.ok({ op: 'done', name: 'jobs', key: 'b', lease, claim: 1 })).toMatchObject({ next: { items: [] } });
    expect(await h.run({ op: 'done', name: 'jobs', key: 'b', lease, claim: 1 })).toMatchObject({ ok: false, code: 'CONFLICT' });
    expect((await h.items('jobs')).get('c')).toMatchObject({ status: 'processing', lease });
  });

  it('a done that claims next can take the version it just put back, even at a priority nothing else waits at', async () => {
    // Found by the model test (oracle.test.ts): the claim looked only at what waited before the entry.
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'e', data: 'old', priority: 50 }] });
    const first = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 }));
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'e', data: 'new', priority: 0 }] });
    const lease = h.nextIndex;
    expect(await h.ok({ op: 'done', name: 'jobs', key: 'e', lease: first.lease, claim: 1 })).toMatchObject({
      requeued: true,
      next: { lease, items: [{ key: 'e', data: 'new', priority: 0 }] },
    });
  });

  it('a stale lease changes nothing and is a CONFLICT in extend, done and release (after a timeout and a new claim, and after done)', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 0 }] });
    const first = h.nextIndex;
    await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    h.now += SETTINGS.timeoutMs;
    await h.ok({ op: 'timeout', name: 'jobs', claims: [['a', first]] });
    const second = h.nextIndex;
    await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    const before = await h.items('jobs');
    for (const op of ['extend', 'done', 'release'] as const) {
      const result = await h.run({ op, name: 'jobs', key: 'a', lease: first });
      expect(result, op).toMatchObject({ ok: false, code: 'CONFLICT' });
    }
    expect(await h.items('jobs')).toEqual(before);
    expect(await h.ok({ op: 'done', name: 'jobs', key: 'a', lease: second })).toEqual({ op: 'done', journal: 'jobs', key: 'a', requeued: false });
    for (const op of ['extend', 'done', 'release'] as const) {
      expect(await h.run({ op, name: 'jobs', key: 'a', lease: second }), op).toMatchObject({ ok: false, code: 'CONFLICT' });
    }
    expect((await h.items('jobs')).size).toBe(0);
  });

  it('an extension pushes the timeout back: a timeout decided before it does nothing', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 0 }] });
    const lease = h.nextIndex;
    await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    h.now += SETTINGS.timeoutMs - 1;
    await h.ok({ op: 'extend', name: 'jobs', key: 'a', lease });
    h.now += 1;
    expect(await h.ok({ op: 'timeout', name: 'jobs', claims: [['a', lease]] })).toMatchObject({ requeued: [], flagged: [] });
    await h.ok({ op: 'done', name: 'jobs', key: 'a', lease });
  });
});

describe('timeouts and flags', () => {
  it('an item times out back to Waiting with its counter raised, and is flagged once, with its history, past the maximum', async () => {
    const h = await withJournal({ ...SETTINGS, maxTimeouts: 2 });
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 'x' }] });
    const flagsSeen: string[] = [];
    for (let round = 1; round <= 3; round++) {
      const lease = h.nextIndex;
      await h.ok({ op: 'claim', name: 'jobs', max: 1 });
      h.now += SETTINGS.timeoutMs;
      const value = await h.ok({ op: 'timeout', name: 'jobs', claims: [['a', lease]] });
      if (value.op !== 'timeout') throw new Error('not a timeout');
      flagsSeen.push(...value.flagged);
      if (round < 3) expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'waiting', timeouts: round });
    }
    expect(flagsSeen).toEqual(['a']);
    expect((await h.items('jobs')).size).toBe(0);
    expect((await h.flagged()).get('a')).toMatchObject({ item: { key: 'a', data: 'x', timeouts: 3 }, flaggedAt: h.now });
    expect(h.definition('jobs')!.counts).toMatchObject({ waiting: 0, processing: 0, flagged: 1 });
    // A repeated timeout entry for the same claim finds nothing to do: still exactly one flag.
    expect(await h.ok({ op: 'timeout', name: 'jobs', claims: [['a', h.nextIndex - 2]] })).toMatchObject({ flagged: [] });
    await h.ok({ op: 'requeue', name: 'jobs', key: 'a' });
    expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'waiting', timeouts: 0, processAt: h.now });
    expect((await h.flagged()).size).toBe(0);
  });
});

describe('expiry', () => {
  it('an expired item is never claimed, even before the expiry duty deletes it; expire deletes through the index', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'soon', data: 0, expiresAt: h.now + 5 }, { key: 'later', data: 0, expiresAt: h.now + 50 }, { key: 'never', data: 0 }] });
    h.now += 5;
    expect(await h.ok({ op: 'claim', name: 'jobs', max: 1 })).toMatchObject({ items: [{ key: 'later' }] });
    h.now += 100;
    // 'soon' (Waiting, met by no claim) and 'later' (Processing) have both expired.
    expect(await h.ok({ op: 'expire', name: 'jobs', max: 10 })).toMatchObject({ expired: 2 });
    expect([...(await h.items('jobs')).keys()]).toEqual(['never']);
  });

  it('a claim reads its front again as often as it must, past the expired items it clears, and takes the rest in order', async () => {
    const h = await withJournal();
    // 1,800 expired items ahead of 1,500 live ones: more than one read of the index holds (at most 1,024 keys each).
    const expired = Array.from({ length: 1800 }, (_, i) => `a${String(i).padStart(4, '0')}`);
    const live = Array.from({ length: 1500 }, (_, i) => `b${String(i).padStart(4, '0')}`);
    for (let i = 0; i < expired.length; i += 600) await h.ok({ op: 'add', name: 'jobs', items: expired.slice(i, i + 600).map((key) => ({ key, data: 0, processAt: h.now - 1, expiresAt: h.now + 5 })) });
    for (let i = 0; i < live.length; i += 500) await h.ok({ op: 'add', name: 'jobs', items: live.slice(i, i + 500).map((key) => ({ key, data: 0 })) });
    h.now += 10;
    // A claim looks at no more than it wants plus the 1,000 expired items it may clear on its
    // way (the rest wait for the expiry duty, and are skipped): 1,800 expired, then 200 live.
    const first = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1000 }));
    expect(first.items.map((i) => i.key)).toEqual(live.slice(0, 200));
    // The 800 expired items left are cleared by the next claim, which takes 1,000 live ones after them.
    const second = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1000 }));
    expect(second.items.map((i) => i.key)).toEqual(live.slice(200, 1200));
    const third = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1000 }));
    expect(third.items.map((i) => i.key)).toEqual(live.slice(1200));
    expect([...(await h.items('jobs')).keys()].sort()).toEqual(live);
  });
});

describe('limits and lifecycle', () => {
  it('refuses an add past maxItems whole, and unknown journals', async () => {
    const h = await withJournal({ ...SETTINGS, maxItems: 2 });
    expect(await h.run({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 0 }, { key: 'b', data: 0 }, { key: 'c', data: 0 }] })).toMatchObject({ ok: false, code: 'QUOTA_EXCEEDED' });
    expect((await h.items('jobs')).size).toBe(0);
    expect(await h.run({ op: 'claim', name: 'nope', max: 1 })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    expect(await h.run({ op: 'create', name: 'jobs', settings: SETTINGS })).toMatchObject({ ok: false, code: 'CONFLICT' });
  });

  it('holds at most the cluster-wide number of journals, a replicated limit an operator changes and every member reloads', async () => {
    const h = await withJournal();
    expect(await h.ok({ op: 'limits', maxJournals: 2 })).toEqual({ op: 'limits', maxJournals: 2 });
    await h.ok({ op: 'create', name: 'second', settings: SETTINGS });
    expect(await h.run({ op: 'create', name: 'third', settings: SETTINGS })).toMatchObject({ ok: false, code: 'QUOTA_EXCEEDED' });
    // Lowered below what there is: the journals stay, new ones wait until enough are dropped.
    await h.ok({ op: 'limits', maxJournals: 1 });
    expect(h.definition('second')).toBeDefined();
    // A member that restarts (or installs a snapshot) loads the limit from its db.
    const reloaded = await StateMachine.open(h.temp.db, REGISTRY);
    expect(reloaded.stateOf(journal).limits).toEqual({ maxJournals: 1 });
    await h.ok({ op: 'limits', maxJournals: 3 });
    await h.ok({ op: 'create', name: 'third', settings: SETTINGS });
  });

  it('drops a journal of many items in a bounded number of entries', async () => {
    const h = await withJournal();
    for (let batch = 0; batch < 6; batch++) {
      await h.ok({ op: 'add', name: 'jobs', items: Array.from({ length: 1000 }, (_, i) => ({ key: `k${batch}-${i}`, data: i, expiresAt: h.now + 1e9 })) });
    }
    let entries = 0;
    while (h.definition('jobs') !== undefined) {
      await h.ok({ op: 'drop', name: 'jobs' });
      entries++;
      if (entries === 1) expect(await h.run({ op: 'claim', name: 'jobs', max: 1 })).toMatchObject({ ok: false, code: 'NOT_FOUND' });
    }
    expect(entries).toBe(4); // 18,000 keys (item, waiting and expiry index per item) at 5,000 per entry
    expect((await h.items('jobs')).size).toBe(0);
  });
});
