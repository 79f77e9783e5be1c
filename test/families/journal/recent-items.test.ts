// The journal state's recent item records (state.ts): plans read them instead of
// LevelDB, so they must stay within their bounds whatever is written.
import { describe, expect, it } from 'vitest';
import { JournalState, MAX_RECENT_BYTES, MAX_RECENT_ITEMS, MAX_RECENT_RECORD_BYTES } from '../../../src/families/journal/state.js';

describe('recent item records', () => {
  it('answer what was written last, deletions included, and forget the oldest past their count', () => {
    const state = new JournalState();
    state.rememberItem('j', 'a', Buffer.from('one'));
    state.rememberItem('j', 'a', Buffer.from('two'));
    state.rememberItem('j', 'b', null);
    expect(state.recentItem('j', 'a')).toEqual(Buffer.from('two'));
    expect(state.recentItem('j', 'b')).toBeNull();
    expect(state.recentItem('k', 'a')).toBeUndefined(); // another journal's key is another item
    for (let i = 0; i < MAX_RECENT_ITEMS; i++) state.rememberItem('j', `k${i}`, Buffer.from([i & 0xff]));
    expect(state.recentSize.items).toBe(MAX_RECENT_ITEMS);
    expect(state.recentItem('j', 'a')).toBeUndefined(); // the oldest went first
    expect(state.recentItem('j', `k${MAX_RECENT_ITEMS - 1}`)).toEqual(Buffer.from([(MAX_RECENT_ITEMS - 1) & 0xff]));
  });

  it('stay under their byte bound, never keep a record larger than their per-record bound, and are cleared by a drop', () => {
    const state = new JournalState();
    const big = Buffer.alloc(MAX_RECENT_RECORD_BYTES);
    for (let i = 0; i < (2 * MAX_RECENT_BYTES) / big.length; i++) state.rememberItem('j', `big${i}`, big);
    expect(state.recentSize.bytes).toBeLessThanOrEqual(MAX_RECENT_BYTES);
    expect(state.recentSize.items).toBeGreaterThan(0);
    state.rememberItem('j', 'huge', Buffer.alloc(MAX_RECENT_RECORD_BYTES + 1));
    expect(state.recentItem('j', 'huge')).toBeUndefined(); // read from the db instead
    state.rememberItem('j', 'big0', Buffer.alloc(MAX_RECENT_RECORD_BYTES + 1)); // rewritten past the bound: the old record must not linger
    expect(state.recentItem('j', 'big0')).toBeUndefined();
    state.forgetItems();
    expect(state.recentSize).toEqual({ items: 0, bytes: 0 });
  });
});
