// A bounded in-memory record of recent change events and who was watching when
// each happened. Every node keeps one, filled as it applies entries, so that a
// node that becomes leader can replay what a resuming session missed. Past the
// bound the oldest events are forgotten; a session that needs them gets a resync.
//
// Beside it, the recent history of every change, watched or not, for watches that
// start from a past index (History, bounded in bytes): kept apart so that a burst
// of writes nobody watches never pushes out what a resuming session needs.

import { packValue, PackedValue } from '../../protocol/index.js';
import type { ChangeEvent } from '../../families/lists/item.js';
import { storedSizeOf } from '../../statemachine/item-sizes.js';
import { ByteSlabs } from '../../statemachine/byte-slabs.js';

/** The bytes of history kept, at most, unless told otherwise. */
export const DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024;

export interface RecordedEvent {
  readonly event: ChangeEvent;
  /** Sessions watching the event's list when it was applied. */
  readonly recipients: readonly string[];
}

export class EventLog {
  /** Undefined before `head`: forgotten. */
  private events: Array<RecordedEvent | undefined> = [];
  private head = 0; // events before `head` are forgotten but not yet spliced out
  private cost = 0;
  /** Every event with index <= this has been forgotten (or was never recorded here). */
  private forgottenThrough: number;

  /** `capacity` bounds events plus recipient references, which is what costs memory. */
  /** Every recent change, watched or not (eventsOf). */
  private readonly history: History;
  /** Where kept events' encoded data is copied to (compactIn). */
  private readonly slabs = new ByteSlabs();

  constructor(
    private readonly capacity: number,
    startIndex: number,
    historyBytes = DEFAULT_HISTORY_BYTES,
  ) {
    this.forgottenThrough = startIndex;
    this.history = new History(historyBytes, startIndex);
  }

  /**
   * Every event of `path` (or, with `prefix`, of every list at or below it) with an
   * index in (`after`, `through`] that `visible` lets through, in order; null when
   * some may have been forgotten, or when they hold more than `maxBytes`.
   */
  eventsOf(path: string, prefix: boolean, after: number, through: number, maxBytes = Infinity, visible: (path: string) => boolean = () => true): ChangeEvent[] | null {
    return this.history.eventsOf(path, prefix, after, through, maxBytes, visible);
  }

  /** Record the events of one applied entry (called in index order). */
  record(events: readonly RecordedEvent[]): void {
    if (events.length === 0) return;
    for (const e of events) {
      // One compact copy for both: the history and the resume log hold the same event.
      const event = compactIn(this.slabs, e.event);
      this.history.record(event);
      // Nobody watched it when it applied, so no replay can ever include it: keeping it would only cost memory.
      if (e.recipients.length === 0) continue;
      this.events.push(event === e.event ? e : { event, recipients: e.recipients });
      this.cost += 1 + e.recipients.length;
    }
    while (this.cost > this.capacity && this.head < this.events.length) {
      const dropped = this.events[this.head]!;
      this.events[this.head++] = undefined; // forgotten now, not when the array is next cut
      this.cost -= 1 + dropped.recipients.length;
      this.forgottenThrough = Math.max(this.forgottenThrough, dropped.event.index);
    }
    // Keep the array from growing without bound behind the head.
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * Every event for `session` with index > `after`, in order; null when some of them
   * may have been forgotten (the caller must resync instead).
   */
  eventsFor(session: string, after: number): ChangeEvent[] | null {
    if (after < this.forgottenThrough) return null;
    const out: ChangeEvent[] = [];
    for (let i = this.firstAfter(after); i < this.events.length; i++) {
      const e = this.events[i]!;
      if (e.recipients.includes(session)) out.push(e.event);
    }
    return out;
  }

  /** Forget everything (e.g. the state machine was replaced by a snapshot). */
  reset(startIndex: number): void {
    this.history.reset(startIndex);
    this.events = [];
    this.head = 0;
    this.cost = 0;
    this.forgottenThrough = startIndex;
  }

  private firstAfter(after: number): number {
    let lo = this.head;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.events[mid]!.event.index <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** Every recent change event, oldest first, at most `maxBytes` of them (as near as eventBytes tells). */
class History {
  /** Undefined before `head`: forgotten. */
  private events: Array<ChangeEvent | undefined> = [];
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;
  private forgottenThrough: number;

  constructor(
    private readonly maxBytes: number,
    startIndex: number,
  ) {
    this.forgottenThrough = startIndex;
  }

  record(e: ChangeEvent): void {
    const size = wireBytes(e);
    this.events.push(e);
    this.sizes.push(size);
    this.bytes += memoryBytes(size);
    while (this.bytes > this.maxBytes && this.head < this.events.length) {
      this.bytes -= memoryBytes(this.sizes[this.head]!);
      this.forgottenThrough = Math.max(this.forgottenThrough, this.events[this.head]!.index);
      this.events[this.head++] = undefined; // forgotten now, not when the array is next cut (up to twice the bound later)
    }
    if (this.head > 1024 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }

  eventsOf(path: string, prefix: boolean, after: number, through: number, maxBytes: number, visible: (path: string) => boolean): ChangeEvent[] | null {
    if (after < this.forgottenThrough) return null;
    const base = path === '/' ? '/' : `${path}/`;
    const out: ChangeEvent[] = [];
    let bytes = 0;
    let lo = this.head;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.events[mid]!.index <= after) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.events.length; i++) {
      const e = this.events[i]!;
      if (e.index > through) break;
      if (!(e.path === path || (prefix && e.path.startsWith(base))) || !visible(e.path)) continue;
      bytes += this.sizes[i]!;
      if (bytes > maxBytes) return null; // stop collecting: the caller re-reads instead
      out.push(e);
    }
    return out;
  }

  reset(startIndex: number): void {
    this.events = [];
    this.sizes = [];
    this.head = 0;
    this.bytes = 0;
    this.forgottenThrough = startIndex;
  }
}

/**
 * The event with its item's encoded data copied out when it is a view into a larger buffer
 * (a leader's data was encoded into MessagePack's shared output buffer, next to other requests
 * and replies): held for minutes, such a view would hold the whole buffer with it. Copies go
 * into slabs of the history's own, which it forgets in the order it filled them.
 */
function compactIn(slabs: ByteSlabs, e: ChangeEvent): ChangeEvent {
  const data = e.item.data;
  if (!(data instanceof PackedValue) || data.bytes.byteLength === data.bytes.buffer.byteLength) return e;
  return { ...e, item: { ...e.item, data: new PackedValue(data.value, slabs.copy(data.bytes)) } };
}

/** An event's size on the wire, near enough: its item's stored bytes (as its plan recorded them), its path and some overhead. What a reply's size is judged by. */
function wireBytes(e: ChangeEvent): number {
  return 64 + e.path.length + (storedSizeOf(e.item) ?? measured(e.item.data));
}

/**
 * What an event of `wire` bytes holds in memory, near enough, so that the history's bound is
 * memory: a heap snapshot of a member holding 200,000 push events (75-byte data, 20-character
 * paths) showed about 615 bytes each (the event, its item, the data both decoded and encoded,
 * the path), where their wire size says 165.
 */
function memoryBytes(wire: number): number {
  return 272 + 2 * wire;
}

/** For an item no plan sized: its data, as MessagePack would hold it. */
function measured(data: unknown): number {
  if (data instanceof PackedValue) return data.bytes.length;
  if (data instanceof Uint8Array || typeof data === 'string') return data.length;
  return typeof data === 'object' && data !== null ? packValue(data).length : 9;
}
