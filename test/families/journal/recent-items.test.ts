// The journal's recent item records (recent-items.ts): plans read them instead of
// LevelDB, so they must answer what was written last and stay within their
// bounds whatever is written, in one journal or many.
import { describe, expect, it } from 'vitest';
import { MAX_RECENT_BYTES, MAX_RECENT_ITEMS, MAX_RECENT_RECORD_BYTES, RecentItems, type RecentRecord } from '../../../src/families/journal/recent-items.js';
import type { JournalItem } from '../../../src/families/journal/records.js';

function written(key: string, record: Buffer): RecentRecord {
  const item: JournalItem = { key, data: record.length, priority: 0, processAt: 0, insertedAt: 0, expiresAt: 0, status: 'waiting', startedAt: 0, timeouts: 0, failures: 0, lease: 0, next: null };
  return { record, item };
}

describe('recent item records', () => {
  it('answer what was written last, deletions included, and forget the oldest past their count', () => {
    const recent = new RecentItems();
    recent.remember('j', 'a', written('a', Buffer.from('one')));
    recent.remember('j', 'a', written('a', Buffer.from('two')));
    recent.remember('j', 'b', null);
    expect(recent.get('j', 'a')?.record).toEqual(Buffer.from('two'));
    expect(recent.get('j', 'a')?.item.data).toBe(3);
    expect(recent.get('j', 'b')).toBeNull();
    expect(recent.get('k', 'a')).toBeUndefined(); // another journal's key is another item
    for (let i = 0; i < MAX_RECENT_ITEMS; i++) recent.remember('j', `k${i}`, written(`k${i}`, Buffer.from([i & 0xff])));
    expect(recent.size.items).toBe(MAX_RECENT_ITEMS);
    expect(recent.get('j', 'a')).toBeUndefined(); // the oldest went first
    expect(recent.get('j', `k${MAX_RECENT_ITEMS - 1}`)?.record).toEqual(Buffer.from([(MAX_RECENT_ITEMS - 1) & 0xff]));
  });

  it('stay under their byte bound, never keep a record larger than their per-record bound, and are cleared by a drop', () => {
    const recent = new RecentItems();
    const big = Buffer.alloc(MAX_RECENT_RECORD_BYTES);
    for (let i = 0; i < (2 * MAX_RECENT_BYTES) / big.length; i++) recent.remember('j', `big${i}`, written(`big${i}`, big));
    expect(recent.size.bytes).toBeLessThanOrEqual(MAX_RECENT_BYTES);
    expect(recent.size.items).toBeGreaterThan(0);
    recent.remember('j', 'huge', written('huge', Buffer.alloc(MAX_RECENT_RECORD_BYTES + 1)));
    expect(recent.get('j', 'huge')).toBeUndefined(); // read from the db instead
    const last = `big${(2 * MAX_RECENT_BYTES) / big.length - 1}`;
    recent.remember('j', last, written(last, Buffer.alloc(MAX_RECENT_RECORD_BYTES + 1))); // rewritten past the bound: the old record must not linger
    expect(recent.get('j', last)).toBeUndefined();
    recent.clear();
    expect(recent.size).toEqual({ items: 0, bytes: 0 });
  });

  it('keep their bound across journals: one journal written alone pushes out the others, never its newest record', () => {
    const recent = new RecentItems();
    for (let i = 0; i < MAX_RECENT_ITEMS / 2; i++) recent.remember('old', `o${i}`, written(`o${i}`, Buffer.from('x')));
    for (let i = 0; i < MAX_RECENT_ITEMS; i++) recent.remember('new', `n${i}`, written(`n${i}`, Buffer.from('y')));
    expect(recent.size.items).toBe(MAX_RECENT_ITEMS);
    expect(recent.get('new', `n${MAX_RECENT_ITEMS - 1}`)).toBeDefined();
    // Byte-heavy records of one journal, then one more of another: the bound holds and the newest stays.
    const big = Buffer.alloc(MAX_RECENT_RECORD_BYTES);
    for (let i = 0; i < MAX_RECENT_BYTES / big.length; i++) recent.remember('heavy', `h${i}`, written(`h${i}`, big));
    recent.remember('light', 'l', written('l', big));
    expect(recent.size.bytes).toBeLessThanOrEqual(MAX_RECENT_BYTES);
    expect(recent.size.items).toBeLessThanOrEqual(MAX_RECENT_ITEMS);
    expect(recent.get('light', 'l')?.record.length).toBe(big.length);
    let counted = 0;
    for (const name of ['old', 'new', 'heavy', 'light']) for (let i = 0; i < MAX_RECENT_ITEMS; i++) if (recent.get(name, `${name[0]}${i}`) !== undefined) counted++;
    expect(counted + (recent.get('light', 'l') !== undefined ? 1 : 0)).toBe(recent.size.items);
  });

  it('keep their bookkeeping bounded when a few items are written over and over', () => {
    const recent = new RecentItems();
    for (let i = 0; i < 200_000; i++) recent.remember('j', `k${i % 10}`, written(`k${i % 10}`, Buffer.from([i & 0xff])));
    expect(recent.size.items).toBe(10);
    expect(recent.get('j', 'k9')?.record).toEqual(Buffer.from([199_999 & 0xff]));
    expect((recent as unknown as { order: unknown[] }).order.length).toBeLessThan(2000);
  });

  it('keep no record they let go: what their bookkeeping still reaches stays within their byte bound', () => {
    const recent = new RecentItems();
    // Reachable records: through the maps and through the order of writes, each counted once.
    const reachable = (): number => {
      const seen = new Set<Buffer>();
      const internals = recent as unknown as { byJournal: Map<string, Map<string, { written: RecentRecord | null }>>; order: Array<{ written: RecentRecord | null } | null> };
      for (const records of internals.byJournal.values()) for (const held of records.values()) if (held.written !== null) seen.add(held.written.record);
      for (const held of internals.order) if (held?.written) seen.add(held.written.record);
      let bytes = 0;
      for (const record of seen) bytes += record.length;
      return bytes;
    };
    // Many small records, then a few keys rewritten over and over with large ones (a claim,
    // a done and an add again of the same keys), some past the per-record bound.
    for (let i = 0; i < MAX_RECENT_ITEMS - 100; i++) recent.remember('j', `s${i}`, written(`s${i}`, Buffer.alloc(8)));
    for (let round = 0; round < 40; round++) {
      for (let k = 0; k < 100; k++) {
        const size = round % 10 === 9 ? MAX_RECENT_RECORD_BYTES + 1 : 60 * 1024;
        recent.remember('j', `big${k}`, written(`big${k}`, Buffer.alloc(size)));
      }
    }
    expect(recent.size.bytes).toBeLessThanOrEqual(MAX_RECENT_BYTES);
    expect(reachable()).toBeLessThanOrEqual(MAX_RECENT_BYTES);
    // Evicted ones are let go too, and a dropped journal's.
    for (let i = 0; i < MAX_RECENT_ITEMS; i++) recent.remember('k', `n${i}`, written(`n${i}`, Buffer.alloc(16)));
    recent.forgetJournal('k');
    expect(recent.size).toEqual({ items: 0, bytes: 0 });
    expect(reachable()).toBe(0);
  });

  it('keep their bookkeeping bounded when every key is new, and a dropped journal forgets only its own', () => {
    const recent = new RecentItems();
    for (let i = 0; i < 3 * MAX_RECENT_ITEMS; i++) recent.remember('j', `u${i}`, written(`u${i}`, Buffer.from('x')));
    expect(recent.size.items).toBe(MAX_RECENT_ITEMS);
    expect((recent as unknown as { order: unknown[] }).order.length).toBeLessThanOrEqual(2 * MAX_RECENT_ITEMS + 1025);
    recent.remember('other', 'o', written('o', Buffer.from('y')));
    recent.forgetJournal('j');
    expect(recent.size).toEqual({ items: 1, bytes: 'o'.length + 1 });
    expect(recent.get('j', `u${3 * MAX_RECENT_ITEMS - 1}`)).toBeUndefined();
    expect(recent.get('other', 'o')?.record).toEqual(Buffer.from('y'));
    // The forgotten journal's places in the order of writes are skipped, not taken for live records.
    for (let i = 0; i < MAX_RECENT_ITEMS; i++) recent.remember('k', `k${i}`, written(`k${i}`, Buffer.from('z')));
    expect(recent.size.items).toBe(MAX_RECENT_ITEMS);
    expect(recent.get('other', 'o')).toBeUndefined(); // the oldest live record went, not a newer one
    expect(recent.get('k', 'k0')).toBeDefined();
    expect(recent.get('k', `k${MAX_RECENT_ITEMS - 1}`)).toBeDefined();
  });
});

