// Acknowledgements held for the next claim's entry (held-acks.ts): what a claim
// takes, when they go alone, and how a combined result is split back.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeldAcks, MAX_HELD_ITEMS, splitResult, type AckResult, type HeldAck } from '../../../src/families/journal/held-acks.js';
import { MAX_CLAIM_ITEMS } from '../../../src/families/journal/wire.js';

function items(prefix: string, n: number): Array<readonly [string, number]> {
  return Array.from({ length: n }, (_, i) => [`${prefix}${i}`, 7] as const);
}

describe('HeldAcks', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('hands a claim what fits one entry, oldest first, never a key twice, and keeps the rest', () => {
    const alone: Array<[string, readonly HeldAck[]]> = [];
    const held = new HeldAcks((name, requests) => alone.push([name, requests]));
    void held.hold('j', items('a', 600), 100);
    void held.hold('j', [['a1', 8]], 100); // a1 again (a retried acknowledgement): not in the same entry
    void held.hold('j', items('b', 300), 100);
    void held.hold('j', items('c', 200), 100); // past one doneMany's items
    void held.hold('other', items('x', 1), 100);
    const first = held.take('j');
    expect(first.map((r) => r.items.length)).toEqual([600, 300]);
    expect(first.reduce((n, r) => n + r.items.length, 0)).toBeLessThanOrEqual(MAX_CLAIM_ITEMS);
    expect(held.take('j').map((r) => r.items.map(([k]) => k).slice(0, 1))).toEqual([['a1'], ['c0']]);
    expect(held.take('j')).toEqual([]);
    expect(held.take('other').map((r) => r.items)).toEqual([[['x0', 7]]]);
    vi.advanceTimersByTime(1000);
    expect(alone).toEqual([]); // everything was taken: no timer sends anything
  });

  it('sends what no claim took alone when the shortest hold ends, every request of the journal in as few entries as fit', () => {
    const alone: Array<[string, number[]]> = [];
    const held = new HeldAcks((name, requests) => alone.push([name, requests.map((r) => r.items.length)]));
    void held.hold('j', items('a', 10), 50);
    void held.hold('j', items('b', 995), 500);
    void held.hold('k', items('c', 1), 80);
    vi.advanceTimersByTime(49);
    expect(alone).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(alone).toEqual([
      ['j', [10]],
      ['j', [995]],
    ]);
    vi.advanceTimersByTime(30);
    expect(alone).toEqual([
      ['j', [10]],
      ['j', [995]],
      ['k', [1]],
    ]);
  });

  it('has room for a bounded number of items per journal', () => {
    const held = new HeldAcks(() => undefined);
    expect(held.hasRoom('j', MAX_HELD_ITEMS)).toBe(true);
    for (let i = 0; i < MAX_HELD_ITEMS / 1000; i++) void held.hold('j', items(`r${i}-`, 1000), 100);
    expect(held.hasRoom('j', 1)).toBe(false);
    expect(held.hasRoom('k', 1)).toBe(true);
    held.take('j');
    expect(held.hasRoom('j', 1000)).toBe(true);
    expect(held.hasRoom('j', 1001)).toBe(false);
  });

  it('answers each request from its promise with its part of the result', async () => {
    const held = new HeldAcks(() => undefined);
    const one = held.hold('j', [['a', 1], ['b', 1]], 100);
    const two = held.hold('j', [['c', 2]], 100);
    const taken = held.take('j');
    const parts = splitResult(taken, ['b', 'c']);
    taken.forEach((r, i) => r.resolve(parts[i]!));
    expect(await one).toEqual<AckResult>({ done: 1, lost: ['b'] });
    expect(await two).toEqual<AckResult>({ done: 0, lost: ['c'] });
  });

  it('splits a result exactly when a request names one key twice (done once, lost once)', () => {
    const held = new HeldAcks(() => undefined);
    void held.hold('j', [['k', 5], ['k', 5], ['m', 5]], 100);
    void held.hold('j', [['n', 6]], 100);
    const taken = held.take('j');
    expect(splitResult(taken, ['k', 'n'])).toEqual([
      { done: 2, lost: ['k'] },
      { done: 0, lost: ['n'] },
    ]);
  });
});
