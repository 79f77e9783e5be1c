// Claims waiting for due items (waiters.ts), on a member whose Waiting index
// fronts are in memory: which claimers the due timer wakes, and when, while
// claims are in flight; no db read to arm it.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JournalState } from '../../../src/families/journal/state.js';
import { waitingKey } from '../../../src/families/journal/keys.js';
import { JournalWaiters, type WaitersSource } from '../../../src/families/journal/waiters.js';
import { DEFAULT_SETTINGS } from '../../../src/families/journal/server.js';

const NAME = 'jobs';
const T0 = 1_000_000;

/**
 * A member holding `dates` Waiting in `NAME` (priority 100), its fronts in memory; counts the db reads asked of it.
 * With `read`, the fronts are not in memory and each db read answers what `read` returns.
 */
function member(
  dates: number[],
  options: { rateLimit?: { max: number; windowMs: number }; read?: () => Promise<number | null> } = {},
): { fe: WaitersSource; state: JournalState; reads: () => number; take: (i: number) => void } {
  const state = new JournalState();
  const settings = options.rateLimit === undefined ? DEFAULT_SETTINGS : { ...DEFAULT_SETTINGS, rateLimit: options.rateLimit };
  state.journals.set(NAME, { settings, counts: { waiting: dates.length, processing: 0, flagged: 0, byPriority: { 100: dates.length } }, dropping: false });
  if (options.read === undefined) state.setFront(NAME, 100, { keys: dates.map((d, i) => waitingKey(NAME, 100, d, `k${i}`)), end: null });
  let reads = 0;
  const earliest = dates.length === 0 ? null : Math.min(...dates);
  const source: WaitersSource = {
    state: () => state,
    now: () => T0,
    // The db agrees with the fronts (earliestProcessAt's answer).
    earliestProcessAt: () => {
      reads++;
      return options.read?.() ?? Promise.resolve(earliest);
    },
  };
  // A claim applied: the item leaves the Waiting index, and the front follows.
  const take = (i: number): void => state.noteWaiting(NAME, 100, waitingKey(NAME, 100, dates[i]!, `k${i}`), false);
  return { fe: source, state, reads: () => reads, take };
}

/** Waits `n` claimers (each asking for `max`), recording the order in which they are woken. */
function waitAll(w: JournalWaiters, n: number, max: number): string[] {
  const woken: string[] = [];
  for (let i = 0; i < n; i++) void w.wait(NAME, performance.now() + 60_000, undefined, max).then(() => woken.push(`c${i}`));
  return woken;
}

