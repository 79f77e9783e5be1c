// A FIFO bounded by item count and by total bytes that makes room by dropping its
// OLDEST items. Used for messages waiting for a peer connection: Raft resends
// whatever matters, and the newest messages carry the freshest state, so losing
// the oldest is the right failure, and a dead peer can never grow our memory.

export interface QueueBounds {
  readonly maxItems: number;
  readonly maxBytes: number;
}

export class BoundedQueue<T> {
  private items: Array<{ item: T; bytes: number } | undefined> = [];
  /** Index of the oldest live item; slots before it are dead and get compacted away. */
  private head = 0;
  private totalBytes = 0;

  constructor(private readonly bounds: QueueBounds) {
    if (!Number.isSafeInteger(bounds.maxItems) || bounds.maxItems < 1) throw new RangeError('maxItems must be a positive integer');
    if (!Number.isSafeInteger(bounds.maxBytes) || bounds.maxBytes < 1) throw new RangeError('maxBytes must be a positive integer');
  }

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  /**
   * Appends `item` and drops the oldest items until both bounds hold again. The
   * newest item is always kept, even when it alone exceeds maxBytes, so a big
   * message is not silently lost in an empty queue. Returns the dropped items.
   */
  push(item: T, bytes: number): T[] {
    this.items.push({ item, bytes });
    this.totalBytes += bytes;
    const dropped: T[] = [];
    while (this.length > 1 && (this.length > this.bounds.maxItems || this.totalBytes > this.bounds.maxBytes)) {
      dropped.push(this.shift()!);
    }
    return dropped;
  }

  /** Whether an item of `bytes` can be pushed without dropping anything (for queues that must refuse rather than drop). */
  fits(bytes: number): boolean {
    return this.length + 1 <= this.bounds.maxItems && this.totalBytes + bytes <= this.bounds.maxBytes;
  }

  /** The oldest item without removing it. */
  peek(): { item: T; bytes: number } | undefined {
    return this.items[this.head];
  }

  /** Removes and returns the oldest item. */
  shift(): T | undefined {
    const slot = this.items[this.head];
    if (slot === undefined) return undefined;
    this.items[this.head] = undefined;
    this.head++;
    this.totalBytes -= slot.bytes;
    // Compact once the dead prefix dominates, keeping shift amortised O(1).
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return slot.item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
    this.totalBytes = 0;
  }
}
