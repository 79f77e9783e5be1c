// The journal family's in-memory index: each journal's definition (settings and
// counts, a few hundred bytes whatever the number of items), loaded from the
// definition bucket and changed only by plans' after-steps.
import { bucketRange, firstNotBelow } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { DEFAULT_MAX_JOURNALS } from './commands.js';
import { JournalBucket, limitsKey, processAtIn } from './keys.js';
import { decodeDefinition, decodeLimits, type JournalDefinition, type JournalLimits } from './records.js';
import { RecentItems } from './recent-items.js';
import { clockOf, decodeSchedule, type ScheduleClock } from './schedules.js';

export class JournalState {
  readonly journals = new Map<string, JournalDefinition>();
  limits: JournalLimits = { maxJournals: DEFAULT_MAX_JOURNALS };
  /** Each journal's schedules, by id, without their jobs' data (the leader's schedule duty reads these). */
  readonly schedules = new Map<string, Map<string, ScheduleClock>>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<JournalState> {
    const state = new JournalState();
    for await (const [key, value] of db.iterator({ ...bucketRange(JournalBucket.definition), snapshot })) {
      state.journals.set(key.subarray(3).toString('ascii'), decodeDefinition(value));
    }
    for await (const [key, value] of db.iterator({ ...bucketRange(JournalBucket.schedule), snapshot })) {
      const name = key.subarray(3, 3 + key[2]!).toString('ascii');
      state.setSchedule(name, clockOf(decodeSchedule(value)));
    }
    const limits = await db.get(limitsKey(), { snapshot });
    if (limits !== undefined) state.limits = decodeLimits(limits);
    return state;
  }

  // Per journal and priority, the front of the Waiting index held in memory: every
  // live index key below `end` (all of them when `end` is null), in order. A claim
  // takes from it without reading LevelDB: reading the index for every claim cost a
  // thread-pool round trip each (claims are planned one after another), and stepped
  // over the deleted keys of earlier claims, which LevelDB keeps until it compacts.
  // Kept exact by noteWaiting, which every write to the index passes through (a
  // journal tx's ops); built by a claim when missing, so after a restart or a
  // snapshot the first claim reads it. It never changes what a claim finds, only
  // where it looks.
  private readonly fronts = new Map<string, DueFront>();

  frontOf(name: string, priority: number): DueFront | undefined {
    return this.fronts.get(frontName(name, priority));
  }

  setFront(name: string, priority: number, front: DueFront): void {
    this.fronts.set(frontName(name, priority), front);
  }

  /** A Waiting index key of `name` was written (`put`) or deleted: the front follows. */
  noteWaiting(name: string, priority: number, key: Buffer, put: boolean): void {
    const front = this.fronts.get(frontName(name, priority));
    if (front === undefined || (front.end !== null && Buffer.compare(key, front.end) >= 0)) return;
    const keys = front.keys;
    // Claims take from the front's start: the common case, without a search (V8 shifts in place).
    if (!put && keys.length > 0 && keys[0]!.equals(key)) return void keys.shift();
    const lo = firstNotBelow(keys, key);
    const present = lo < keys.length && keys[lo]!.equals(key);
    if (put && !present) keys.splice(lo, 0, key);
    else if (!put && present) keys.splice(lo, 1);
  }

  forgetFronts(name: string): void {
    for (let p = 0; p <= 255; p++) this.fronts.delete(frontName(name, p));
  }

  /**
   * Nothing of `name` is due by `now`, as far as the fronts in memory tell: every
   * priority with Waiting items has a front whose first key is later. False when a
   * front is missing or does not say (a claim then asks the log, which knows).
   */
  nothingDue(name: string, now: number): boolean {
    const d = this.live(name);
    if (d === null) return false;
    for (const p of Object.keys(d.counts.byPriority)) {
      const front = this.fronts.get(frontName(name, Number(p)));
      if (front === undefined) return false;
      const first = front.keys[0];
      if (first === undefined ? front.end !== null : processAtIn(first, name) <= now) return false;
    }
    return true;
  }

  /**
   * The earliest process date of `name`'s Waiting items later than `after`, from the fronts:
   * null when none waits, undefined when a front is missing or ends before telling.
   */
  earliestAfter(name: string, after: number): number | null | undefined {
    const d = this.live(name);
    if (d === null) return null;
    let earliest: number | null = null;
    for (const p of Object.keys(d.counts.byPriority)) {
      const front = this.fronts.get(frontName(name, Number(p)));
      if (front === undefined) return undefined;
      const i = firstDatedAfter(front.keys, name, after);
      if (i === front.keys.length) {
        if (front.end !== null) return undefined;
        continue;
      }
      const date = processAtIn(front.keys[i]!, name);
      if (earliest === null || date < earliest) earliest = date;
    }
    return earliest;
  }

  /** `name`'s Waiting items due after `after` and by `by`, counted from the fronts up to `cap`; undefined when they do not tell. */
  dueBetween(name: string, after: number, by: number, cap: number): number | undefined {
    const d = this.live(name);
    if (d === null) return 0;
    let n = 0;
    for (const p of Object.keys(d.counts.byPriority)) {
      const front = this.fronts.get(frontName(name, Number(p)));
      if (front === undefined) return undefined;
      const to = firstDatedAfter(front.keys, name, by);
      if (to === front.keys.length && front.end !== null) return undefined;
      n += to - firstDatedAfter(front.keys, name, after);
      if (n >= cap) return cap;
    }
    return n;
  }

  /**
   * Until when claims of `name` would take nothing, as far as this member has applied: paused
   * (Infinity), or the rate limit's window is full (its end). Null when claims may take work.
   */
  claimsBlockedUntil(name: string, now: number): number | null {
    const d = this.live(name);
    if (d === null) return null;
    if (d.paused === true) return Infinity;
    const rate = d.settings.rateLimit;
    if (rate === undefined || d.window === undefined) return null;
    const start = now - (now % rate.windowMs);
    return d.window.start === start && d.window.claimed >= rate.max ? start + rate.windowMs : null;
  }

  setSchedule(name: string, s: ScheduleClock): void {
    let byId = this.schedules.get(name);
    if (byId === undefined) this.schedules.set(name, (byId = new Map()));
    byId.set(s.id, s);
  }

  deleteSchedule(name: string, id: string): void {
    const byId = this.schedules.get(name);
    byId?.delete(id);
    if (byId?.size === 0) this.schedules.delete(name);
  }

  /** Item records written lately (recent-items.ts). */
  readonly recent = new RecentItems();

  /** A journal that answers requests (defined, not being dropped). */
  live(name: string): JournalDefinition | null {
    const d = this.journals.get(name);
    return d === undefined || d.dropping ? null : d;
  }
}

/** The front of one priority's Waiting index: every live key below `end` (null: every one), in order. */
export interface DueFront {
  readonly keys: Buffer[];
  readonly end: Buffer | null;
}

/** The first of `keys` (one priority's Waiting index keys, in order) dated after `date`; keys.length when none is. */
function firstDatedAfter(keys: readonly Buffer[], name: string, date: number): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (processAtIn(keys[mid]!, name) <= date) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function frontName(name: string, priority: number): string {
  return `${priority}/${name}`;
}
