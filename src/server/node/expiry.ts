// The leader's in-memory session clocks (seed 003, ephemeral-data walkthrough):
// heartbeats only move a deadline here, never touch Raft. When a deadline passes
// the session is reported once, and the caller proposes its expiry.

interface Deadline {
  timeoutMs: number;
  deadline: number;
  /** Reported as due; waiting for the expiry command to commit. */
  reported: boolean;
}

export class ExpiryQueue {
  private readonly deadlines = new Map<string, Deadline>();
  /** When takeDue last ran; null before the first check after clear(). */
  private lastCheck: number | null = null;

  /** `checkEveryMs`: how often takeDue is called; a call much later than that means the process stalled. */
  constructor(
    private readonly now: () => number,
    private readonly checkEveryMs: number,
  ) {}

  /** Start (or restart) a session's countdown at its full timeout. */
  track(session: string, timeoutMs: number): void {
    this.deadlines.set(session, { timeoutMs, deadline: this.now() + timeoutMs, reported: false });
  }

  /** Any frame from the session's connection keeps it alive. False when it moved nothing (not tracked, or already reported due). */
  touch(session: string): boolean {
    const d = this.deadlines.get(session);
    if (d === undefined || d.reported) return false;
    d.deadline = this.now() + d.timeoutMs;
    return true;
  }

  /** How long until the session's deadline (ms; negative once past), or undefined when it is not tracked. */
  remainingMs(session: string): number | undefined {
    const d = this.deadlines.get(session);
    return d === undefined ? undefined : d.deadline - this.now();
  }

  remove(session: string): void {
    this.deadlines.delete(session);
  }

  sessions(): string[] {
    return [...this.deadlines.keys()];
  }

  has(session: string): boolean {
    return this.deadlines.has(session);
  }

  /** Sessions whose deadline has passed and that were not reported before. */
  takeDue(): string[] {
    const now = this.now();
    this.giveBackStall(now);
    const due: string[] = [];
    for (const [id, d] of this.deadlines) {
      if (!d.reported && d.deadline <= now) {
        d.reported = true;
        due.push(id);
      }
    }
    return due;
  }

  /** An expiry proposal failed (e.g. leadership wobble): let the session be reported again. */
  retry(session: string): void {
    const d = this.deadlines.get(session);
    if (d) d.reported = false;
  }

  clear(): void {
    this.deadlines.clear();
    this.lastCheck = null;
  }

  /**
   * A check that comes much later than checkEveryMs after the previous one means
   * this process did not run meanwhile (a long task, a GC pause, SIGSTOP). The
   * frames clients sent in that time are still unread in socket buffers, and timers
   * run before they are read, so the stall must not count against any session:
   * every deadline moves by it. A client that really went away still expires, as
   * much later as the server stood still. (A 10 s stall once expired a healthy
   * client's 5 s session and deleted its lock.)
   */
  private giveBackStall(now: number): void {
    if (this.lastCheck !== null) {
      const stalled = now - this.lastCheck - 2 * this.checkEveryMs;
      if (stalled > 0) for (const d of this.deadlines.values()) d.deadline += stalled;
    }
    this.lastCheck = now;
  }

  get size(): number {
    return this.deadlines.size;
  }
}
