// Claims a Raft round ahead of an item's date (docs/journal.md, "Claims a round ahead"):
// the member serving a waiting claim proposes it that long before the date, with `dueBy`
// set to the date, so the entry commits about when the item falls due rather than a round
// after; the reply is held until the date, so no item reaches a worker before it.
//
// Why it is safe: apply judges due-ness from the entry alone (`dueBy`, bounded by the entry's
// clock plus CLAIM_AHEAD_MAX_MS), so every member claims the same items; the replicated clock
// is the entry's own (the proposer's wall clock), never a future date; and the reply waits
// for the serving member's wall clock, the same clock that dates its claims' entries, to
// reach every item's date. What changes is only that such an item turns Processing up to a
// round before its date (its lease starting at the entry's clock, a round early at most).

/** How far ahead of a date a waiting claim is proposed, at most (below apply's CLAIM_AHEAD_MAX_MS). */
export const CLAIM_AHEAD_CAP_MS = 20;
/** A held reply's bound past the lead's cap: the timer's late fire, and a millisecond for its early one. */
const HOLD_SLACK_MS = 5;
/** Claim rounds the estimate looks at, the newest. */
const ROUNDS_KEPT = 32;
/** The share of those rounds that should commit by the date: the lead is their 90th percentile. */
const QUANTILE = 0.9;

/**
 * How long this member's claims take from proposal to applied (the last few), and from them how
 * far ahead of a date to propose one: most commit by then. None measured yet: no lead.
 */
export class ClaimRounds {
  private readonly rounds: number[] = [];
  private next = 0;
  private cached: number | null = 0;

  record(ms: number): void {
    if (this.rounds.length < ROUNDS_KEPT) this.rounds.push(ms);
    else this.rounds[this.next] = ms;
    this.next = (this.next + 1) % ROUNDS_KEPT;
    this.cached = null;
  }

  /** Whole ms, at most CLAIM_AHEAD_CAP_MS. */
  lead(): number {
    if (this.cached !== null) return this.cached;
    const sorted = [...this.rounds].sort((a, b) => a - b);
    const at = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * QUANTILE))] ?? 0;
    this.cached = Math.min(CLAIM_AHEAD_CAP_MS, Math.ceil(at));
    return this.cached;
  }
}

/**
 * The `dueBy` of a claim the due timer woke for `wokenFor`: that date while it is still ahead,
 * unless an item is due already that no claim in flight takes (`nothingLeftDue` says none is):
 * held for the date, that item would wait longer than a claim at once would bring it.
 */
export function claimAhead(wokenFor: number | undefined, wall: number, nothingLeftDue: () => boolean): number | undefined {
  return wokenFor !== undefined && wokenFor > wall && nothingLeftDue() ? wokenFor : undefined;
}

/**
 * Resolves once the wall clock has reached the process date of every item a claim took
 * ahead (`dueBy`): such a claim is answered no earlier. Timers may fire a millisecond early by
 * the wall clock: waited out. A claim without `dueBy` is answered at once, as it always was
 * (a replicated clock ahead of this member's, another member's, is not waited for). Bounded on
 * the monotonic clock by how far ahead a claim goes: a wall clock stepped back holds no reply long.
 */
export async function untilDue(items: ReadonlyArray<{ readonly processAt: number }>, dueBy: number | undefined): Promise<void> {
  if (dueBy === undefined) return;
  let latest = 0;
  for (const i of items) if (i.processAt > latest) latest = i.processAt;
  const until = Math.min(latest, dueBy);
  const giveUp = performance.now() + CLAIM_AHEAD_CAP_MS + HOLD_SLACK_MS;
  for (let wait = until - Date.now(); wait > 0 && performance.now() < giveUp; wait = until - Date.now()) {
    await new Promise((r) => setTimeout(r, Math.min(wait, giveUp - performance.now())));
  }
}

/**
 * Whether a job read after a reply was held for its date is still the claim's to hand over:
 * Processing under `lease`, not removed (cancelled) and not flagged. One removed while the
 * reply was held is left out: a removal before the date would have kept it from a claim at it.
 */
export function stillClaimed(job: { readonly status?: string; readonly lease?: number; readonly cancelled?: boolean; readonly flaggedAt?: number } | null, lease: number): boolean {
  return job !== null && job.flaggedAt === undefined && job.status === 'processing' && job.lease === lease && job.cancelled !== true;
}
