// The journal's failure accounting (command version 9, docs/journal.md "Failures"):
// a release counts as a failed processing unless it says not, a failure count that
// a merge does not reset flags a job its producer keeps adding, process dates are
// never before the insertion date, and counts leave out expired items before the
// leader's expiry pass. Before version 9 every entry applies as it always did.
import { afterEach, describe, expect, it } from 'vitest';
import { pack, unpack } from '../../../src/statemachine/codec.js';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import { FAILURES_SINCE, journal } from '../../../src/families/journal/index.js';
import { liveCounts } from '../../../src/families/journal/reads.js';
import { decodeItem, encodeItem, type JournalItem } from '../../../src/families/journal/records.js';
import { JournalHarness, SETTINGS } from './harness.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

/** A journal with maxTimeouts 2: the third failure flags. */
async function withJournal(accounting = true): Promise<JournalHarness> {
  const h = await JournalHarness.open();
  open.push(h);
  if (accounting) await h.activate(FAILURES_SINCE);
  await h.ok({ op: 'create', name: 'jobs', settings: SETTINGS });
  return h;
}

function claimOf(value: JournalValue): Extract<JournalValue, { op: 'claim' }> {
  if (value.op !== 'claim') throw new Error(`expected a claim, got ${value.op}`);
  return value;
}

/** Claims `key` (the only due item) and releases it; the release's value. */
async function failOnce(h: JournalHarness, key: string, failure?: false): Promise<JournalValue> {
  const c = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 }));
  expect(c.items.map((i) => i.key)).toEqual([key]);
  return h.ok({ op: 'release', name: 'jobs', key, lease: c.lease, ...(failure === undefined ? {} : { failure }) });
}

describe('a release is a failed processing', () => {
  it('raises both counters, and the failure past maxTimeouts flags the item with a flag event', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 1 }] });
    expect(await failOnce(h, 'a')).toEqual({ op: 'release', journal: 'jobs', key: 'a', flagged: false, failure: true });
    expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'waiting', timeouts: 1, failures: 1 });
    // The claim tells the worker the failures so far (its backoff counts from them).
    const c = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 }));
    expect(c.items[0]).toMatchObject({ key: 'a', timeouts: 1, failures: 1 });
    await h.ok({ op: 'release', name: 'jobs', key: 'a', lease: c.lease });
    expect(await failOnce(h, 'a')).toMatchObject({ flagged: true });
    expect((await h.items('jobs')).has('a')).toBe(false);
    expect((await h.flagged()).get('a')!.item).toMatchObject({ timeouts: 3, failures: 3 });
    expect(h.definition('jobs')!.counts).toMatchObject({ waiting: 0, processing: 0, flagged: 1 });
  });

  it('a release that says it is no failure (a worker stopping) counts nothing', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 1 }] });
    for (let i = 0; i < 5; i++) expect(await failOnce(h, 'a', false)).toMatchObject({ flagged: false });
    expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'waiting', timeouts: 0, failures: 0 });
  });

  it('before command version 9 a release counts nothing, and the item record is byte for byte what it was', async () => {
    const h = await withJournal(false);
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 1 }] });
    for (let i = 0; i < 5; i++) expect(await failOnce(h, 'a')).toMatchObject({ flagged: false });
    const a = (await h.items('jobs')).get('a')!;
    expect(a).toMatchObject({ timeouts: 0, failures: 0 });
    expect((unpack(encodeItem(a)) as unknown[]).length).toBe(11);
  });
});

describe('the failure count survives merges', () => {
  it('a poison job its producer adds again after each failure is still flagged; the seed\u2019s counter is reset by each merge', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'p', data: 0 }] });
    for (let attempt = 1; attempt <= 2; attempt++) {
      expect(await failOnce(h, 'p')).toMatchObject({ flagged: false });
      await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'p', data: attempt }] }); // merged: timeouts back to 0
      expect((await h.items('jobs')).get('p')).toMatchObject({ timeouts: 0, failures: attempt });
    }
    expect(await failOnce(h, 'p')).toMatchObject({ flagged: true });
    expect((await h.flagged()).get('p')!.item).toMatchObject({ timeouts: 1, failures: 3 });
  });

  it('a timeout is a failure too; requeue from flagged starts both counts again', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 't', data: 0 }] });
    for (let i = 0; i < 3; i++) {
      const c = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 }));
      h.now += SETTINGS.timeoutMs;
      await h.ok({ op: 'timeout', name: 'jobs', claims: [['t', c.lease]] });
      if (i < 2) await h.ok({ op: 'add', name: 'jobs', items: [{ key: 't', data: i }] }); // the merge does not save it
    }
    expect((await h.flagged()).get('t')!.item).toMatchObject({ failures: 3 });
    await h.ok({ op: 'requeue', name: 'jobs', key: 't' });
    expect((await h.items('jobs')).get('t')).toMatchObject({ status: 'waiting', timeouts: 0, failures: 0 });
  });
});

