// Session clocks across a stall of the server itself. Timers run before pending
// socket input is read, so after the process stood still (a long task, a GC pause,
// SIGSTOP) the expiry check would find every session overdue although its client
// kept sending: a 10 s stall once expired a healthy client's 5 s session and
// deleted its lock. The queue gives the stalled time back to every session.

import { describe, expect, it } from 'vitest';
import { ExpiryQueue } from '../../src/server/node/expiry.js';

const CHECK_MS = 25;

/** A queue on a hand-moved clock, checked every CHECK_MS from `from` to `to` (inclusive). */
function clocked(): { queue: ExpiryQueue; at(ms: number): void; checkUntil(from: number, to: number): string[] } {
  let now = 0;
  const queue = new ExpiryQueue(() => now, CHECK_MS);
  return {
    queue,
    at: (ms) => (now = ms),
    checkUntil(from, to) {
      const due: string[] = [];
      for (let t = from; t <= to; t += CHECK_MS) {
        now = t;
        due.push(...queue.takeDue());
      }
      return due;
    },
  };
}

describe('session expiry across a server stall', () => {
  it('a session whose client kept sending through a 10 s stall survives it', () => {
    const c = clocked();
    c.queue.track('live', 5000);
    // The client pings every 100 ms while the server runs.
    for (let t = 0; t <= 2000; t += 100) {
      c.at(t);
      c.queue.touch('live');
      expect(c.checkUntil(t, t + 75)).toEqual([]);
    }
    // Stalled from 2075 to 12075: the first check after it runs before the pings waiting in the socket are read.
    c.at(12_075);
    expect(c.queue.takeDue()).toEqual([]);
    c.at(12_076);
    c.queue.touch('live'); // then the input is read
    expect(c.checkUntil(12_100, 14_000)).toEqual([]);
  });

  it('a session whose client went away still expires, later by as long as the server stood still', () => {
    const c = clocked();
    c.queue.track('gone', 1000);
    expect(c.checkUntil(0, 500)).toEqual([]);
    c.at(10_500); // a 10 s stall
    expect(c.queue.takeDue()).toEqual([]);
    // 500 ms of its timeout had run before the stall: the rest runs after it (less the two
    // check intervals a check may be late without counting as a stall).
    expect(c.checkUntil(10_525, 10_925)).toEqual([]);
    expect(c.checkUntil(10_950, 11_100)).toEqual(['gone']);
  });

  it('ordinary timer jitter gives nothing back', () => {
    const c = clocked();
    c.queue.track('s', 1000);
    // Checks arriving up to one interval late are not a stall.
    let t = 0;
    const due: string[] = [];
    while (due.length === 0) {
      t += CHECK_MS * 2;
      c.at(t);
      due.push(...c.queue.takeDue());
    }
    expect(due).toEqual(['s']);
    expect(t).toBe(1000);
  });
});
