// Spacing and sizing a drain's steps (assign.decommission with max). Each step is one
// entry whose apply holds every member's log while it replaces its batch, so the
// get-or-create requests that come meanwhile wait behind it: the load's tail latency
// rises by about one step's hold, which grows with the batch.
//
// A step's time is a fixed part (the round trip, the queue before it, both moving with
// the cluster's load) plus the hold. The pacer starts at the least batch and keeps
// measuring it (every PROBE_EVERY steps one step at the least batch), so the quickest of
// the last few such steps is the fixed part; it grows the batch while the steps at the
// size in hand (the median of their last three: one slow step is noise) take less than
// half the target past that, and halves it when they take more than the target. After
// each step it leaves the log free at least as long as the step took, so a busy cluster,
// where steps take longer, drains slower by itself. The rate is the ceiling.

export interface DrainPacing {
  /** A step's time past the least batch's should stay under this (ms): past it the batch halves. */
  readonly targetHoldMs: number;
  /** The pause after a step, as a multiple of the time it took. */
  readonly gap: number;
  /** The least batch (users per step), the one the fixed part is measured with. */
  readonly minBatch: number;
}

export const DRAIN_PACING: DrainPacing = { targetHoldMs: 5, gap: 1, minBatch: 25 };

/** One step in this many runs at the least batch, to measure the fixed part again. */
const PROBE_EVERY = 20;
/** Steps at the least batch the fixed part is the quickest of. */
const FIXED_WINDOW = 5;

export class DrainPacer {
  private readonly least: number;
  /** The batch the pacer settled on (the next step's unless it is a probe). */
  private size: number;
  private nextIsProbe = false;
  private lastMs: number | null = null;
  private steps = 0;
  private readonly started: number;
  private replaced = 0;
  /** The last step times at the least batch (ms), the newest last. */
  private readonly leastTimes: number[] = [];
  /** The last step times at `size` (ms) since it last changed, the newest last. */
  private readonly sizeTimes: number[] = [];

  /** `maxBatch`: the largest batch; `ratePerSecond`: users replaced per second at most. */
  constructor(
    private readonly maxBatch: number,
    private readonly ratePerSecond: number,
    private readonly pacing: DrainPacing = DRAIN_PACING,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.least = Math.max(1, Math.min(pacing.minBatch, maxBatch));
    this.size = this.least;
    this.started = now();
  }

  /** Users the next step replaces at most. */
  get batch(): number {
    return this.nextIsProbe ? this.least : this.size;
  }

  /** Records the step just run at `batch`: how long it took (ms) and how many users it replaced. */
  record(stepMs: number, replaced: number): void {
    const batch = this.batch;
    this.lastMs = stepMs;
    this.replaced += replaced;
    this.steps++;
    this.nextIsProbe = false;
    if (batch === this.least) keepLast(this.leastTimes, stepMs, FIXED_WINDOW);
    if (batch === this.size) keepLast(this.sizeTimes, stepMs, 3);
    if (batch !== this.size) return; // a probe: it only measures the fixed part
    const holdMs = median(this.sizeTimes) - Math.min(...this.leastTimes);
    const before = this.size;
    if (holdMs > this.pacing.targetHoldMs) this.size = Math.max(this.least, Math.floor(this.size / 2));
    else if (holdMs < this.pacing.targetHoldMs / 2) this.size = Math.min(this.maxBatch, this.size + Math.max(1, Math.ceil(this.size / 4)));
    if (this.size !== before) this.sizeTimes.length = 0;
    this.nextIsProbe = this.size !== this.least && this.steps % PROBE_EVERY === 0;
  }

  /** The wait before the next step (ms): the gap after the last step, or longer if the rate asks. */
  nextWaitMs(): number {
    if (this.lastMs === null) return 0;
    const byRate = this.started + (this.replaced / this.ratePerSecond) * 1000 - this.now();
    return Math.max(0, byRate, this.lastMs * this.pacing.gap);
  }
}

function keepLast(xs: number[], x: number, n: number): void {
  xs.push(x);
  if (xs.length > n) xs.shift();
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