describe('item records', () => {
  const item: JournalItem = { key: 'k', data: { x: 1 }, priority: 5, processAt: 10, insertedAt: 9, expiresAt: 0, status: 'processing', startedAt: 11, timeouts: 1, failures: 0, lease: 7, next: null };

  it('an item without failures is the eleven fields records always had; one with failures adds a twelfth', () => {
    // What the code before the failure count wrote, field for field.
    const before = pack(['k', { x: 1 }, 5, 10, 9, 0, 1, 11, 1, 7, null]);
    expect(encodeItem(item).equals(before)).toBe(true);
    expect(decodeItem(before)).toEqual(item);
    const failed = { ...item, failures: 4 };
    expect(decodeItem(encodeItem(failed))).toEqual(failed);
    expect(() => decodeItem(pack(['k', 1, 5, 10, 9, 0, 1, 11, 1, 7, null, 0]))).toThrow(/journal item/); // 0 failures is never written as a field
  });
});

describe('process dates (seed 002: never before the insertion date)', () => {
  it('a back-dated process date is raised to the insertion date, so it does not jump the line', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'b-first', data: 1 }] });
    h.now += 10;
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a-backdated', data: 2, processAt: h.now - 5000 }] });
    expect((await h.items('jobs')).get('a-backdated')).toMatchObject({ insertedAt: h.now, processAt: h.now });
    expect(claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 })).items.map((i) => i.key)).toEqual(['b-first']);
    // A merge keeps the insertion date, and the process date is never before it.
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a-backdated', data: 3, processAt: 1 }] });
    expect((await h.items('jobs')).get('a-backdated')).toMatchObject({ processAt: h.now });
  });

  it('a release to a date before the insertion date is raised to it', async () => {
    const h = await withJournal();
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 1 }] });
    const inserted = h.now;
    const c = claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 1 }));
    await h.ok({ op: 'release', name: 'jobs', key: 'a', lease: c.lease, processAt: 5, failure: false });
    expect((await h.items('jobs')).get('a')).toMatchObject({ processAt: inserted });
  });
});

describe('counts leave out expired items before the expiry pass', () => {
  it('counts as of the replicated clock: expired Waiting and Processing items are absent, a version added meanwhile waits', async () => {
    const h = await withJournal();
    const expiresAt = h.now + 100;
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'p', data: 1, priority: 1, expiresAt }, { key: 'q', data: 2, priority: 2, expiresAt }] });
    expect(claimOf(await h.ok({ op: 'claim', name: 'jobs', max: 2 })).items.map((i) => i.key)).toEqual(['p', 'q']);
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'w', data: 3, priority: 7, expiresAt }, { key: 'live', data: 4, priority: 7 }, { key: 'q', data: 'next', priority: 20 }] });
    // The clock passes the expiry with an unrelated entry; no expire entry has run.
    h.now = expiresAt + 1;
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'other', data: 5, priority: 7 }] });
    const stored = h.definition('jobs')!;
    expect(stored.counts).toMatchObject({ waiting: 3, processing: 2 }); // w, live, other; p, q
    const counts = await h.sm.read('test', (db, snapshot) => liveCounts(db, snapshot, 'jobs', stored, h.sm.clock));
    // w and p expired; q expired too, but the version added while it was processed waits.
    expect(counts).toEqual({ waiting: 3, processing: 0, flagged: 0, byPriority: { 7: 2, 20: 1 } });
    expect(h.sm.stateOf(journal).journals.get('jobs')).toBe(stored); // a read changes nothing
  });
});

