// The simulated network: every message gets a random delivery time (so messages
// overtake each other), may be lost or duplicated, and is dropped at delivery
// time if its link is cut. Links are directed so one-way partitions are possible;
// cuts are counted so overlapping partitions heal independently.

import type { Message, NodeId } from '../../src/raft/types.js';
import type { SimRandom } from './random.js';

export interface NetworkConditions {
  /** Probability that a sent message is lost. */
  readonly lossRate: number;
  /** Probability that a sent message is delivered twice (each copy with its own delay). */
  readonly duplicateRate: number;
  /** Normal delay in steps, uniform in [minDelay, maxDelay]. */
  readonly minDelay: number;
  readonly maxDelay: number;
  /** Probability of a long delay, uniform up to slowMaxDelay: heavy reordering, stale messages. */
  readonly slowRate: number;
  readonly slowMaxDelay: number;
  /**
   * Keep each link first-in first-out, as a TCP connection does: a message never
   * overtakes an earlier one on the same link (delays still vary between links).
   */
  readonly fifo: boolean;
}

export const CALM_NETWORK: NetworkConditions = {
  lossRate: 0,
  duplicateRate: 0,
  minDelay: 1,
  maxDelay: 3,
  slowRate: 0,
  slowMaxDelay: 3,
  fifo: true,
};

export interface NetworkStats {
  sent: number;
  lost: number;
  duplicated: number;
  cutOff: number;
  delivered: number;
}

export class SimNetwork {
  private readonly slot = new Map<NodeId, number>();
  /** cuts[from * n + to]: how many active partitions block that direction. */
  private readonly cuts: Int32Array;
  /** lastDue[from * n + to]: the latest delivery time scheduled on that link (for FIFO links). */
  private readonly lastDue: Float64Array;
  /** Delivery time -> messages due then, in sending order. */
  private readonly due = new Map<number, Message[]>();
  private inFlightCount = 0;
  readonly stats: NetworkStats = { sent: 0, lost: 0, duplicated: 0, cutOff: 0, delivered: 0 };

  constructor(
    private readonly ids: readonly NodeId[],
    private readonly random: SimRandom,
    public conditions: NetworkConditions,
  ) {
    ids.forEach((id, i) => this.slot.set(id, i));
    this.cuts = new Int32Array(ids.length * ids.length);
    this.lastDue = new Float64Array(ids.length * ids.length);
  }

  get inFlight(): number {
    return this.inFlightCount;
  }

  send(message: Message, now: number): void {
    this.stats.sent++;
    const c = this.conditions;
    if (c.lossRate > 0 && this.random.chance(c.lossRate)) {
      this.stats.lost++;
      return;
    }
    this.enqueue(message, now + this.delay());
    if (c.duplicateRate > 0 && this.random.chance(c.duplicateRate)) {
      this.stats.duplicated++;
      this.enqueue(message, now + this.delay());
    }
  }

  /** Removes and returns the messages due at `now`. The caller checks `isCut` and delivers. */
  takeDue(now: number): Message[] | undefined {
    const batch = this.due.get(now);
    if (batch !== undefined) {
      this.due.delete(now);
      this.inFlightCount -= batch.length;
    }
    return batch;
  }

  isCut(from: NodeId, to: NodeId): boolean {
    return this.cuts[this.pair(from, to)]! > 0;
  }

  cut(from: NodeId, to: NodeId): void {
    this.cuts[this.pair(from, to)]!++;
  }

  restore(from: NodeId, to: NodeId): void {
    const at = this.pair(from, to);
    if (this.cuts[at]! <= 0) throw new Error(`restore(${from}, ${to}) without a matching cut`);
    this.cuts[at]!--;
  }

  private pair(from: NodeId, to: NodeId): number {
    const a = this.slot.get(from);
    const b = this.slot.get(to);
    if (a === undefined || b === undefined) throw new Error(`message between unknown nodes ${from} -> ${to}`);
    return a * this.ids.length + b;
  }

  private delay(): number {
    const c = this.conditions;
    if (c.slowRate > 0 && this.random.chance(c.slowRate)) return this.random.range(c.minDelay, c.slowMaxDelay);
    return this.random.range(c.minDelay, c.maxDelay);
  }

  private enqueue(message: Message, delayedTo: number): void {
    let at = delayedTo;
    if (this.conditions.fifo) {
      const link = this.pair(message.from, message.to);
      at = Math.max(at, this.lastDue[link]!);
      this.lastDue[link] = at;
    }
    let batch = this.due.get(at);
    if (batch === undefined) {
      batch = [];
      this.due.set(at, batch);
    }
    batch.push(message);
    this.inFlightCount++;
  }
}
