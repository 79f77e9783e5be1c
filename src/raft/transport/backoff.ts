// Reconnect delays: capped exponential backoff with "equal jitter" (half the delay
// fixed, half random), after the AWS Architecture Blog's "Exponential Backoff
// and Jitter" (2015). The fixed half keeps a dead peer from being hammered; the
// random half keeps members that lost a peer at the same moment from retrying
// in lockstep.

export interface BackoffOptions {
  /** Delay before the first retry, in ms. */
  readonly initialDelayMs: number;
  /** Cap on any delay, in ms. */
  readonly maxDelayMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialDelayMs: 50, maxDelayMs: 2000 };

/**
 * The delay before retry number `attempt` (0 for the first retry).
 * `random` returns a number in [0, 1) (Math.random by default).
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  // Capping the exponent first keeps 2 ** attempt finite however long a peer stays down.
  const exp = Math.min(options.initialDelayMs * 2 ** Math.min(attempt, 30), options.maxDelayMs);
  const half = exp / 2;
  return Math.round(half + random() * half);
}

export function checkBackoffOptions(o: BackoffOptions): void {
  if (!Number.isFinite(o.initialDelayMs) || o.initialDelayMs < 1) throw new RangeError('initialDelayMs must be at least 1');
  if (!Number.isFinite(o.maxDelayMs) || o.maxDelayMs < o.initialDelayMs) throw new RangeError('maxDelayMs must be at least initialDelayMs');
}
