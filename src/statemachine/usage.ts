// What quotas are judged against: the ephemeral items (count and stored bytes)
// each session owns, and the length of each list. Counted from the db the first
// time apply asks (so opening a store with 10^6 items reads nothing extra) and
// kept up to date by apply from then on. A count is a pure function of the
// store's contents, so every member that applies the same entries reaches the
// same verdicts whether or not it had counted before.

import { clientDataRange, decodeClientDataKey, itemKey, itemRange } from '../keys/index.js';
import type { VeraDb } from './types.js';

export interface SessionUsage {
  items: number;
  bytes: number;
}

export class UsageCounts {
  private readonly sessions = new Map<string, SessionUsage>();
  private readonly lists = new Map<string, number>();

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

  /** How many items `path` holds, counting at most `atMost` of them (enough to judge a limit of that size). */
  async listLength(db: VeraDb, path: string, atMost: number): Promise<number> {
    const known = this.lists.get(path);
    if (known !== undefined) return known;
    let n = 0;
    for await (const _ of db.keys({ ...itemRange(path), limit: atMost })) n++;
    // A count cut off at the limit is not the length: keep only exact ones.
    if (n < atMost) this.lists.set(path, n);
    return n;
  }

  /** An item was written (after its batch); `owner` null for a persistent item. */
  added(owner: string | null, path: string, bytes: number): void {
    const list = this.lists.get(path);
    if (list !== undefined) this.lists.set(path, list + 1);
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
    if (list - count === 0) this.lists.delete(path);
    else this.lists.set(path, list - count);
  }

  /** The session is gone, and its items with it (their lists are updated with removedFromList). */
  forgetSession(session: string): void {
    this.sessions.delete(session);
  }
}
