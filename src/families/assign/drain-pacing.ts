// Spacing and sizing a drain's steps (assign.decommission with max). Each step is one
// entry whose apply holds every member's log while it replaces its batch, so the
// get-or-create requests that come meanwhile wait behind it: the load's tail latency
// rises by about one step's hold, which grows with the batch. A step's time is a fixed
// part (the round trip, the queue before it, which move with the cluster's load) plus
// the hold; the pacer takes the quickest of the last ten steps as the fixed part and
// sizes the batch so the rest, in the median of the last three steps (one slow step is
// noise on a busy machine), stays under a target
// (halving it when over, growing it back while well under), and
// leaves the log free between steps (a pause at least as long as the step took), so a
// busy machine, where steps take longer, drains slower by itself. The rate is the ceiling.

export interface DrainPacing {
  /** A step's time beyond the quickest step's should stay under this (ms): past it the batch halves. */
  readonly targetHoldMs: number;
  /** The pause after a step, as a multiple of the time it took. */
  readonly gap: number;
  /** The smallest batch (users per step). */
  readonly minBatch: number;
}

export const DRAIN_PACING: DrainPacing = { targetHoldMs: 5, gap: 1, minBatch: 25 };

export class DrainPacer {
  private batchNow: number;
  private lastMs: number | null = null;
  /** The last ten steps' times (ms), the newest last: the quickest is the fixed part of a step now. */
  private readonly recent: number[] = [];
  private readonly started: number;
  private replaced = 0;

  /** `maxBatch`: the largest batch (and the first); `ratePerSecond`: users replaced per second at most. */
  constructor(
    private readonly maxBatch: number,
    private readonly ratePerSecond: number,
    private readonly pacing: DrainPacing = DRAIN_PACING,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.batchNow = maxBatch;
    this.started = now();
  }

  /** Users the next step replaces at most. */
  get batch(): number {
    return this.batchNow;
  }

  /** Records a step: how long it took (ms) and how many users it replaced. */
  record(stepMs: number, replaced: number): void {
    this.lastMs = stepMs;
    this.replaced += replaced;
    this.recent.push(stepMs);
    if (this.recent.length > 10) this.recent.shift();
    const { targetHoldMs, minBatch } = this.pacing;
    const floor = Math.min(minBatch, this.maxBatch);
    const holdMs = median(this.recent.slice(-3)) - Math.min(...this.recent);
    if (holdMs > targetHoldMs) this.batchNow = Math.max(floor, Math.floor(this.batchNow / 2));
    else if (holdMs < targetHoldMs / 2) this.batchNow = Math.min(this.maxBatch, this.batchNow + Math.max(1, Math.ceil(this.batchNow / 4)));
  }

  /** The wait before the next step (ms): the gap after the last step, or longer if the rate asks. */
  nextWaitMs(): number {
    if (this.lastMs === null) return 0;
    const byRate = this.started + (this.replaced / this.ratePerSecond) * 1000 - this.now();
    return Math.max(0, byRate, this.lastMs * this.pacing.gap);
  }
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
