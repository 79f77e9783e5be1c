// Session liveness, member side (docs/scale-out.md "Session liveness"): the
// member holding a session's connection tells the leader, in one batch per
// interval for all its sessions, which ones it heard from, and learns from the
// leader's acknowledgement how long each session is safe. Pure: time and the
// interval's timer are injected, the batch goes out through `send`.
//
// The rule it keeps: `confirmed[s]` is the send time of the latest batch holding
// `s` that a leader acknowledged (after proving it still led), or the time the
// member sent the forward of the session's openSession/attachSession. No leader's
// deadline for `s` precedes `confirmed[s] + T` (T its timeout). So a member whose
// client keeps talking but whose confirmations stopped closes the connection
// (4009) once `now - confirmed[s] > T/2`: the client moves to another member with
// at least T/2 left. A member never expires anything itself.

import { randomInt } from 'node:crypto';

/** What the member tells the leader every interval (the `live` peer message's content). */
export interface LiveBatch {
  /** The sending process's random epoch: a restarted member numbers its batches from 1 again. */
  readonly epoch: number;
  readonly seq: number;
  /** The member's Raft term when it sent the batch. */
  readonly term: number;
  /** Every session held here (sent at once to a new leader), not only those heard from since the last batch; over MAX_SESSIONS_PER_BATCH it goes in several batches, each marked full. */
  readonly full: boolean;
  readonly touched: readonly string[];
  /** `[session, index]`: the highest notification index each session acknowledged since the last batch. */
  readonly acks: ReadonlyArray<readonly [string, number]>;
  /** How many sessions this member holds. */
  readonly held: number;
}

/** The leader's answer to a batch (the `liveAck` peer message's content): sent only after it proved it still led. */
export interface LiveAck {
  /** The batch's epoch, echoed: an answer to an earlier process of the member confirms nothing. */
  readonly epoch: number;
  readonly seq: number;
  /** The leader's term. */
  readonly term: number;
  /** Sessions of the batch the leader did not take: not live, or held by another member. */
  readonly ignored: readonly string[];
  /** The leader's writes waiting to commit are past their bound: pause the clients. */
  readonly busy: boolean;
}

export interface LivenessClock {
  /** Monotonic milliseconds. */
  now(): number;
  every(ms: number, fn: () => void): () => void;
}

export interface MemberLivenessOptions {
  readonly clock: LivenessClock;
  /** Batches go out this often (ms); `--liveness-interval`, 100 ms by default. */
  readonly intervalMs: number;
  /** This member's Raft term, stamped on each batch. */
  readonly term: () => number;
  /** Hands a batch to the leader (directly, or by the relay). */
  readonly send: (batch: LiveBatch) => void;
  /** This process's epoch (tests and the simulator fix it); a random 48-bit number by default. */
  readonly epoch?: number;
}

interface HeldSession {
  readonly timeoutMs: number;
  /** See the file comment: a lower bound of what every leader's deadline still allows, less T. */
  confirmedAt: number;
  /** When the client last sent a frame (-Infinity: not since it was held here). */
  lastTouchAt: number;
}

/** Batches sent and not acknowledged, kept for their acknowledgement; older ones are forgotten (ten seconds at 100 ms). */
export const MAX_UNACKNOWLEDGED_BATCHES = 100;

/**
 * The most sessions (and, apart, acknowledgements) one batch names: a full batch of
 * --sessions-max 10,000 ids would pass the peer link's frame bound, and a frame over it is
 * dropped, so every session's confirmation would stop (a 4009 storm). 2,000 ids of 22
 * characters fit in about 50 KB.
 */
export const MAX_SESSIONS_PER_BATCH = 2_000;

export class MemberLiveness {
  private readonly held = new Map<string, HeldSession>();
  private readonly touched = new Set<string>();
  private readonly acks = new Map<string, number>();
  /** seq -> when it was sent and the sessions it named. */
  private readonly unacknowledged = new Map<number, { readonly sentAt: number; readonly sessions: readonly string[] }>();
  private nextSeq = 1;
  private fullDue = false;
  private stopTimer: (() => void) | null = null;
  readonly epoch: number;

  constructor(private readonly opts: MemberLivenessOptions) {
    this.epoch = opts.epoch ?? randomInt(2 ** 48 - 1);
  }

  start(): void {
    this.stopTimer ??= this.opts.clock.every(this.opts.intervalMs, () => this.flush());
  }

