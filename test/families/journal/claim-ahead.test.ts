// Claims a Raft round ahead of an item's date (claim-ahead.ts, docs/journal.md "Claims a
// round ahead"): a claim entry's `dueBy` takes the items due by it, judged from the entry
// alone and bounded, without moving the replicated clock; the due timer wakes a claim that
// far ahead of the date, for that date; the reply is held until the date, so no item reaches
// a worker before it.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import { CLAIM_AHEAD_MAX_MS } from '../../../src/families/journal/apply.js';
import { CLAIM_AHEAD_CAP_MS, claimAhead, ClaimRounds, stillClaimed, untilDue } from '../../../src/families/journal/claim-ahead.js';
import { encodeEntryCommand } from '../../../src/families/commands.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { FAILURES_SINCE } from '../../../src/families/journal/index.js';
import { waitingKey } from '../../../src/families/journal/keys.js';
import { DEFAULT_SETTINGS } from '../../../src/families/journal/server.js';
import { JournalState } from '../../../src/families/journal/state.js';
import { JournalWaiters } from '../../../src/families/journal/waiters.js';
import { startServer, stopServer } from '../../support/member.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { JournalHarness, SETTINGS } from './harness.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

function claimed(value: JournalValue): string[] {
  if (value.op === 'claim') return value.items.map((i) => i.key);
  if (value.op === 'doneMany') return (value.next?.items ?? []).map((i) => i.key);
  throw new Error(`expected a claim, got ${value.op}`);
}

/** A journal on a state machine running command version 9, with items due at T, T+5, T+8, T+100 (T the clock). */
async function withDates(): Promise<{ h: JournalHarness; t: number }> {
  const h = await JournalHarness.open();
  open.push(h);
  await h.activate(FAILURES_SINCE);
  await h.ok({ op: 'create', name: 'jobs', settings: SETTINGS });
  const t = h.now;
  await h.ok({ op: 'add', name: 'jobs', items: [0, 5, 8, 100].map((d) => ({ key: `at${d}`, data: d, processAt: t + d })) });
  return { h, t };
}

describe('a claim entry with dueBy', () => {
  it('takes the items due by dueBy, not those after it, and leaves the replicated clock at the entry\u2019s', async () => {
    const { h, t } = await withDates();
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10, dueBy: t + 5 }))).toEqual(['at0', 'at5']);
    // The clock is still t: a claim by it alone finds nothing due (at8 is not).
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10 }))).toEqual([]);
    expect(h.sm.clock).toBe(t);
    const item = (await h.items('jobs')).get('at5')!;
    // Its lease starts at the entry's clock.
    expect(item).toMatchObject({ status: 'processing', startedAt: t });
  });

  it('reaches at most CLAIM_AHEAD_MAX_MS past the entry\u2019s clock, and never before it', async () => {
    const { h, t } = await withDates();
    // Far ahead: counts as t + CLAIM_AHEAD_MAX_MS, which takes at8 but not at100.
    expect(CLAIM_AHEAD_MAX_MS).toBeLessThan(100);
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10, dueBy: t + 10_000 }))).toEqual(['at0', 'at5', 'at8']);
    // In the past: the entry's clock stands.
    h.now = t + 100;
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10, dueBy: t }))).toEqual(['at100']);
  });

  it('in a doneMany that claims (held acknowledgements riding a waiting claim), likewise', async () => {
    const { h, t } = await withDates();
    const first = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    if (first.op !== 'claim') throw new Error('claim');
    const v = await h.ok({ op: 'doneMany', name: 'jobs', items: [['at0', first.lease]], claim: 10, dueBy: t + 8 });
    expect(claimed(v)).toEqual(['at5', 'at8']);
  });

  it('does not take ahead an item that expires by its date', async () => {
    const h = await JournalHarness.open();
    open.push(h);
    await h.activate(FAILURES_SINCE);
    await h.ok({ op: 'create', name: 'jobs', settings: SETTINGS });
    const t = h.now;
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'gone', data: 1, processAt: t + 5, expiresAt: t + 5 }] });
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10, dueBy: t + 5 }))).toEqual([]);
    expect((await h.items('jobs')).get('gone')).toMatchObject({ status: 'waiting' });
  });

  it('takes ahead an item that expires after its date, though before the dueBy of the claim', async () => {
    const h = await JournalHarness.open();
    open.push(h);
    await h.activate(FAILURES_SINCE);
    await h.ok({ op: 'create', name: 'jobs', settings: SETTINGS });
    const t = h.now;
    // Due at t+5, gone at t+6: handed over at t+5 it is live; judged at the claim's dueBy (t+8) it would not be.
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'brief', data: 1, processAt: t + 5, expiresAt: t + 6 }] });
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10, dueBy: t + 8 }))).toEqual(['brief']);
  });

  it('refuses a doneMany with dueBy but no claim: dueBy says which items that claim takes', async () => {
    const { h, t } = await withDates();
    const first = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    if (first.op !== 'claim') throw new Error('claim');
    await expect(h.run({ op: 'doneMany', name: 'jobs', items: [['at0', first.lease]], dueBy: t + 8 })).rejects.toThrow(/dueBy goes with claim/);
  });

  it('needs command version 9: the entry says so, so a member that does not run it stops on it rather than apply it otherwise', () => {
    const version = (c: object): number => encodeEntryCommand({ family: 'journal', ...c } as never, 1).version;
    expect(version({ op: 'claim', name: 'jobs', max: 1, dueBy: 5 })).toBe(FAILURES_SINCE);
    expect(version({ op: 'claim', name: 'jobs', max: 1 })).toBeLessThan(FAILURES_SINCE);
    expect(version({ op: 'doneMany', name: 'jobs', items: [['k', 1]], claim: 1, dueBy: 5 })).toBe(FAILURES_SINCE);
  });
});

