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

export class HeartbeatRounds {
  private next = 1;
  private confirmedRound = 0;
  /** The highest round each peer acknowledged: it heard that round, sent no earlier than any before it. */
  private readonly acked = new Map<NodeId, number>();

  /** Start a round; returns its number, to carry as the heartbeats' context. */
  start(): number {
    return this.next++;
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
   * `from` acknowledged a heartbeat of round `context`. Recomputes the latest round
   * that `voters` (this node counting for the latest round it started) acknowledged
   * to at least `quorum` of them; returns true when that moved forward.
   */
  acknowledge(context: string, from: NodeId, self: NodeId, voters: readonly NodeId[], quorum: number): boolean {
    const round = Number(context);
    if (!Number.isSafeInteger(round) || round < 1 || round >= this.next) return false; // not a round of ours
    if (round <= (this.acked.get(from) ?? 0)) return false;
    this.acked.set(from, round);
    return this.recompute(self, voters, quorum);
  }

  /** Recomputes the confirmed round for a (possibly new) configuration; true when it moved forward. */
  recompute(self: NodeId, voters: readonly NodeId[], quorum: number): boolean {
    const rounds = voters.map((id) => (id === self ? this.next - 1 : (this.acked.get(id) ?? 0))).sort((a, b) => b - a);
    const round = rounds[quorum - 1] ?? 0;
    if (round <= this.confirmedRound) return false;
    this.confirmedRound = round;
    return true;
  }

  /** Forget every round (a new term: rounds of another leadership prove nothing). */
  clear(): void {
    this.acked.clear();
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