/** Lets timers due by now run, then the promises they resolve. */
async function settle(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

describe('JournalWaiters due timer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => vi.useRealTimers());

  it('wakes as many claimers as items fall due at one date, at that date', async () => {
    const { fe } = member([T0 + 10, T0 + 10, T0 + 10]);
    const w = new JournalWaiters(fe);
    const woken = waitAll(w, 4, 1);
    await settle(9);
    expect(woken).toEqual([]);
    await settle(1);
    // Three items due at T0+10, claimers asking for one each: three of them, at once.
    expect(woken).toEqual(['c0', 'c1', 'c2']);
    await settle(50);
    expect(woken).toEqual(['c0', 'c1', 'c2']);
    w.close();
  });

  it('wakes no claimer before the date by the wall clock, though its timer fires first', async () => {
    // Timers run on the monotonic clock, the entry's date on the wall clock: here the wall clock
    // is a millisecond behind when the timer comes due. Woken then, the claim's entry would be
    // dated before the item, find nothing due and cost a wasted round and a second one.
    const { fe } = member([T0 + 10]);
    const w = new JournalWaiters(fe);
    const woken = waitAll(w, 1, 1);
    vi.setSystemTime(T0 - 1);
    await settle(10);
    expect(Date.now()).toBe(T0 + 9);
    expect(woken).toEqual([]);
    await settle(1);
    expect(woken).toEqual(['c0']);
    w.close();
  });

  // A claim waits at most its waitMs; a journal's due timer may aim months ahead. Left running
  // once no claim waits, it would fire for no one (and a date past 2^31 - 1 ms re-armed every
  // millisecond): the last claim to go takes it with it.
  it('holds no due timer once the last claim waiting on its journal has run out its wait', async () => {
    const DAY = 86_400_000;
    const { fe } = member([T0 + 60 * DAY]);
    const w = new JournalWaiters(fe);
    void w.wait(NAME, performance.now() + 1_000, undefined, 1);
    await settle(0);
    expect(w.holding()).toEqual({ claims: 1, timers: 2 });
    await settle(1_000);
    expect(w.holding()).toEqual({ claims: 0, timers: 0 });
    const timeouts = vi.spyOn(globalThis, 'setTimeout');
    await settle(25 * DAY);
    expect(timeouts).not.toHaveBeenCalled();
    w.close();
  });

  it('while a claim is in flight, wakes the next claimer at the next date past it, not again for the item it takes', async () => {
    const { fe, take } = member([T0 + 10, T0 + 15, T0 + 40]);
    const w = new JournalWaiters(fe);
    const woken = waitAll(w, 3, 1);
    await settle(10);
    expect(woken).toEqual(['c0']);
    // c0's claim goes out at T0+10 and takes the item due then; its Raft round is slow.
    const release = w.claiming(NAME, 1);
    await settle(4);
    expect(woken).toEqual(['c0']);
    await settle(1);
    // T0+15: the next item, which c0's claim does not take, goes to the next claimer.
    expect(woken).toEqual(['c0', 'c1']);
    const release1 = w.claiming(NAME, 1);
    // c0's claim applies (it took the first item); c1's is still in flight.
    take(0);
    release();
    await settle(5);
    expect(woken).toEqual(['c0', 'c1']);
    take(1);
    release1();
    // Both claims took 5 ms to apply: the next claimer is woken that far ahead of T0+40 (claim-ahead.ts).
    await settle(14);
    expect(woken).toEqual(['c0', 'c1']);
    await settle(1);
    expect(woken).toEqual(['c0', 'c1', 'c2']);
    w.close();
  });

  it('a new claim whose due items the claims in flight take waits, and one arriving when more is due does not', () => {
    const { fe } = member([T0, T0 + 1, T0 + 50]);
    const w = new JournalWaiters(fe);
    vi.setSystemTime(T0 + 1);
    // Sent at T0+1: it takes the two items due by then.
    const release = w.claiming(NAME, 5);
    expect(w.covered(NAME, T0 + 1)).toBe(true);
    expect(w.covered(NAME, T0 + 50)).toBe(false); // due after the claim in flight was sent
    release();
    expect(w.covered(NAME, T0 + 1)).toBe(false); // nothing in flight
    const small = w.claiming(NAME, 1);
    expect(w.covered(NAME, T0 + 1)).toBe(false); // two due, the claim in flight asks for one
    small();
    w.close();
  });

  it('arms the timer from the fronts in memory, without reading the db', async () => {
    const { fe, reads } = member([T0 + 5, T0 + 8]);
    const w = new JournalWaiters(fe);
    const woken = waitAll(w, 2, 1);
    await settle(10);
    expect(woken).toEqual(['c0', 'c1']);
    expect(reads()).toBe(0);
    w.close();
  });

  it('claimers waiting when a claim fills the rate limit\u2019s window are woken when the window ends', async () => {
    // One claim per window of 1000 ms; the window starting at T0 has not claimed yet.
    const { fe, state, take } = member([T0, T0 + 5], { rateLimit: { max: 1, windowMs: 1000 } });
    const definition = state.journals.get(NAME)!;
    state.journals.set(NAME, { ...definition, window: { start: T0, claimed: 0 } });
    const w = new JournalWaiters(fe);
    // A claim sent at T0 takes the item due then; two claimers wait for the next.
    const release = w.claiming(NAME, 1);
    const woken = waitAll(w, 2, 1);
    // It applies: it took the item and filled the window.
    take(0);
    state.journals.set(NAME, { ...state.journals.get(NAME)!, window: { start: T0, claimed: 1 } });
    release();
    await settle(999);
    // T0+5 is due, but claims take nothing until the window ends.
    expect(woken).toEqual([]);
    await settle(1);
    // A new window: one claimer for the one item due (not at its deadline, a minute on).
    expect(woken).toEqual(['c0']);
    w.close();
  });

  it('arms from the newest db read, not one started earlier that answers first', async () => {
    const answers: ((earliest: number | null) => void)[] = [];
    const { fe } = member([T0 + 10], { read: () => new Promise((resolve) => answers.push(resolve)) });
    const w = new JournalWaiters(fe);
    const woken = waitAll(w, 2, 1);
    expect(answers.length).toBe(2);
    // The first read, from before a claim left an item due at T0+10, answers a later date, first.
    answers[0]!(T0 + 30_000);
    answers[1]!(T0 + 10);
    await settle(10);
    expect(woken).toEqual(['c0']);
    w.close();
  });

  it('a claim in flight that fails leaves its item due: the timer aims at it again', async () => {
    const { fe } = member([T0, T0 + 50]);
    const w = new JournalWaiters(fe);
    // Sent at T0, it would take the item due then: the claimer waits past it, for T0+50.
    const release = w.claiming(NAME, 1);
    const woken = waitAll(w, 1, 1);
    await settle(10);
    expect(woken).toEqual([]);
    // It fails (nothing applied): the item due at T0 is for the claimer that waits.
    release();
    await settle(0);
    expect(woken).toEqual(['c0']);
    w.close();
  });

  it('a claimer called off just as the timer woke it: the next one is woken for its item', async () => {
    const { fe } = member([T0 + 10, T0 + 60]);
    const w = new JournalWaiters(fe);
    const woken: string[] = [];
    const ticket = w.begin(NAME, 's0');
    void w.wait(NAME, performance.now() + 60_000, ticket, 1).then(() => woken.push('c0'));
    void w.wait(NAME, performance.now() + 60_000, undefined, 1).then(() => woken.push('c1'));
    await settle(10);
    expect(woken).toEqual(['c0']);
    // c0's session calls it off before it claims: the item due at T0+10 goes to c1, now.
    expect(w.cancel(NAME, 's0')).toBe(1);
    await settle(0);
    expect(woken).toEqual(['c0', 'c1']);
    w.finish(ticket);
    w.close();
  });
});
