// Leader-side bookkeeping for ReadIndex reads (Raft thesis §6.4): a read waits
// until a heartbeat round sent after it was acknowledged by a majority, proving the
// leader was still the leader when the read arrived; then the commit index recorded
// at arrival is safe to read at. A later confirmed round confirms every earlier read.

import type { NodeId } from './types.js';

export interface PendingRead {
  /** Who asked: this node's own driver, or a follower forwarding a client's read. */
  readonly requester: NodeId;
  readonly context: string;
  /** The leader's commit index when the read arrived. */
  readonly index: number;
  /** The heartbeat round that will confirm it. */
  readonly round: number;
  readonly acks: Set<NodeId>;
}

export class ReadIndexQueue {
  private queue: PendingRead[] = [];
  private nextRound = 1;

  /** Queue a read; returns the round number to carry in the confirming heartbeats. */
  add(requester: NodeId, context: string, index: number, self: NodeId): string {
    const round = this.nextRound++;
    this.queue.push({ requester, context, index, round, acks: new Set([self]) });
    return String(round);
  }

  /**
   * A follower acknowledged the heartbeat of round `context`. Returns the reads now
   * confirmed (in arrival order), given how many acknowledgements make a quorum.
   */
  acknowledge(context: string, from: NodeId, isQuorum: (acks: ReadonlySet<NodeId>) => boolean): PendingRead[] {
    const round = Number(context);
    const at = this.queue.findIndex((r) => r.round === round);
    if (at < 0) return [];
    const read = this.queue[at]!;
    read.acks.add(from);
    if (!isQuorum(read.acks)) return [];
    return this.queue.splice(0, at + 1);
  }

  /** Drop every pending read (leadership lost); their requesters time out and retry. */
  clear(): void {
    this.queue = [];
  }

  get size(): number {
    return this.queue.length;
  }
}
