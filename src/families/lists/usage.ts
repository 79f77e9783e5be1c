// What quotas are judged against: the ephemeral items (count and stored bytes)
// each session owns, and the length of each list. Counted from the db the first
// time apply asks (so opening a store with 10^6 items reads nothing extra) and
// kept up to date by apply from then on. A count is a pure function of the
// store's contents, so every member that applies the same entries reaches the
// same verdicts whether or not it had counted before.

import { clientDataRange, decodeClientDataKey, itemKey, itemRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';

export interface SessionUsage {
  items: number;
  bytes: number;
}

/**
 * A list's length, or (when counting stopped at the limit it was asked about) a
 * lower bound of it: enough to refuse a push, and kept valid by the same
 * increments and decrements, so a full list is not recounted on every push.
 */
interface ListCount {
  n: number;
  exact: boolean;
}

export class UsageCounts {
  private readonly sessions = new Map<string, SessionUsage>();
  private readonly lists = new Map<string, ListCount>();

  /**
   * Whether a push to `path` by `owner` (null: a persistent item) can be judged
   * against a limit of `listItems` without reading the db.
   */
  knows(path: string, owner: string | null, listItems: number): boolean {
    const list = this.lists.get(path);
    return list !== undefined && (list.exact || list.n >= listItems) && (owner === null || this.sessions.has(owner));
  }

  /** The session's owned items and their stored bytes, counting them on first use. */
  async ofSession(db: VeraDb, session: string): Promise<Readonly<SessionUsage>> {
    const known = this.sessions.get(session);
    if (known !== undefined) return known;
    const usage: SessionUsage = { items: 0, bytes: 0 };
    for await (const key of db.keys(clientDataRange(session))) {
      const ref = decodeClientDataKey(key);
      const value = await db.get(itemKey(ref.path, ref.index));
      if (value === undefined) continue; // a dangling reverse entry owns nothing
      usage.items++;
      usage.bytes += value.byteLength;
    }
    this.sessions.set(session, usage);
    return usage;
  }

  /** How many items `path` holds, or at least `atMost` when it holds that many (enough to judge a limit of that size). */
  async listLength(db: VeraDb, path: string, atMost: number): Promise<number> {
    const known = this.lists.get(path);
    if (known !== undefined && (known.exact || known.n >= atMost)) return known.n;
    let n = 0;
    for await (const _ of db.keys({ ...itemRange(path), limit: atMost })) n++;
    this.lists.set(path, { n, exact: n < atMost });
    return n;
  }

  /** An item was written (after its batch); `owner` null for a persistent item. */
  added(owner: string | null, path: string, bytes: number): void {
    const list = this.lists.get(path);
    if (list !== undefined) list.n++;
    if (owner === null) return;
    const usage = this.sessions.get(owner);
    if (usage !== undefined) {
      usage.items++;
      usage.bytes += bytes;
    }
  }

  /** An item was deleted (after its batch). */
  removed(owner: string | null, path: string, bytes: number): void {
    this.removedFromList(path, 1);
    if (owner === null) return;
    const usage = this.sessions.get(owner);
    if (usage !== undefined) {
      usage.items--;
      usage.bytes -= bytes;
    }
  }

  removedFromList(path: string, count: number): void {
    const list = this.lists.get(path);
    if (list === undefined) return;
    list.n = Math.max(0, list.n - count);
    // An emptied list is forgotten: counting it again costs nothing.
    if (list.n === 0) this.lists.delete(path);
  }

  /** The session is gone, and its items with it (their lists are updated with removedFromList). */
  forgetSession(session: string): void {
    this.sessions.delete(session);
  }
}
