// Time and timers as the Raft driver sees them. Injected, so that the simulator
// runs the real driver in virtual time (test/sim); a running server uses the
// system's clocks and Node's timers.

export type Cancel = () => void;

export interface DriverClock {
  /** Milliseconds on a clock that never steps (it may stop while the machine sleeps). */
  monotonic(): number;
  /** Wall-clock milliseconds: it runs while the machine sleeps, but can be stepped either way. */
  wall(): number;
  /** Runs `fn` once the current work is done, after I/O already waiting. */
  defer(fn: () => void): void;
  /**
   * Runs `fn` as soon as the current synchronous work is done, before any I/O (a microtask).
   * Without it the driver defers instead (a simulation keeps every callback in its own hands).
   */
  soon?(fn: () => void): void;
  /** Runs `fn` once, `ms` from now. */
  after(ms: number, fn: () => void): Cancel;
  /** Runs `fn` every `ms` until cancelled. */
  every(ms: number, fn: () => void): Cancel;
}

/** The process's clocks and timers, looked up at each call (so tests that fake them are obeyed). */
export const systemClock: DriverClock = {
  monotonic: () => performance.now(),
  wall: () => Date.now(),
  defer: (fn) => {
    setImmediate(fn);
  },
  soon: (fn) => {
    queueMicrotask(fn);
  },
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    return () => clearInterval(timer);
  },
};
