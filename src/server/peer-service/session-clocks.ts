// Session liveness, leader side (docs/scale-out.md "Session liveness"): the
// leader's session clocks (an ExpiryQueue), moved by its own connections and by
// the members' liveness batches, and the acknowledgements those batches get.
// Pure: time, the replicated holder of each session, the leadership check and
// the way out are injected.
//
// Two rules make a member's view of a deadline a safe lower bound:
// - a batch moves only the clocks of sessions its sender holds (the replicated
//   `SessionInfo.member`; a session that records no holder, opened before
//   command version 9, takes touches from any member);
// - a batch is acknowledged only after the leader, having applied it, proved it
//   still leads in the same term (a lease or a heartbeat round: the check a
//   linearizable read takes). Batches that arrive while a check is in flight
//   wait for the next one, which must start after they were applied; batches
//   arriving together share one. A leader that cannot prove it leads never
//   answers. A check unanswered for checkTimeoutMs is abandoned with its
//   batches (unanswered: the member's confirmations just do not move), so a
//   check that never settles cannot stop every later answer; at most
//   MAX_WAITING_BATCHES wait, the oldest dropped first.
// A new leader starts every clock at the full timeout; one that stops leading
// forgets its clocks, answers nothing more and reports nothing due.

import { ExpiryQueue } from '../node/expiry.js';
import type { LiveAck, LiveBatch } from './liveness.js';

/** How the clocks learn that this member leads, and prove it. */
export interface Leadership {
  /** This member's term while it leads; null when it does not. */
  leadingTerm(): number | null;
  /** Resolves once this member proved it led when the call was made (RaftDriver.readIndex on the leader); rejects otherwise. */
  confirm(): Promise<unknown>;
}

export interface SessionClocksOptions {
  /** Monotonic milliseconds. */
  readonly now: () => number;
  /** How often takeDue is called (ms): a call much later means the process stalled (ExpiryQueue). */
  readonly checkEveryMs: number;
  /** The replicated holder of a live session: its member, null when it records none, undefined when it is not live. */
  readonly holderOf: (session: string) => string | null | undefined;
  readonly leadership: Leadership;
  /** A session acknowledged notifications up to `index` (the notifier's acknowledge). */
  readonly acknowledge: (session: string, index: number) => void;
  /** Sends `ack` to `member`. */
  readonly sendAck: (member: string, ack: LiveAck) => void;
  /** Whether the leader's writes waiting to commit are past their bound (`busy` in every answer). */
  readonly busy?: () => boolean;
  /** How long a leadership check may stay unanswered before it is abandoned (ms; LEADERSHIP_CHECK_TIMEOUT_MS by default). */
  readonly checkTimeoutMs?: number;
}

/** A leadership check is a heartbeat round: one unanswered this long will not prove anything in time to help. */
export const LEADERSHIP_CHECK_TIMEOUT_MS = 2_000;

/** Batches waiting for a check, at most (200 members' five parts of a full batch); the oldest go unanswered first. */
export const MAX_WAITING_BATCHES = 1_000;

interface WaitingAck {
  readonly member: string;
  readonly epoch: number;
  readonly seq: number;
  readonly ignored: readonly string[];
}

export class SessionClocks {
  private readonly queue: ExpiryQueue;
  /** Batches applied and waiting for a leadership check started after them. */
  private waiting: WaitingAck[] = [];
  /** Which check is the current one: a check's outcome counts only while it is (start, stop and a timeout move it on). */
  private checkGeneration = 0;
  /** When the current check started; null when none is in flight. */
  private checkStartedAt: number | null = null;
  /** The term this member leads in since start(); null when it does not lead. */
  private term: number | null = null;

  constructor(private readonly opts: SessionClocksOptions) {
    this.queue = new ExpiryQueue(opts.now, opts.checkEveryMs);
  }

  /** This member now leads: every live session's clock starts at its full timeout. */
  start(live: Iterable<readonly [string, number]>): void {
    this.queue.clear();
    this.forgetChecks();
    this.term = this.opts.leadership.leadingTerm();
    for (const [session, timeoutMs] of live) this.queue.track(session, timeoutMs);
  }

