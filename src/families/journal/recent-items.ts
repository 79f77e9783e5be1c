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
  /**
   * Derived once, when the record is written, and reused by the entries that change it next
   * (a claim, then a done): its key in the item bucket (hashing the item key was a twentieth
   * of every member's time) and its index entries (tx.ts).
   */
  readonly derived?: DerivedKeys;
}

export interface DerivedKeys {
  readonly itemKey: Buffer;
  readonly indexKeys: readonly Buffer[];
}

/** Records kept in memory, at most, and their bytes; a record larger than the last is never kept. */
export const MAX_RECENT_ITEMS = 65_536;
export const MAX_RECENT_BYTES = 32 * 1024 * 1024;
export const MAX_RECENT_RECORD_BYTES = 64 * 1024;

/**
 * One key's place: held in its journal's map, and in `order` once per write of it. A rewrite
 * changes it in place (no new object, no second hash lookup when the writer holds it already),
 * so the map is looked up once per read and the order of writes is kept by counting.
 */
interface Held {
  readonly name: string;
  readonly key: string;
  /** Let go (null) once no longer live: a dead place in `order` must not keep its record in memory. */
  written: RecentRecord | null;
  cost: number;
  /** Places of this key in `order` from `head` on; only the last of them stands for its latest write. */
  places: number;
  /** Still what its journal's map holds for its key (false once evicted or forgotten). */
  live: boolean;
}

/** What a plan read a record through (lookup), handed back to remember its next write without another lookup. */
export interface RecentHandle {
  readonly written: RecentRecord | null;
}

export class RecentItems {
  private readonly byJournal = new Map<string, Map<string, Held>>();
  /**
   * Every write in order, oldest first, from `head`: a key written again since holds a later
   * place too, and only its last place evicts it. Not the maps' own order: V8 leaves a
   * deleted entry's slot in place until the table is rebuilt, so taking the oldest of a map
   * by iterating it steps over every entry deleted before (quadratic).
   */
  private order: Array<Held | null> = [];
  private head = 0;
  private count = 0;
  private bytes = 0;

  /** The stored record of `key` in `name` if written lately: a record, null if deleted, undefined if not known here. */
  get(name: string, key: string): RecentRecord | null | undefined {
    return this.byJournal.get(name)?.get(key)?.written;
  }

  /** As get, as a handle for remember to write the key's next record through (undefined when not known here). */
  lookup(name: string, key: string): RecentHandle | undefined {
    return this.byJournal.get(name)?.get(key);
  }

  /** `handle`: from a lookup of the same name and key, when the writer made one (it may have been evicted since). */
  remember(name: string, key: string, written: RecentRecord | null, handle?: RecentHandle): void {
    let held = handle as Held | undefined;
    let records: Map<string, Held> | undefined;
    if (held === undefined || !held.live) {
      records = this.byJournal.get(name);
      if (records === undefined) {
        records = new Map();
        this.byJournal.set(name, records);
      }
      held = records.get(key);
    }
    if (written !== null && written.record.length > MAX_RECENT_RECORD_BYTES) {
      if (held !== undefined) {
        (records ?? this.byJournal.get(name)!).delete(key); // read from the db when wanted
        this.unheld(held);
      }
      return;
    }
    const bytes = cost(key, written);
    if (held === undefined) {
      held = { name, key, written, cost: bytes, places: 0, live: true };
      records!.set(key, held);
      this.count++;
    } else {
      this.bytes -= held.cost;
      held.written = written;
      held.cost = bytes;
    }
    held.places++;
    this.order.push(held);
    this.bytes += bytes;
    while (this.count > MAX_RECENT_ITEMS || this.bytes > MAX_RECENT_BYTES) this.evictOldest();
    // Places already taken (before head) and superseded ones are dropped once they outnumber the live keys.
    if (this.order.length > 2 * this.count + 1024) this.compact();
  }

  /** Forgets every record of `name` (a drop deletes its items without naming them); others stay. */
  forgetJournal(name: string): void {
    const records = this.byJournal.get(name);
    if (records === undefined) return;
    for (const held of records.values()) this.unheld(held);
    this.byJournal.delete(name); // their places in `order` are skipped (and dropped) as stale
  }

  clear(): void {
    for (const records of this.byJournal.values()) for (const held of records.values()) held.live = false; // handles still out are stale
    this.byJournal.clear(); // and with `order` gone, nothing holds a record
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
      const held = this.order[this.head] ?? null;
      this.order[this.head++] = null; // a place taken keeps nothing alive
      if (held === null || !held.live) continue; // forgotten
      if (--held.places > 0) continue; // written again since: a later place stands for it
      const records = this.byJournal.get(held.name)!;
      records.delete(held.key);
      if (records.size === 0) this.byJournal.delete(held.name);
      this.unheld(held);
      return;
    }
  }

  /** Keeps only each live key's last place, in order. */
  private compact(): void {
    const kept: Held[] = [];
    for (let i = this.head; i < this.order.length; i++) {
      const held = this.order[i];
      if (held === null || held === undefined || !held.live) continue;
      if (held.places > 1) held.places--; // a later place stands for it
      else kept.push(held);
    }
    this.order = kept;
    this.head = 0;
  }

  /** `held` leaves the count (its caller takes it out of its map). */
  private unheld(held: Held): void {
    held.live = false;
    held.written = null;
    held.places = 0;
    this.count--;
    this.bytes -= held.cost;
  }
}

function cost(key: string, written: RecentRecord | null): number {
  if (written === null) return key.length;
  let bytes = key.length + written.record.length;
  if (written.derived !== undefined) {
    bytes += written.derived.itemKey.length;
    for (const k of written.derived.indexKeys) bytes += k.length;
  }
  return bytes;
}