  stop(): void {
    this.stopTimer?.();
    this.stopTimer = null;
  }

  /**
   * A session's connection is established here. `confirmedAt`: when this member sent the
   * forward of its openSession or attachSession (no leader applied it earlier, and the one
   * that did started the session's clock at its full timeout then).
   */
  hold(session: string, timeoutMs: number, confirmedAt: number): void {
    this.held.set(session, { timeoutMs, confirmedAt, lastTouchAt: Number.NEGATIVE_INFINITY });
  }

  /** The connection closed or moved: nothing more is said for the session. */
  release(session: string): void {
    this.held.delete(session);
    this.touched.delete(session);
    this.acks.delete(session);
  }

  /** A frame arrived on the session's connection. */
  touch(session: string): void {
    const held = this.held.get(session);
    if (held === undefined) return;
    held.lastTouchAt = this.opts.clock.now();
    this.touched.add(session);
  }

  /** The client acknowledged notifications up to `index`. */
  ack(session: string, index: number): void {
    if (!this.held.has(session)) return;
    this.acks.set(session, Math.max(index, this.acks.get(session) ?? 0));
  }

  /** Another leader is known: it hears of every session held here at once, in a full batch. */
  leaderChanged(): void {
    this.fullDue = true;
    this.flush();
  }

  /** Sends the batches due now, if there is anything to say (the interval's timer calls this). */
  flush(): void {
    for (const batch of this.takeBatches()) this.opts.send(batch);
  }

  /** The leader acknowledged batch `ack.seq` after proving it led: its sessions, but the ignored, are confirmed as of its sending. */
  onLiveAck(ack: LiveAck): void {
    if (ack.epoch !== this.epoch) return; // an answer to a batch of an earlier process, with the same number
    const batch = this.unacknowledged.get(ack.seq);
    if (batch === undefined) return;
    this.unacknowledged.delete(ack.seq);
    const ignored = new Set(ack.ignored);
    for (const session of batch.sessions) {
      const held = this.held.get(session);
      if (held !== undefined && !ignored.has(session)) held.confirmedAt = Math.max(held.confirmedAt, batch.sentAt);
    }
  }

  /**
   * Sessions whose connections must close with 4009: the client sent a frame since its last
   * confirmation, and that confirmation is more than half its timeout old. A session whose
   * client is silent is left alone: if it runs out, only a leader's committed expiry ends it.
   */
  sessionsToMove(): string[] {
    const now = this.opts.clock.now();
    const out: string[] = [];
    for (const [session, held] of this.held) {
      if (held.lastTouchAt > held.confirmedAt && now - held.confirmedAt > held.timeoutMs / 2) out.push(session);
    }
    return out;
  }

  /** When `session` was last confirmed (undefined when not held here). */
  confirmedAt(session: string): number | undefined {
    return this.held.get(session)?.confirmedAt;
  }

  get size(): number {
    return this.held.size;
  }

  private takeBatches(): LiveBatch[] {
    const full = this.fullDue;
    if (!full && this.touched.size === 0 && this.acks.size === 0) return [];
    const sessions = full ? [...this.held.keys()] : [...this.touched];
    const acks = [...this.acks];
    this.fullDue = false;
    this.touched.clear();
    this.acks.clear();
    const sentAt = this.opts.clock.now();
    const term = this.opts.term();
    const parts = Math.max(1, Math.ceil(sessions.length / MAX_SESSIONS_PER_BATCH), Math.ceil(acks.length / MAX_SESSIONS_PER_BATCH));
    const batches: LiveBatch[] = [];
    for (let part = 0; part < parts; part++) {
      const named = sessions.slice(part * MAX_SESSIONS_PER_BATCH, (part + 1) * MAX_SESSIONS_PER_BATCH);
      const acked = acks.slice(part * MAX_SESSIONS_PER_BATCH, (part + 1) * MAX_SESSIONS_PER_BATCH);
      const batch: LiveBatch = { epoch: this.epoch, seq: this.nextSeq++, term, full, touched: named, acks: acked, held: this.held.size };
      this.unacknowledged.set(batch.seq, { sentAt, sessions: named });
      batches.push(batch);
    }
    for (const oldest of this.unacknowledged.keys()) {
      if (this.unacknowledged.size <= MAX_UNACKNOWLEDGED_BATCHES) break;
      this.unacknowledged.delete(oldest);
    }
    return batches;
  }
}