describe('the lead: how far ahead of a date a claim goes', () => {
  it('is none until a claim round is measured, then the 90th percentile of the last rounds, in whole ms, capped', () => {
    const rounds = new ClaimRounds();
    expect(rounds.lead()).toBe(0);
    for (let i = 1; i <= 10; i++) rounds.record(i + 0.5);
    expect(rounds.lead()).toBe(11);
    for (let i = 0; i < 32; i++) rounds.record(1000);
    expect(rounds.lead()).toBe(CLAIM_AHEAD_CAP_MS);
    // The old rounds are forgotten.
    for (let i = 0; i < 32; i++) rounds.record(2.2);
    expect(rounds.lead()).toBe(3);
  });
});

describe('whether a woken claim goes ahead', () => {
  it('for the date it was woken for while that is ahead, not when an item is due already that no claim in flight takes', () => {
    expect(claimAhead(1_000_010, 1_000_000, () => true)).toBe(1_000_010);
    // Held for the date, the item due now would wait for it: the claim takes what is due by its entry's clock.
    expect(claimAhead(1_000_010, 1_000_000, () => false)).toBeUndefined();
    expect(claimAhead(1_000_010, 1_000_010, () => true)).toBeUndefined();
    expect(claimAhead(undefined, 1_000_000, () => true)).toBeUndefined();
  });
});

describe('held until the date', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => vi.useRealTimers());

  it('a reply waits for the wall clock to reach its latest item\u2019s date, though a timer fires a millisecond early', async () => {
    let done = false;
    // The latest date is not the first item's: the hold is for the latest.
    void untilDue([{ processAt: 1_000_004 }, { processAt: 1_000_010 }], 1_000_010).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(9);
    expect(done).toBe(false);
    // The monotonic timer comes due with the wall clock a millisecond behind.
    vi.setSystemTime(1_000_008);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });

  it('a claim not taken ahead is answered at once, though the replicated clock (another member’s) ran ahead of this wall clock', async () => {
    let done = false;
    void untilDue([{ processAt: 1_000_500 }], undefined).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });

  it('a wall clock stepped back holds a reply no longer than a claim goes ahead', async () => {
    let done = false;
    void untilDue([{ processAt: 1_000_010 }], 1_000_010).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(5);
    vi.setSystemTime(1_000_000 - 60_000);
    await vi.advanceTimersByTimeAsync(CLAIM_AHEAD_CAP_MS);
    expect(done).toBe(true);
  });

  it('the due timer wakes a claimer a measured claim round ahead of the date, for that date', async () => {
    const T0 = 1_000_000;
    const state = new JournalState();
    state.journals.set('jobs', { settings: DEFAULT_SETTINGS, counts: { waiting: 2, processing: 0, flagged: 0, byPriority: { 100: 2 } }, dropping: false });
    state.setFront('jobs', 100, { keys: [waitingKey('jobs', 100, T0 + 5, 'a'), waitingKey('jobs', 100, T0 + 50, 'b')], end: null });
    const w = new JournalWaiters({ state: () => state, now: () => T0, earliestProcessAt: () => Promise.resolve(T0 + 5) });
    const woken: Array<[number, number | undefined]> = [];
    const wait = (): void => void w.wait('jobs', performance.now() + 60_000).then((dueBy) => woken.push([Date.now(), dueBy]));
    // No round measured yet: woken at the date, with none.
    wait();
    await vi.advanceTimersByTimeAsync(5);
    expect(woken).toEqual([[T0 + 5, undefined]]);
    // Its claim takes 6 ms to apply; the item leaves the Waiting index.
    const release = w.claiming('jobs', 1);
    await vi.advanceTimersByTimeAsync(6);
    state.noteWaiting('jobs', 100, waitingKey('jobs', 100, T0 + 5, 'a'), false);
    release();
    wait();
    // The next date is T0+50: woken 6 ms ahead of it, for it.
    await vi.advanceTimersByTimeAsync(T0 + 43 - Date.now());
    expect(woken).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(woken).toEqual([
      [T0 + 5, undefined],
      [T0 + 44, T0 + 50],
    ]);
    w.close();
  });
});

