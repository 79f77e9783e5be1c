// What quotas are judged against: the ephemeral items (count and stored bytes)
// each session owns, and the length of each list. Counted from the db at load
// (start and snapshot install) and kept up to date by apply from then on, so
// judging a push reads nothing: no iterator and no thread-pool trip on the write
// path, and a push never has to be written alone to see the db (issue 32: a
// list per put made every put count its list, alone, 4x slower). A count is a
// pure function of the store's contents, so every member reaches the same
// verdicts.

import { bucketRange } from '../../keys/index.js';
import { ListsBucket, decodeClientDataKey, itemKey } from './keys.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import type { VeraDb } from '../../statemachine/types.js';

export interface SessionUsage {
  items: number;
  bytes: number;
}

const NONE: Readonly<SessionUsage> = Object.freeze({ items: 0, bytes: 0 });

/** Reverse entries whose items are read with one getMany (one thread-pool trip) at load. */
const LOAD_CHUNK = 1_000;

export class UsageCounts {
  private readonly sessions = new Map<string, SessionUsage>();
  /** Every non-empty list's length. */
  private readonly lists: Map<string, number>;

  private constructor(lists: Map<string, number>) {
    this.lists = lists;
  }

  /** Nothing stored yet (a new store). */
  static empty(): UsageCounts {
    return new UsageCounts(new Map());
  }

  /**
   * The counts of the db as of `snapshot`: `listLengths` (every non-empty list's
   * length, counted by the caller's walk of the item bucket) and every session's
   * ephemeral items, from the reverse index and its items' stored sizes.
   */
  static async load(db: VeraDb, snapshot: DbSnapshot, listLengths: Map<string, number>): Promise<UsageCounts> {
    const counts = new UsageCounts(listLengths);
    let refs: Array<{ session: string; key: Buffer }> = [];
    const flush = async (): Promise<void> => {
      const values = await db.getMany(refs.map((r) => r.key), { snapshot });
      for (let i = 0; i < refs.length; i++) {
        const value = values[i];
        if (value === undefined) continue; // a dangling reverse entry owns nothing
        counts.add(refs[i]!.session, value.byteLength);
      }
      refs = [];
    };
    for await (const key of db.keys({ ...bucketRange(ListsBucket.clientData), snapshot })) {
      const ref = decodeClientDataKey(key);
      refs.push({ session: ref.session, key: itemKey(ref.path, ref.index) });
      if (refs.length >= LOAD_CHUNK) await flush();
    }
    if (refs.length > 0) await flush();
    return counts;
  }

  /** The session's owned ephemeral items and their stored bytes. */
  ofSession(session: string): Readonly<SessionUsage> {
    return this.sessions.get(session) ?? NONE;
  }

  /** How many items `path` holds. */
  listLength(path: string): number {
    return this.lists.get(path) ?? 0;
  }

  /** An item was written (after its batch); `owner` null for a persistent item. */
  added(owner: string | null, path: string, bytes: number): void {
    this.lists.set(path, (this.lists.get(path) ?? 0) + 1);
    if (owner !== null) this.add(owner, bytes);
  }

  /** An item was deleted (after its batch). */
  removed(owner: string | null, path: string, bytes: number): void {
    this.removedFromList(path, 1);
    if (owner === null) return;
    const usage = this.sessions.get(owner);
    if (usage === undefined) return;
    usage.items--;
    usage.bytes -= bytes;
    if (usage.items <= 0) this.sessions.delete(owner);
  }

  removedFromList(path: string, count: number): void {
    const n = (this.lists.get(path) ?? 0) - count;
    if (n > 0) this.lists.set(path, n);
    else this.lists.delete(path);
  }

  /** `count` persistent items came back to `path` (a hibernated unit's thaw). */
  addedToList(path: string, count: number): void {
    if (count > 0) this.lists.set(path, (this.lists.get(path) ?? 0) + count);
  }

  /** The session is gone, and its items with it (their lists are updated with removedFromList). */
  forgetSession(session: string): void {
    this.sessions.delete(session);
  }

  private add(owner: string, bytes: number): void {
    const usage = this.sessions.get(owner);
    if (usage === undefined) this.sessions.set(owner, { items: 1, bytes });
    else {
      usage.items++;
      usage.bytes += bytes;
    }
  }
}
