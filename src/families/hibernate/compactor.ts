// LevelDB keeps a deleted key's space until it compacts the files that hold it,
// and leaves files alone that nothing writes to: without help, the hot store of
// a member that has just frozen most of its units is no smaller on disk. After
// freezes go quiet for a moment, this compacts the key span they deleted from,
// one compaction at a time, in LevelDB's own background thread. Local to each
// member (it changes how the db is laid out on disk, never what it holds).
import type { VeraDb } from '../../statemachine/types.js';

interface Span {
  gte: Buffer;
  lt: Buffer;
}

export class FrozenSpanCompactor {
  private pending: Span | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private stopped = false;
  /** Compactions finished (for tests and metrics). */
  compactions = 0;

  constructor(
    private readonly db: VeraDb,
    /** How long after the last freeze to compact: a run of freezes (the idle detector's, or an operator's) costs one compaction, after it. */
    private readonly quietMs = 10_000,
    /**
     * Whether a freeze or thaw is still stepping through a unit here (draining, or thawing in
     * steps): the compaction waits until none is, so it never competes with their steps for the
     * disk and the CPU, nor compacts a span they are still writing to.
     */
    private readonly stepping: () => boolean = () => false,
  ) {}

  /** Notes the key ranges a freeze deleted. */
  frozen(ranges: ReadonlyArray<{ readonly gte: Buffer; readonly lt: Buffer }>): void {
    for (const r of ranges) {
      if (this.pending === null) this.pending = { gte: r.gte, lt: r.lt };
      else {
        if (Buffer.compare(r.gte, this.pending.gte) < 0) this.pending.gte = r.gte;
        if (Buffer.compare(r.lt, this.pending.lt) > 0) this.pending.lt = r.lt;
      }
    }
    this.schedule();
  }

  /** The state it served is void (replaced by a snapshot's, or its member closed): nothing more is compacted. */
  stop(): void {
    this.stopped = true;
    this.pending = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), this.quietMs);
    // A member that stops does not wait for it: LevelDB reclaims the space by its own compactions later.
    this.timer.unref();
  }

  private async run(): Promise<void> {
    this.timer = null;
    // Closed: nothing to wait for (a drain under way then never ends on this db).
    if (this.db.status !== 'open') return this.stop();
    if (this.running || this.stepping()) return this.schedule();
    const span = this.pending;
    if (span === null) return;
    this.pending = null;
    this.running = true;
    try {
      await this.db.compactRange(span.gte, span.lt);
      this.compactions++;
    } catch {
      // Closed meanwhile, or LevelDB could not compact: the space is reclaimed by its own compactions later.
    } finally {
      this.running = false;
    }
  }
}