describe('recent item records written through a lookup handle', () => {
  it('rewrite the key in place: its earlier place in the order of writes does not evict it', () => {
    const recent = new RecentItems();
    recent.remember('j', 'a', written('a', Buffer.from('1')));
    recent.remember('j', 'b', written('b', Buffer.from('1')));
    recent.remember('j', 'a', written('a', Buffer.from('2')), recent.lookup('j', 'a'));
    expect(recent.size.items).toBe(2);
    // One more than the bound: the oldest write still standing is b's, not a's first.
    for (let i = 0; i < MAX_RECENT_ITEMS - 1; i++) recent.remember('j', `k${i}`, written(`k${i}`, Buffer.from('x')));
    expect(recent.get('j', 'b')).toBeUndefined();
    expect(recent.get('j', 'a')?.record).toEqual(Buffer.from('2'));
    expect(recent.size.items).toBe(MAX_RECENT_ITEMS);
  });

  it('answer the newest write when the handle went stale (evicted or forgotten) before the write', () => {
    const recent = new RecentItems();
    recent.remember('j', 'a', written('a', Buffer.from('1')));
    const stale = recent.lookup('j', 'a');
    recent.forgetJournal('j');
    recent.remember('j', 'a', written('a', Buffer.from('2')), stale);
    expect(recent.get('j', 'a')?.record).toEqual(Buffer.from('2'));
    expect(recent.size).toEqual({ items: 1, bytes: 2 });
    const again = recent.lookup('j', 'a');
    for (let i = 0; i < MAX_RECENT_ITEMS; i++) recent.remember('j', `k${i}`, written(`k${i}`, Buffer.from('x')));
    expect(recent.get('j', 'a')).toBeUndefined(); // evicted: the handle is stale
    recent.remember('j', 'a', null, again);
    expect(recent.get('j', 'a')).toBeNull();
    expect(recent.size.items).toBe(MAX_RECENT_ITEMS);
  });
});
