// Item records written lately, per journal, as the db holds them once the
// planned entries are written (null: deleted), with each record decoded: a plan
// reads them here instead of LevelDB and MessagePack (a done reads the item its
// claim wrote an entry or two before, a claim the items added lately). Set by
// plans' after-steps, which run in entry order as PendingReads sees the writes;
// bounded in records and bytes, the oldest written going first; dropped with the state when a write fails, and cleared by a drop, which
// deletes items without naming them. It never changes what a plan reads.
//
// Per journal, then per key: the key strings a plan holds come straight from the
// decoded command, so a lookup hashes one flat string (a name-and-key id built
// for every lookup cost more than the lookup).
import type { JournalItem } from './records.js';

/** A record as stored, and what it decodes to (never changed: items are replaced, not edited). */
export interface RecentRecord {
  readonly record: Buffer;
  readonly item: JournalItem;
}

/** Records kept in memory, at most, and their bytes; a record larger than the last is never kept. */
export const MAX_RECENT_ITEMS = 65_536;
export const MAX_RECENT_BYTES = 32 * 1024 * 1024;
export const MAX_RECENT_RECORD_BYTES = 64 * 1024;

interface Held {
  readonly written: RecentRecord | null;
  /** When it was remembered (its place in the order of writes). */
  readonly seq: number;
}

export class RecentItems {
  private readonly byJournal = new Map<string, Map<string, Held>>();
  /**
   * Every remembering in order, oldest first, from `head`; one whose key was remembered
   * again since (a later seq) is skipped when its turn comes. Not the maps' own order:
   * V8 leaves a deleted entry's slot in place until the table is rebuilt, so taking the
   * oldest of a map by iterating it steps over every entry deleted before (quadratic).
   */
  private order: Array<{ readonly name: string; readonly key: string; readonly seq: number }> = [];
  private head = 0;
  private seq = 0;
  private count = 0;
  private bytes = 0;

  /** The stored record of `key` in `name` if written lately: a record, null if deleted, undefined if not known here. */
  get(name: string, key: string): RecentRecord | null | undefined {
    return this.byJournal.get(name)?.get(key)?.written;
  }

  remember(name: string, key: string, written: RecentRecord | null): void {
    let records = this.byJournal.get(name);
    if (records === undefined) {
      records = new Map();
      this.byJournal.set(name, records);
    }
    this.forget(records, key);
    if (written !== null && written.record.length > MAX_RECENT_RECORD_BYTES) return; // read from the db when wanted
    const seq = ++this.seq;
    records.set(key, { written, seq });
    this.order.push({ name, key, seq });
    this.count++;
    this.bytes += cost(key, written);
    while (this.count > MAX_RECENT_ITEMS || this.bytes > MAX_RECENT_BYTES) this.evictOldest();
    // Places already taken (before head) and stale ones (keys remembered again, or forgotten)
    // are dropped once they outnumber the live ones.
    if (this.order.length > 2 * this.count + 1024) {
      this.order = this.order.slice(this.head).filter(({ name, key, seq }) => this.byJournal.get(name)?.get(key)?.seq === seq);
      this.head = 0;
    }
  }

  /** Forgets every record of `name` (a drop deletes its items without naming them); others stay. */
  forgetJournal(name: string): void {
    const records = this.byJournal.get(name);
    if (records === undefined) return;
    for (const [key, held] of records) {
      this.count--;
      this.bytes -= cost(key, held.written);
    }
    this.byJournal.delete(name); // their places in `order` are skipped (and dropped) as stale
  }

  clear(): void {
    this.byJournal.clear();
    this.order = [];
    this.head = 0;
    this.count = 0;
    this.bytes = 0;
  }

  /** Records held, and their bytes (with their keys). */
  get size(): { readonly items: number; readonly bytes: number } {
    return { items: this.count, bytes: this.bytes };
  }

  private evictOldest(): void {
    while (this.head < this.order.length) {
      const { name, key, seq } = this.order[this.head++]!;
      const records = this.byJournal.get(name);
      if (records?.get(key)?.seq !== seq) continue; // remembered again since, or forgotten
      this.forget(records, key);
      if (records.size === 0) this.byJournal.delete(name);
      return;
    }
  }

  private forget(records: Map<string, Held>, key: string): void {
    const held = records.get(key);
    if (held === undefined) return;
    records.delete(key);
    this.count--;
    this.bytes -= cost(key, held.written);
  }
}

function cost(key: string, written: RecentRecord | null): number {
  return key.length + (written?.record.length ?? 0);
}
