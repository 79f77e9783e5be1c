// The journal family's in-memory index: each journal's definition (settings and
// counts, a few hundred bytes whatever the number of items), loaded from the
// definition bucket and changed only by plans' after-steps.
import { bucketRange, firstNotBelow } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { DEFAULT_MAX_JOURNALS } from './commands.js';
import { JournalBucket, limitsKey, processAtIn } from './keys.js';
import { decodeDefinition, decodeLimits, type JournalDefinition, type JournalLimits } from './records.js';

export class JournalState {
  readonly journals = new Map<string, JournalDefinition>();
  limits: JournalLimits = { maxJournals: DEFAULT_MAX_JOURNALS };

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<JournalState> {
    const state = new JournalState();
    for await (const [key, value] of db.iterator({ ...bucketRange(JournalBucket.definition), snapshot })) {
      state.journals.set(key.subarray(3).toString('ascii'), decodeDefinition(value));
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

  // Item records written lately, as the db holds them once the planned entries are
  // written (null: deleted), so a plan reads them here instead of LevelDB: a done
  // reads the item its claim wrote an entry or two before, and a claim the items
  // added lately. Set by plans' after-steps (which run in entry order, as
  // PendingReads sees the writes), bounded in entries and bytes (oldest written
  // goes first), dropped with the state when a write fails, and cleared by a drop,
  // which deletes items without naming them. It never changes what a plan reads.
  private readonly recent = new Map<string, Buffer | null>();
  private recentBytes = 0;

  /** The stored record of `key` in `name` if written lately: a Buffer, null if deleted, undefined if not known here. */
  recentItem(name: string, key: string): Buffer | null | undefined {
    return this.recent.get(recentId(name, key));
  }

  rememberItem(name: string, key: string, record: Buffer | null): void {
    const id = recentId(name, key);
    this.forgetOne(id);
    if (record !== null && record.length > MAX_RECENT_RECORD_BYTES) return; // read from the db when wanted
    this.recent.set(id, record);
    this.recentBytes += id.length + (record?.length ?? 0);
    for (const oldest of this.recent.keys()) {
      if (this.recent.size <= MAX_RECENT_ITEMS && this.recentBytes <= MAX_RECENT_BYTES) break;
      this.forgetOne(oldest);
    }
  }

  forgetItems(): void {
    this.recent.clear();
    this.recentBytes = 0;
  }

  /** Records held, and their bytes (with their ids). */
  get recentSize(): { readonly items: number; readonly bytes: number } {
    return { items: this.recent.size, bytes: this.recentBytes };
  }

  private forgetOne(id: string): void {
    const record = this.recent.get(id);
    if (record === undefined) return;
    this.recent.delete(id);
    this.recentBytes -= id.length + (record?.length ?? 0);
  }

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

/** Records kept in memory, at most, and their bytes; a record larger than the last is never kept. */
export const MAX_RECENT_ITEMS = 65_536;
export const MAX_RECENT_BYTES = 32 * 1024 * 1024;
export const MAX_RECENT_RECORD_BYTES = 64 * 1024;

/** Names hold no NUL (wire.ts), so the first one ends the name. */
function recentId(name: string, key: string): string {
  return `${name}\u0000${key}`;
}

function frontName(name: string, priority: number): string {
  return `${priority}/${name}`;
}
