// A leader's view of one follower's replication (after etcd-io/raft's progress
// tracker): probing for the match point one message at a time, then replicating
// optimistically within a bounded window of in-flight messages and bytes.

export type ReplicationState =
  | 'probe' // match point unknown: one append at a time until the follower accepts
  | 'replicate' // match point known: stream appends, bounded by the in-flight window
  | 'snapshot'; // follower needs a snapshot before appends can resume

interface InflightMessage {
  readonly lastIndex: number;
  readonly bytes: number;
}

export class Progress {
  match = 0;
  next: number;
  state: ReplicationState = 'probe';
  /** In probe state: an append is out and unanswered, so wait before sending another. */
  probeSent = false;
  /** Heard from since the last CheckQuorum round. */
  recentActive = false;
  /** In snapshot state: the tick the snapshot was requested at (it is retried if never acknowledged). */
  snapshotRequestedAt = 0;
  private readonly inflight: InflightMessage[] = [];
  private inflightBytes = 0;

  constructor(
    next: number,
    private readonly maxMessages: number,
    private readonly maxBytes: number,
  ) {
    this.next = next;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflight.length >= this.maxMessages || this.inflightBytes >= this.maxBytes;
      case 'snapshot':
        return true;
    }
  }

  becomeProbe(): void {
    this.state = 'probe';
    this.probeSent = false;
    this.clearInflight();
  }

  /** Stop appends until the follower has installed a snapshot and acknowledged it. */
  becomeSnapshot(now: number): void {
    this.state = 'snapshot';
    this.snapshotRequestedAt = now;
    this.clearInflight();
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.clearInflight();
  }

  /** Record an append carrying entries up to `lastIndex`. */
  sentEntries(lastIndex: number, bytes: number): void {
    if (this.state === 'replicate') {
      this.next = lastIndex + 1;
      this.inflight.push({ lastIndex, bytes });
      this.inflightBytes += bytes;
    } else {
      this.probeSent = true;
    }
  }

  /** The follower accepted everything up to `index`. Returns false for a stale acknowledgement. */
  acknowledge(index: number): boolean {
    this.freeUpTo(index);
    if (index <= this.match) return false;
    this.match = index;
    this.next = Math.max(this.next, index + 1);
    this.probeSent = false;
    return true;
  }

  /**
   * The follower rejected an append whose prevIndex was `rejected`; `hint` is the
   * highest index at which the logs may agree. Returns false if the rejection is stale.
   */
  rejected(rejected: number, hint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
    } else if (rejected !== this.next - 1) {
      return false;
    }
    this.next = Math.max(this.match + 1, Math.min(rejected, hint + 1));
    this.becomeProbe();
    return true;
  }

  /** A heartbeat answer proves the follower is alive: let one more message through so a lost append cannot stall it. */
  heardFrom(): void {
    this.recentActive = true;
    this.probeSent = false;
    if (this.state === 'replicate' && this.isPaused()) {
      const first = this.inflight.shift();
      if (first) this.inflightBytes -= first.bytes;
    }
  }

  private freeUpTo(index: number): void {
    while (this.inflight.length > 0 && this.inflight[0]!.lastIndex <= index) {
      this.inflightBytes -= this.inflight.shift()!.bytes;
    }
  }

  private clearInflight(): void {
    this.inflight.length = 0;
    this.inflightBytes = 0;
  }
}
