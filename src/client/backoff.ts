// Capped exponential backoff with jitter. A server's retryAfterMs hint is a
// floor: waiting less than the server asked for only earns another refusal.

export interface BackoffOptions {
  /** First delay. Default 50 ms. */
  readonly initialMs?: number;
  /** Cap on the computed delay (a larger retryAfterMs hint still wins). Default 2000 ms. */
  readonly maxMs?: number;
}

export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;

  constructor(options: BackoffOptions = {}, private readonly random: () => number = Math.random) {
    this.initialMs = options.initialMs ?? 50;
    this.maxMs = options.maxMs ?? 2000;
  }

  /** The delay before the next attempt. */
  next(retryAfterMs?: number): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    // "Equal jitter": at least half the ceiling, so retries from many clients spread out without collapsing to 0.
    const computed = ceiling / 2 + (this.random() * ceiling) / 2;
    return Math.round(Math.max(computed, retryAfterMs ?? 0));
  }

  reset(): void {
    this.attempt = 0;
  }
}
