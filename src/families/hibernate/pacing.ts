// Spacing the steps of a large unit's freeze or thaw (dropHot, thawStep entries).
// Each step holds every member's log for the time of its batch, so the client
// writes queued behind it wait that long. Proposed back to back, the steps would
// hold the log most of the time for as long as the unit takes; spaced, they hold
// it a bounded share of the time, and on a busy machine, where each step takes
// longer, they go slower by themselves.

export interface PacerOptions {
  /** The wait before a step, as a multiple of the time the step before took (propose to applied). */
  readonly gap: number;
  /** The least wait between steps (ms). */
  readonly minMs: number;
  /** The most (ms): however slow a step was, the next one comes within this. */
  readonly maxMs: number;
}

/**
 * Each step waits three times as long as the one before took (propose to applied, which is
 * mostly the round trip, during which the log takes client writes): the steps hold the log at
 * most a quarter of the time. With a wait as long as the step (half the time), a thaw or drain
 * of 100,000 items kept three members at half a core or more for seconds, which on a machine
 * whose cores the clients already use doubled their writes' p99; shorter steps only made the
 * thaw faster, not lighter. The least wait keeps a step rate however quick each step gets.
 */
export const STEP_PACING: PacerOptions = { gap: 3, minMs: 4, maxMs: 200 };

/**
 * The most bytes (keys and values) one thaw step puts back, besides its HOT_STEP items: a
 * step's batch holds every member's log while it is written, and a unit of large items
 * would otherwise put megabytes in one batch. At H1's items (about 130 bytes) a step stays
 * 250 items: measured on three members, a step's apply took about as long at 16 items as
 * at 250 (a LevelDB write's trip through the thread pool, not the bytes, is most of it),
 * so smaller steps only made more of them.
 */
export const STEP_BYTES = 64 * 1024;

/**
 * How many of `entries` from `from` one step puts back: at most `maxItems`, and no more
 * than fit in `maxBytes` (always at least one, however large).
 */
export function itemsWithin(entries: { readonly length: number; slice(from: number, to: number): ReadonlyArray<readonly [Uint8Array, Uint8Array]> }, from: number, maxItems: number, maxBytes: number = STEP_BYTES): number {
  let bytes = 0;
  let n = 0;
  for (const [key, value] of entries.slice(from, from + maxItems)) {
    bytes += key.byteLength + value.byteLength;
    if (n > 0 && bytes > maxBytes) break;
    n++;
  }
  return Math.max(1, n);
}

export class StepPacer {
  private lastMs: number | null = null;

  constructor(
    private readonly options: PacerOptions = STEP_PACING,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((go) => setTimeout(go, ms)),
  ) {}

  /** The wait before the next step (0 before the first). */
  nextGapMs(): number {
    if (this.lastMs === null) return 0;
    const { gap, minMs, maxMs } = this.options;
    return Math.min(maxMs, Math.max(minMs, this.lastMs * gap));
  }

  /** Runs one step, after the wait the step before calls for. */
  async step<T>(run: () => Promise<T>): Promise<T> {
    const wait = this.nextGapMs();
    if (wait > 0) await this.sleep(wait);
    const started = performance.now();
    try {
      return await run();
    } finally {
      this.lastMs = performance.now() - started;
    }
  }
}

/** The most the leader waits, once its own work beside the log is done, for the followers' (see followersMargin). */
export const FOLLOWER_MARGIN_MS = 1_000;

/**
 * Work beside the log that the next entry's apply waits for (a freeze's files, a thaw's read)
 * began on every member at once, and takes a follower about as long as the leader; a
 * follower whose apply waits for it holds its log and its acknowledgements meanwhile. Once
 * the leader's own (begun at `began`) is done, it waits as long again, at most
 * FOLLOWER_MARGIN_MS, before it proposes that entry. (Half as long again was too little on a
 * busy machine: a follower's first thaw step still waited 385 ms for its read, with every
 * write behind it.)
 */
export async function followersMargin(began: number, sleep: (ms: number) => Promise<void> = (ms) => new Promise((go) => setTimeout(go, ms))): Promise<void> {
  const ms = Math.min(FOLLOWER_MARGIN_MS, performance.now() - began);
  if (ms >= 1) await sleep(ms);
}
