// Flag events (the seed's "raise a flag for snapwatcher"): each item flagged is
// one event, named by the log index of the entry that flagged it, so a watcher
// that keeps its cursor sees each flag exactly once on any member (every member
// applies the same entries at the same indexes). A member keeps the latest
// events of each journal in memory, applied since it started; a cursor older
// than what it kept is answered with `missed: true`, and the watcher re-reads
// the flagged list (as an etcd watch past a compaction re-lists).

export interface FlagEvent {
  /** The index of the entry that flagged the item. */
  readonly index: number;
  readonly key: string;
}

export interface FlagFeedPage<E extends FeedEvent = FlagEvent> {
  readonly events: readonly E[];
  /** The cursor to ask from next: the last event's index, or how far this member has applied. */
  readonly next: number;
  /** Events after the cursor may have happened that this member no longer holds (or never saw). */
  readonly missed: boolean;
}

/** Events kept per journal; older ones are forgotten (their cursor then reports missed). */
export const FLAG_EVENTS_KEPT = 1000;

/** What a feed holds: events named by the entry that made them, each about one key. */
export interface FeedEvent {
  readonly index: number;
  readonly key: string;
}

interface JournalFeed<E extends FeedEvent> {
  readonly events: E[];
  /** Events at or below this index may be missing here (forgotten, or applied before the feed began). */
  horizon: number;
  readonly watchers: Set<() => void>;
}

/** Also the lifecycle events' feed (lifecycle.ts), with other events and another bound. */
export class FlagFeed<E extends FeedEvent = FlagEvent> {
  private readonly journals = new Map<string, JournalFeed<E>>();
  /** The latest index this feed was told about: every flag up to it is recorded (or below a horizon). */
  private seen: number;
  private isClosed = false;

  /** `appliedBefore`: the index this member had applied when the feed began; earlier events are not here. */
  constructor(
    private readonly appliedBefore: number,
    private readonly kept = FLAG_EVENTS_KEPT,
  ) {
    this.seen = appliedBefore;
  }

  /** A cursor meaning "from here on": the latest index this feed was told about. */
  get now(): number {
    return this.seen;
  }

  private feed(name: string): JournalFeed<E> {
    let f = this.journals.get(name);
    if (f === undefined) {
      f = { events: [], horizon: this.appliedBefore, watchers: new Set() };
      this.journals.set(name, f);
    }
    return f;
  }

  /** The entry at `index` was applied (flagging `keys` of `name`, when given). Called for every entry, in log order. */
  applied(index: number, flagged?: { readonly name: string; readonly keys: readonly string[] }): void {
    if (flagged === undefined || flagged.keys.length === 0) return void (this.seen = Math.max(this.seen, index));
    this.record(index, flagged.name, flagged.keys.map((key) => ({ index, key }) as E));
  }

  /** The entry at `index` was applied, making `events` of `name` (none: it only moves the cursor on). In log order. */
  record(index: number, name: string | null, events: readonly E[]): void {
    this.seen = Math.max(this.seen, index);
    if (name === null || events.length === 0) return;
    const f = this.feed(name);
    for (const e of events) f.events.push(e);
    if (f.events.length > this.kept) {
      const forgotten = f.events.splice(0, f.events.length - this.kept);
      f.horizon = Math.max(f.horizon, forgotten[forgotten.length - 1]!.index);
    }
    this.wakeAll(f);
  }

  /** The journal was dropped at `index`: its events go, and its watchers are woken to find out. */
  dropped(name: string, index: number): void {
    const f = this.journals.get(name);
    if (f === undefined) return;
    this.journals.delete(name);
    this.wakeAll(f);
    this.feed(name).horizon = index;
  }

  /** Events of `name` after the cursor `after`, at most about `limit` (one entry's events are never split). */
  read(name: string, after: number, limit: number, only?: (e: E) => boolean): FlagFeedPage<E> {
    const f = this.journals.get(name);
    const events: E[] = [];
    for (const e of f?.events ?? []) {
      if (e.index <= after || (only !== undefined && !only(e))) continue;
      if (events.length >= limit && e.index !== events[events.length - 1]!.index) break;
      events.push(e);
    }
    return {
      events,
      next: events.length > 0 ? events[events.length - 1]!.index : Math.max(after, this.seen),
      missed: after < (f?.horizon ?? this.appliedBefore),
    };
  }

  /** Resolves at the next event of `name` (or its drop), or at `deadline` (performance.now() ms). */
  wait(name: string, deadline: number): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    const f = this.feed(name);
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        f.watchers.delete(wake);
        resolve();
      }, Math.max(0, deadline - performance.now()));
      timer.unref();
      f.watchers.add(wake);
    });
  }

  /** Watchers waiting: for tests of close (each holds a timer). */
  get watching(): number {
    let n = 0;
    for (const f of this.journals.values()) n += f.watchers.size;
    return n;
  }

  /** Whether the server closed: a woken watcher answers that (server.ts), and none waits after. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Wakes every watcher, clearing its timer (the server is stopping). */
  close(): void {
    this.isClosed = true;
    for (const f of this.journals.values()) this.wakeAll(f);
  }

  private wakeAll(f: JournalFeed<E>): void {
    for (const wake of f.watchers) wake();
    f.watchers.clear();
  }
}
