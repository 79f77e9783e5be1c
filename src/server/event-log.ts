// A bounded in-memory record of recent change events and who was watching when
// each happened. Every node keeps one, filled as it applies entries, so that a
// node that becomes leader can replay what a resuming session missed. Past the
// bound the oldest events are forgotten; a session that needs them gets a resync.

import type { ChangeEvent } from '../statemachine/types.js';

export interface RecordedEvent {
  readonly event: ChangeEvent;
  /** Sessions watching the event's list when it was applied. */
  readonly recipients: readonly string[];
}

export class EventLog {
  private events: RecordedEvent[] = [];
  private head = 0; // events before `head` are forgotten but not yet spliced out
  private cost = 0;
  /** Every event with index <= this has been forgotten (or was never recorded here). */
  private forgottenThrough: number;

  /** `capacity` bounds events plus recipient references, which is what costs memory. */
  constructor(
    private readonly capacity: number,
    startIndex: number,
  ) {
    this.forgottenThrough = startIndex;
  }

  /** Record the events of one applied entry (called in index order). */
  record(events: readonly RecordedEvent[]): void {
    if (events.length === 0) return;
    for (const e of events) {
      // Nobody watched it when it applied, so no replay can ever include it: keeping it would only cost memory.
      if (e.recipients.length === 0) continue;
      this.events.push(e);
      this.cost += 1 + e.recipients.length;
    }
    while (this.cost > this.capacity && this.head < this.events.length) {
      const dropped = this.events[this.head++]!;
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
