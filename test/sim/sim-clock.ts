// The driver's clock in the simulator: virtual time in steps (1 ms = 1 step),
// with the driver's deferred callbacks, timers and ticker held here until the
// simulator runs them. One per process incarnation: a crash kills it, and with
// it everything the dead process had scheduled.

import type { Cancel, DriverClock } from '../../src/raft/clock.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

export class SimClock implements DriverClock {
  private deferred: Array<() => void> = [];
  private timers: Timer[] = [];
  private nextSeq = 0;
  private alive = true;
  /** The driver's tick callback; the simulator calls it on the node's tick steps (and skews it). */
  ticker: (() => void) | null = null;

  constructor(
    private readonly now: () => number,
    /** How fast this process's clocks run against virtual time (1 = true; below 1: a slow clock). */
    private readonly rate: number,
    private readonly tickMs: number,
  ) {}

  monotonic(): number {
    return this.now() * this.rate;
  }

  wall(): number {
    return this.now() * this.rate;
  }

  defer(fn: () => void): void {
    if (this.alive) this.deferred.push(fn);
  }

  after(ms: number, fn: () => void): Cancel {
    const timer: Timer = { at: this.now() + ms, seq: this.nextSeq++, fn, cancelled: !this.alive };
    if (this.alive) this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  every(ms: number, fn: () => void): Cancel {
    if (ms !== this.tickMs) throw new Error(`the driver asked for a ${ms} ms interval; the simulator ticks every ${this.tickMs} (simulator bug)`);
    this.ticker = fn;
    return () => {
      if (this.ticker === fn) this.ticker = null;
    };
  }

  /** Runs the callbacks deferred so far (not those they defer in turn); whether there were any. */
  runDeferred(): boolean {
    if (this.deferred.length === 0) return false;
    const due = this.deferred;
    this.deferred = [];
    for (const fn of due) if (this.alive) fn();
    return true;
  }

  /** Runs the timers due by now, in the order they were set; whether there were any. */
  fireDueTimers(): boolean {
    if (this.timers.length === 0) return false;
    const now = this.now();
    const due = this.timers.filter((t) => t.at <= now && !t.cancelled).sort((a, b) => a.at - b.at || a.seq - b.seq);
    this.timers = this.timers.filter((t) => t.at > now && !t.cancelled);
    for (const t of due) if (this.alive && !t.cancelled) t.fn();
    return due.length > 0;
  }

  /** The process died: nothing it scheduled runs. */
  kill(): void {
    this.alive = false;
    this.deferred = [];
    this.timers = [];
    this.ticker = null;
  }
}