describe('what a held reply still hands over', () => {
  it('only the items still Processing under its lease: not one removed (cancelled), flagged or claimed again meanwhile', () => {
    expect(stillClaimed({ status: 'processing', lease: 7 }, 7)).toBe(true);
    expect(stillClaimed({ status: 'processing', lease: 7, cancelled: true }, 7)).toBe(false);
    expect(stillClaimed({ status: 'processing', lease: 8 }, 7)).toBe(false);
    expect(stillClaimed({ status: 'waiting' }, 7)).toBe(false);
    expect(stillClaimed({ flaggedAt: 5 }, 7)).toBe(false);
    expect(stillClaimed(null, 7)).toBe(false);
  });
});

describe('a claim woken ahead that came back empty', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => vi.useRealTimers());

  it('is not woken ahead of that date again (its item expires by it), but at the date itself', async () => {
    const T0 = 1_000_000;
    const state = new JournalState();
    state.journals.set('jobs', { settings: DEFAULT_SETTINGS, counts: { waiting: 1, processing: 0, flagged: 0, byPriority: { 100: 1 } }, dropping: false });
    state.setFront('jobs', 100, { keys: [waitingKey('jobs', 100, T0 + 50, 'brief')], end: null });
    const w = new JournalWaiters({ state: () => state, now: () => T0, earliestProcessAt: () => Promise.resolve(T0 + 50) });
    // One claim round of 6 ms measured: the due timer now goes 6 ms ahead.
    const release = w.claiming('jobs', 1);
    await vi.advanceTimersByTimeAsync(6);
    release();
    const woken: Array<[number, number | undefined]> = [];
    const wait = (): void => void w.wait('jobs', performance.now() + 60_000).then((dueBy) => woken.push([Date.now(), dueBy]));
    wait();
    await vi.advanceTimersByTimeAsync(T0 + 44 - Date.now());
    expect(woken).toEqual([[T0 + 44, T0 + 50]]);
    // Its claim took nothing (the item expires by its date); it waits again.
    w.aheadCameBackEmpty('jobs', T0 + 50);
    wait();
    await vi.advanceTimersByTimeAsync(5);
    expect(woken).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(woken).toEqual([
      [T0 + 44, T0 + 50],
      [T0 + 50, undefined],
    ]);
    w.close();
  });
});

describe('on a server', () => {
  afterEach(stopServer);

  it('claims go ahead of the items\u2019 dates, and no item reaches a worker before its date', async () => {
    const { client } = await startServer();
    const journals = new JournalClient(client);
    await untilCommandVersion(() => journals.list());
    await journals.create('later');
    const n = 40;
    const t = Date.now() + 200;
    await journals.add('later', Array.from({ length: n }, (_, i) => ({ key: `k${i}`, data: i, processAt: t + i * 10 })));
    const early: string[] = [];
    const ahead: string[] = [];
    let handled = 0;
    let allHandled!: () => void;
    const all = new Promise<void>((r) => (allHandled = r));
    const worker = journals.process(
      'later',
      async (item) => {
        if (Date.now() < item.processAt) early.push(item.key);
        // Its lease began (the claim entry applied) before its date: claimed ahead.
        const job = await journals.get('later', item.key);
        if (job.startedAt !== undefined && job.startedAt < item.processAt) ahead.push(item.key);
        if (++handled === n) allHandled();
      },
      { concurrency: 4, waitMs: 5_000 },
    );
    await all;
    await worker.stop();
    expect(early).toEqual([]);
    expect(ahead.length).toBeGreaterThan(0);
  });
});