  /** This member stopped leading: its clocks and the answers it owed are forgotten. */
  stop(): void {
    this.term = null;
    this.queue.clear();
    this.forgetChecks();
  }

  /** A session opened (or attached) after start: its clock starts at the full timeout. */
  track(session: string, timeoutMs: number): void {
    if (this.term !== null) this.queue.track(session, timeoutMs);
  }

  /** A session ended: its clock goes. */
  remove(session: string): void {
    this.queue.remove(session);
  }

  /** A frame on a connection this leader holds itself. */
  touch(session: string): void {
    this.queue.touch(session);
  }

  /** A liveness batch from `member`: its holders' clocks move now; its answer waits for a leadership check. */
  onBatch(member: string, batch: LiveBatch): void {
    if (this.term === null) return; // not leading: a batch proves nothing to anyone, and is not answered
    const ignored: string[] = [];
    // A session is confirmed to the member only if its clock really moved: held by the sender,
    // tracked (one opened since start is tracked by the duty at its full timeout), not due already.
    for (const session of batch.touched) if (!(this.holds(member, session) && this.queue.touch(session))) ignored.push(session);
    for (const [session, index] of batch.acks) if (this.holds(member, session)) this.opts.acknowledge(session, index);
    this.waiting.push({ member, epoch: batch.epoch, seq: batch.seq, ignored });
    if (this.waiting.length > MAX_WAITING_BATCHES) this.waiting.splice(0, this.waiting.length - MAX_WAITING_BATCHES);
    this.checkLeadership();
  }

  /**
   * Sessions whose deadline passed, each reported once (none unless leading in the term of start()): the caller proposes
   * their expiry. Called periodically, it also abandons an overdue check and starts the next.
   */
  takeDue(): string[] {
    // Not only stop(): a caller that has not yet told us leadership ended must not propose expiries either.
    if (this.term === null || this.opts.leadership.leadingTerm() !== this.term) return [];
    this.checkLeadership();
    return this.queue.takeDue();
  }

  /** An expiry proposal failed: the session may be reported again. */
  retry(session: string): void {
    this.queue.retry(session);
  }

  /** Milliseconds until the session's deadline (negative once past); undefined when it has no clock. */
  remainingMs(session: string): number | undefined {
    return this.queue.remainingMs(session);
  }

  has(session: string): boolean {
    return this.queue.has(session);
  }

  /** The check in flight counts no more (its batches go unanswered); and, unless told otherwise, neither do the batches waiting. */
  private forgetChecks(waitingToo = true): void {
    this.checkGeneration++;
    this.checkStartedAt = null;
    if (waitingToo) this.waiting = [];
  }

  /** Whether `member` holds the live `session` (any member does for one that records no holder). */
  private holds(member: string, session: string): boolean {
    const holder = this.opts.holderOf(session);
    return holder === null || (holder !== undefined && holder === member);
  }

  /** Answers every batch applied before the check started, once the check proves this member still leads in the same term. */
  private checkLeadership(): void {
    const timeoutMs = this.opts.checkTimeoutMs ?? LEADERSHIP_CHECK_TIMEOUT_MS;
    if (this.checkStartedAt !== null && this.opts.now() - this.checkStartedAt > timeoutMs) this.forgetChecks(false);
    if (this.checkStartedAt !== null || this.waiting.length === 0 || this.term === null) return;
    const term = this.term;
    const answering = this.waiting;
    this.waiting = [];
    const generation = ++this.checkGeneration;
    this.checkStartedAt = this.opts.now();
    const done = (proved: boolean): void => {
      if (generation !== this.checkGeneration) return; // abandoned: its batches went unanswered
      this.checkStartedAt = null;
      // Proved only if this member led in `term` throughout: it cannot lead again in a term it left.
      const stillLeading = proved && this.term === term && this.opts.leadership.leadingTerm() === term;
      if (stillLeading) {
        const busy = this.opts.busy?.() ?? false;
        for (const a of answering) this.opts.sendAck(a.member, { epoch: a.epoch, seq: a.seq, term, ignored: a.ignored, busy });
      }
      this.checkLeadership();
    };
    this.opts.leadership.confirm().then(
      () => done(true),
      () => done(false),
    );
  }
}
