// The serving member's own spacing of drain steps (assign.decommission with max). A step's
// entry holds every member's log while it applies and takes CPU on every member, so the
// get-or-create load waits behind it; the client's pacer (client-drain-pacing.ts) sees only
// its own steps, never the load. So the member spaces the steps too: after a step that took
// t ms (barrier, read, propose, apply), the next starts no sooner than GAP x t after it
// ended, one step at a time whichever drain it belongs to. Under load steps take longer, so
// the drain leaves more of the cluster to the load by itself; on an idle cluster steps are
// quick and so are the gaps.

/** How the throttle reads the time (ms) and waits; performance.now and setTimeout unless a test gives its own. */
export interface ThrottleClock {
  now(): number;
  /** Resolves after `ms`, or at once when `cancelled` fires (the server closing). */
  sleep(ms: number, cancelled: AbortSignal): Promise<void>;
}

/** After a step of t ms, the next waits until GAP x t past its end: drain steps take at most 1/(1 + GAP) of the member's time. */
export const DRAIN_GAP = 2;

const REAL_CLOCK: ThrottleClock = {
  now: () => performance.now(),
  sleep: (ms, cancelled) =>
    new Promise((resolve) => {
      if (cancelled.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        cancelled.removeEventListener('abort', done);
        resolve();
      }
      cancelled.addEventListener('abort', done, { once: true });
    }),
};

export class DrainThrottle {
  /** The steps run one after another: this settles when the last one queued has. */
  private tail: Promise<void> = Promise.resolve();
  /** When the next step may start. */
  private nextAt = Number.NEGATIVE_INFINITY;
  private readonly closing = new AbortController();

  constructor(
    private readonly gap: number = DRAIN_GAP,
    private readonly clock: ThrottleClock = REAL_CLOCK,
  ) {}

  /** Runs `step` once the steps queued before it are done and their gap has passed. */
  run<T>(step: () => Promise<T>): Promise<T> {
    const turn = this.tail.then(async () => {
      const wait = this.nextAt - this.clock.now();
      if (wait > 0) await this.clock.sleep(wait, this.closing.signal);
      const started = this.clock.now();
      try {
        return await step();
      } finally {
        const ended = this.clock.now();
        this.nextAt = ended + (ended - started) * this.gap;
      }
    });
    this.tail = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /** Ends every wait at once (the server is closing). */
  close(): void {
    this.closing.abort();
  }
}
