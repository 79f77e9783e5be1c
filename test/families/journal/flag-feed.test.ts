// The member-local feed of flag events: cursors are log indexes, pages never
// split one entry's events, and a cursor older than what the member holds is
// answered with missed (the watcher re-reads the flagged list).
import { describe, expect, it } from 'vitest';
import { FlagFeed } from '../../../src/families/journal/flag-feed.js';

describe('the flag feed', () => {
  it('gives each event once to a watcher that follows its cursor', () => {
    const feed = new FlagFeed(10);
    feed.applied(11);
    feed.applied(12, { name: 'jobs', keys: ['a', 'b'] });
    feed.applied(13, { name: 'other', keys: ['x'] });
    feed.applied(14, { name: 'jobs', keys: ['c'] });
    const first = feed.read('jobs', 10, 100);
    expect(first).toEqual({ events: [{ index: 12, key: 'a' }, { index: 12, key: 'b' }, { index: 14, key: 'c' }], next: 14, missed: false });
    expect(feed.read('jobs', first.next, 100)).toEqual({ events: [], next: 14, missed: false });
    feed.applied(15);
    expect(feed.read('jobs', 14, 100).next).toBe(15);
  });

  it('never splits one entry across pages, so the index stays a cursor', () => {
    const feed = new FlagFeed(0);
    feed.applied(5, { name: 'jobs', keys: ['a', 'b', 'c'] });
    feed.applied(6, { name: 'jobs', keys: ['d'] });
    const page = feed.read('jobs', 0, 2);
    expect(page.events.map((e) => e.key)).toEqual(['a', 'b', 'c']);
    expect(page.next).toBe(5);
    expect(feed.read('jobs', page.next, 2).events.map((e) => e.key)).toEqual(['d']);
  });

  it('says missed for a cursor before the feed began or before what it kept', () => {
    const feed = new FlagFeed(100, 3);
    expect(feed.read('jobs', 99, 10).missed).toBe(true);
    expect(feed.read('jobs', 100, 10).missed).toBe(false);
    for (let i = 101; i <= 105; i++) feed.applied(i, { name: 'jobs', keys: [`k${i}`] });
    const page = feed.read('jobs', 100, 10);
    expect(page.missed).toBe(true);
    expect(page.events.map((e) => e.index)).toEqual([103, 104, 105]);
    expect(feed.read('jobs', 102, 10).missed).toBe(false);
  });

  it('forgets a dropped journal: old cursors are missed, watchers are woken', async () => {
    const feed = new FlagFeed(0);
    feed.applied(1, { name: 'jobs', keys: ['a'] });
    const woken = feed.wait('jobs', performance.now() + 60_000);
    feed.dropped('jobs', 2);
    feed.applied(2);
    await woken;
    expect(feed.read('jobs', 1, 10)).toEqual({ events: [], next: 2, missed: true });
  });

  it('wakes a waiter at the next event of its journal, not of another', async () => {
    const feed = new FlagFeed(0);
    let woke = false;
    const waiting = feed.wait('jobs', performance.now() + 60_000).then(() => (woke = true));
    feed.applied(1, { name: 'other', keys: ['x'] });
    await Promise.resolve();
    expect(woke).toBe(false);
    feed.applied(2, { name: 'jobs', keys: ['a'] });
    await waiting;
    expect(woke).toBe(true);
  });
});
