// What hibernation keeps on one member, beside the replicated state: the thaws,
// freezes and drains this member (as leader) has in flight, the counters it shows
// in its metrics, and what the idle detector knows of recent use. The member's
// plugin instance (server.ts) holds one, so two members in one process (the tests) never share any of it.

/** What a thaw gave: whether the unit was Frozen, and how many items came back. */
export interface Thawed {
  readonly thawed: boolean;
  readonly items: number;
}

/** Applied on this member since it started, and the latest thaw times (this member as leader). */
export interface Counters {
  freezes: number;
  thaws: number;
  thawMs: number[];
}

/** What the leader knows of recent use: when each unit was last touched, and how busy the clients are. */
export interface Activity {
  readonly lastUse: Map<string, number>;
  /** Where the walk over each root's children goes on (absent: at the start). */
  readonly cursor: Map<string, Buffer>;
  leadingSince: number;
  opsThisTick: number;
  running: boolean;
}

export class HibernateMember {
  /** Thaws in flight, by unit: later callers wait for the one in flight. */
  readonly thawing = new Map<string, Promise<Thawed>>();
  readonly counters: Counters = { freezes: 0, thaws: 0, thawMs: [] };
  /** Units this member (as leader) is freezing right now: the idle detector leaves their commits to whoever began them. */
  readonly freezesInFlight = new Set<string>();
  /** Units this member (as leader) is deleting the hot entries of right now. */
  readonly drainsInFlight = new Set<string>();
  private activityState: Activity | null = null;

  /** The idle detector's knowledge, made when first asked for (a unit never touched counts as used then). */
  get activity(): Activity {
    return (this.activityState ??= { lastUse: new Map(), cursor: new Map(), leadingSince: Date.now(), opsThisTick: 0, running: false });
  }
}
