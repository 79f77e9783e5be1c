// What the journal keeps on one member, beside the replicated state: the claims
// waiting there, acknowledgements held for their entries, the flag and lifecycle
// feeds, the leader duties' entries in flight, and what it applied. One object per
// member, so two members in one process (the tests) never share any of it.
import { FlagFeed } from './flag-feed.js';
import type { HeldAcks } from './held-acks.js';
import { LIFECYCLE_EVENTS_KEPT, type LifecycleEvent } from './lifecycle.js';
import type { JournalWaiters } from './waiters.js';

/** What this member applied, per journal (every member applies every entry, so any member's counters tell). */
export interface Applied {
  added: number;
  claimed: number;
  done: number;
  released: number;
  timeouts: number;
  flagged: number;
  expired: number;
}

export class JournalMember {
  /** Entries the duties proposed and that are not applied yet, by duty key: one at a time each. */
  readonly dutiesInFlight = new Set<string>();
  readonly applied = new Map<string, Applied>();
  private flagFeed: FlagFeed | null = null;
  private lifecycleFeed: FlagFeed<LifecycleEvent> | null = null;

  /** `appliedIndex`: the index of the newest entry applied on the member, where a feed starts. */
  constructor(
    readonly waiters: JournalWaiters,
    readonly held: HeldAcks,
    private readonly appliedIndex: () => number,
  ) {}

  /** The flag events feed, from the entry applied when first asked for. */
  get flags(): FlagFeed {
    return (this.flagFeed ??= this.closedFeed(new FlagFeed(this.appliedIndex())));
  }

  /** The lifecycle events feed, from the entry applied when first asked for. */
  get lifecycle(): FlagFeed<LifecycleEvent> {
    return (this.lifecycleFeed ??= this.closedFeed(new FlagFeed<LifecycleEvent>(this.appliedIndex(), LIFECYCLE_EVENTS_KEPT)));
  }

  private isClosed = false;

  /** A feed made after close is closed too: nothing waits on a closed member. */
  private closedFeed<F extends { close(): void }>(feed: F): F {
    if (this.isClosed) feed.close();
    return feed;
  }

  /** Whether the member closed (close): what waits is answered `err`, and nothing waits after. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * The member is closing: waiting claims and feed watchers are woken at once (server.ts answers
   * them with an error that sends their clients elsewhere), held acknowledgements are refused
   * with `err`, and every timer held for them goes. Safe to call twice.
   */
  close(err: unknown): void {
    this.isClosed = true;
    this.waiters.close();
    this.held.close(err);
    this.flagFeed?.close();
    this.lifecycleFeed?.close();
  }

  /** What the member holds that waits (each with a timer): for tests that a closed member holds nothing. */
  holding(): { readonly claims: number; readonly acks: number; readonly watchers: number; readonly timers: number } {
    const w = this.waiters.holding();
    const h = this.held.holding();
    const watchers = (this.flagFeed?.watching ?? 0) + (this.lifecycleFeed?.watching ?? 0);
    return { claims: w.claims, acks: h.requests, watchers, timers: w.timers + h.timers + watchers };
  }

  /** The counters of `name`, made when first counted. */
  appliedTo(name: string): Applied {
    let c = this.applied.get(name);
    if (c === undefined) {
      c = { added: 0, claimed: 0, done: 0, released: 0, timeouts: 0, flagged: 0, expired: 0 };
      this.applied.set(name, c);
    }
    return c;
  }
}
