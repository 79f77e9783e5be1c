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
    return (this.flagFeed ??= new FlagFeed(this.appliedIndex()));
  }

  /** The lifecycle events feed, from the entry applied when first asked for. */
  get lifecycle(): FlagFeed<LifecycleEvent> {
    return (this.lifecycleFeed ??= new FlagFeed<LifecycleEvent>(this.appliedIndex(), LIFECYCLE_EVENTS_KEPT));
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
