// Notification bookkeeping for one session: drops the duplicates a server
// re-sends after a resume, fans events out to callbacks and async iterators,
// and computes the `ack` for pings: the highest index every consumer is done with.
//
// Duplicates: on one connection the server sends each event once, in index
// order. After `hello {session}` it re-sends everything above the last ack, so
// on a new connection an event at or below the highest index already received
// is a duplicate. Several events share an index when one entry changed several
// items, so at the boundary index each event is recognised by its key.
//
// Acks: a callback is done when it returns; an iterator's consumer is done with
// an event when it asks for the next one. Only whole frames are acked, because
// the server sends all events of one index in one frame (docs/protocol.md).
import type { ChangeEvent, Item, ResyncList, VeraError } from '../protocol/index.js';

/** A resync as the iterator yields it: replace your view of `path` with `items`, as of `index`. */
export interface ResyncEvent {
  readonly type: 'resync';
  readonly path: string;
  readonly index: number;
  readonly items: readonly Item[];
}

/** What client.events() yields. */
export type ClientEvent = ChangeEvent | ResyncEvent;

export interface NotificationSinks {
  readonly event: (event: ChangeEvent) => void;
  readonly resync: (lists: readonly ResyncList[]) => void;
}

interface Queued {
  readonly event: ClientEvent;
  /** The frame's index, set on the frame's last event only: consuming it completes the frame. */
  readonly completes: number | null;
}

const eventKey = (event: ChangeEvent): string => `${event.type}|${event.item.index}|${event.path}`;

export class Notifications {
  /** Highest event index received on any connection, and the keys of the events received at it. */
  private highest = 0;
  private seenAtHighest = new Set<string>();
  /** The same, frozen when the current connection began: what a resent event is compared with. */
  private boundary = 0;
  private boundarySeen: ReadonlySet<string> = new Set();
  /** Highest frame index fully handed to callbacks and iterator queues. */
  private delivered = 0;
  private readonly subscriptions = new Set<Subscription>();
  private ended: { error: VeraError | null } | null = null;
  /** The lists of a resync that spans frames, gathered until its last frame. */
  private resyncParts: ResyncList[] = [];

  constructor(private readonly sinks: NotificationSinks) {}

  /** Call when a connection (re)starts, before its hello: events from here on may be resends. */
  beginConnection(): void {
    this.resyncParts = []; // a resync cut short by the connection is sent again whole
    this.boundary = this.highest;
    this.boundarySeen = new Set(this.seenAtHighest);
  }

  onEvents(events: readonly ChangeEvent[]): void {
    if (this.ended !== null) return;
    const fresh = events.filter(
      (e) => e.index > this.boundary || (e.index === this.boundary && !this.boundarySeen.has(eventKey(e))),
    );
    if (fresh.length === 0) return;
    for (const event of fresh) {
      if (event.index > this.highest) {
        this.highest = event.index;
        this.seenAtHighest = new Set();
      }
      if (event.index === this.highest) this.seenAtHighest.add(eventKey(event));
    }
    const frameIndex = fresh[fresh.length - 1]!.index;
    for (const event of fresh) this.sinks.event(event);
    this.enqueue(fresh, frameIndex);
    this.delivered = Math.max(this.delivered, frameIndex);
  }

  /** `more`: the resync goes on in the next frame; nothing is applied (or acknowledged) before its last frame. */
  onResync(frameLists: readonly ResyncList[], more = false): void {
    if (this.ended !== null) return;
    for (const list of frameLists) {
      // A list continued from the previous frame: the same path again, its items going on in order.
      const last = this.resyncParts[this.resyncParts.length - 1];
      if (last !== undefined && last.path === list.path && last.index === list.index) {
        const items = last.items as Item[];
        for (const item of list.items) items.push(item);
      } else {
        this.resyncParts.push({ path: list.path, index: list.index, items: list.items.slice() });
      }
    }
    if (more) return;
    const lists = this.resyncParts;
    this.resyncParts = [];
    if (lists.length === 0) return;
    let frameIndex = 0;
    for (const list of lists) frameIndex = Math.max(frameIndex, list.index);
    if (frameIndex > this.highest) {
      this.highest = frameIndex;
      this.seenAtHighest = new Set();
    }
    this.sinks.resync(lists);
    this.enqueue(
      lists.map((l) => ({ type: 'resync', path: l.path, index: l.index, items: l.items })),
      frameIndex,
    );
    this.delivered = Math.max(this.delivered, frameIndex);
  }

  /** The index to acknowledge: every consumer has finished with every frame up to it. */
  ackIndex(): number {
    let ack = this.delivered;
    for (const subscription of this.subscriptions) ack = Math.min(ack, subscription.doneThrough(this.delivered));
    return ack;
  }

  /** A new async iterator over the events delivered from now on. */
  subscribe(): AsyncIterableIterator<ClientEvent> {
    const subscription = new Subscription(this.delivered, () => this.subscriptions.delete(subscription));
    if (this.ended !== null) subscription.end(this.ended.error);
    else this.subscriptions.add(subscription);
    return subscription;
  }

  /** No more notifications: iterators finish once drained, throwing `error` if one is given. */
  end(error: VeraError | null): void {
    if (this.ended !== null) return;
    this.ended = { error };
    for (const subscription of this.subscriptions) subscription.end(error);
  }

  private enqueue(events: readonly ClientEvent[], frameIndex: number): void {
    const queued = events.map((event, i) => ({ event, completes: i === events.length - 1 ? frameIndex : null }));
    for (const subscription of this.subscriptions) subscription.push(queued);
  }
}

class Subscription implements AsyncIterableIterator<ClientEvent> {
  private readonly queue: Queued[] = [];
  /** The event the consumer is working on: handed out by next(), done at the following next(). */
  private inHand: Queued | null = null;
  private released: number;
  private waiter: { resolve: (r: IteratorResult<ClientEvent>) => void; reject: (e: unknown) => void } | null = null;
  private ended: { error: VeraError | null } | null = null;

  constructor(
    startIndex: number,
    private readonly unsubscribe: () => void,
  ) {
    this.released = startIndex;
  }

  doneThrough(delivered: number): number {
    return this.inHand === null && this.queue.length === 0 ? delivered : this.released;
  }

  push(items: readonly Queued[]): void {
    if (this.ended !== null) return;
    for (const item of items) this.queue.push(item);
    this.wake();
  }

  end(error: VeraError | null): void {
    if (this.ended !== null) return;
    this.ended = { error };
    this.unsubscribe();
    this.wake();
  }

  next(): Promise<IteratorResult<ClientEvent>> {
    this.releaseInHand();
    if (this.waiter !== null) return Promise.reject(new Error('events(): next() called again before the previous call settled'));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.wake();
    });
  }

  return(): Promise<IteratorResult<ClientEvent>> {
    this.releaseInHand();
    this.queue.length = 0;
    this.end(null);
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<ClientEvent> {
    return this;
  }

  private releaseInHand(): void {
    if (this.inHand !== null && this.inHand.completes !== null) this.released = this.inHand.completes;
    this.inHand = null;
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter === null) return;
    const next = this.queue.shift();
    if (next !== undefined) {
      this.waiter = null;
      this.inHand = next;
      waiter.resolve({ done: false, value: next.event });
    } else if (this.ended !== null) {
      this.waiter = null;
      if (this.ended.error !== null) waiter.reject(this.ended.error);
      else waiter.resolve({ done: true, value: undefined });
    }
  }
}
