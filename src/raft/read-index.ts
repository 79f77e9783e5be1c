// Leader-side proof of leadership, from heartbeat rounds. Every heartbeat the
// leader broadcasts belongs to a numbered round; a round acknowledged by a
// quorum proves this node was still the leader when it sent the round (no
// quorum can have elected anyone else before its members heard it).
//
// Two things use that proof:
// - ReadIndex reads (Raft thesis §6.4): a read waits for a round started after
//   it arrived; then the commit index recorded at arrival is safe to read at.
// - The leader lease (thesis §6.4.1): the driver serves reads without a round
//   while a recently confirmed round's lease lasts (see RaftNode.leaseRound).

import type { NodeId } from './types.js';

export interface PendingRead {
  /** Who asked: this node's own driver, or a follower forwarding a client's read. */
  readonly requester: NodeId;
  readonly context: string;
  /** The leader's commit index when the read arrived. */
  readonly index: number;
  /** The first round that can confirm it (started after the read arrived). */
  readonly round: number;
}

/** Rounds not yet confirmed are kept up to this many; an older one is dropped (a later confirmation covers its reads). */
const MAX_OPEN_ROUNDS = 64;

export class HeartbeatRounds {
  private open: Array<{ readonly round: number; readonly acks: Set<NodeId> }> = [];
  private next = 1;
  private confirmedRound = 0;

  /** Start a round; returns its number, to carry as the heartbeats' context. */
  start(self: NodeId, isQuorum: (acks: ReadonlySet<NodeId>) => boolean): number {
    const round = this.next++;
    const acks = new Set([self]);
    if (isQuorum(acks)) {
      this.confirmedRound = round; // a lone voter is its own quorum
      return round;
    }
    this.open.push({ round, acks });
    if (this.open.length > MAX_OPEN_ROUNDS) this.open.shift();
    return round;
  }

  /** The round every later start() will exceed: rounds below it were sent before now. */
  get nextRound(): number {
    return this.next;
  }

  /** The latest round a quorum acknowledged (0: none). */
  get confirmed(): number {
    return this.confirmedRound;
  }

  /**
   * `from` acknowledged a heartbeat of round `context`. Returns true when that
   * makes a later round confirmed than before.
   */
  acknowledge(context: string, from: NodeId, isQuorum: (acks: ReadonlySet<NodeId>) => boolean): boolean {
    const round = Number(context);
    const at = this.open.findIndex((r) => r.round === round);
    if (at < 0) return false;
    const entry = this.open[at]!;
    entry.acks.add(from);
    if (!isQuorum(entry.acks)) return false;
    this.confirmedRound = round;
    this.open = this.open.slice(at + 1);
    return true;
  }

  /** Forget every round (a new term: rounds of another leadership prove nothing). */
  clear(): void {
    this.open = [];
    this.confirmedRound = 0;
  }
}

/** ReadIndex reads waiting for their round. */
export class ReadIndexQueue {
  private queue: PendingRead[] = [];

  add(read: PendingRead): void {
    this.queue.push(read);
  }

  /** The reads a confirmed round `round` releases, in arrival order. */
  confirmedUpTo(round: number): PendingRead[] {
    const at = this.queue.findIndex((r) => r.round > round);
    const done = at < 0 ? this.queue : this.queue.slice(0, at);
    this.queue = at < 0 ? [] : this.queue.slice(at);
    return done;
  }

  /** Drop every pending read (leadership lost); their requesters time out and retry. */
  clear(): void {
    this.queue = [];
  }

  get size(): number {
    return this.queue.length;
  }
}
