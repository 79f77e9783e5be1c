import { describe, expect, it } from 'vitest';
import { Backoff } from '../../src/client/backoff.js';
import { Notifications } from '../../src/client/notifications.js';
import { httpBaseUrl, leaderSessionUrl, ServerRing, sessionUrl } from '../../src/client/urls.js';
import { ListView } from '../../src/client/recipes/list-view.js';
import { VeraError, type ChangeEvent, type ResyncList } from '../../src/protocol/index.js';

const push = (index: number, path = '/a'): ChangeEvent => ({ index, type: 'push', path, item: { index, owner: 's1', data: index } });
const del = (index: number, itemIndex: number, path = '/a'): ChangeEvent => ({ index, type: 'delete', path, item: { index: itemIndex, owner: 's1', data: itemIndex } });

function tracker(): { n: Notifications; events: ChangeEvent[]; resyncs: (readonly ResyncList[])[] } {
  const events: ChangeEvent[] = [];
  const resyncs: (readonly ResyncList[])[] = [];
  const n = new Notifications({ event: (e) => events.push(e), resync: (l) => resyncs.push(l) });
  return { n, events, resyncs };
}

describe('Notifications', () => {
  it('delivers events to callbacks and acknowledges whole frames', () => {
    const { n, events } = tracker();
    expect(n.ackIndex()).toBe(0);
    n.onEvents([push(1)]);
    n.onEvents([del(2, 1), del(2, 5, '/b')]);
    expect(events.map((e) => e.index)).toEqual([1, 2, 2]);
    expect(n.ackIndex()).toBe(2);
  });

  it('drops what a resumed session re-sends, even at an index shared by several events', () => {
    const { n, events } = tracker();
    n.beginConnection();
    n.onEvents([push(1), push(2)]);
    // The connection died after the first of two events of entry 3.
    n.onEvents([del(3, 1)]);
    n.beginConnection();
    n.onEvents([push(1), push(2)]);
    n.onEvents([del(3, 1), del(3, 2)]);
    n.onEvents([push(4)]);
    expect(events.map((e) => `${e.index}:${e.type}:${e.item.index}`)).toEqual(['1:push:1', '2:push:2', '3:delete:1', '3:delete:2', '4:push:4']);
  });

  it('does not deduplicate within one connection (the server sends each event once per connection)', () => {
    const { n, events } = tracker();
    n.beginConnection();
    n.onEvents([push(1)]);
    n.onEvents([del(2, 1), del(2, 1, '/b')]);
    expect(events).toHaveLength(3);
  });

  it('holds the ack while an iterator consumer works on an event, and releases it on the next pull', async () => {
    const { n } = tracker();
    const it = n.subscribe();
    n.onEvents([push(1)]);
    n.onEvents([del(2, 1), del(2, 9, '/b')]);
    expect(n.ackIndex()).toBe(0); // nothing consumed yet
    expect((await it.next()).value).toMatchObject({ index: 1 });
    expect(n.ackIndex()).toBe(0); // event 1 is in hand
    expect((await it.next()).value).toMatchObject({ index: 2, path: '/a' });
    expect(n.ackIndex()).toBe(1); // frame 1 done, frame 2 half consumed
    expect((await it.next()).value).toMatchObject({ index: 2, path: '/b' });
    const waiting = it.next(); // done with everything
    expect(n.ackIndex()).toBe(2);
    await it.return!();
    await expect(waiting).resolves.toEqual({ done: true, value: undefined });
  });

  it('turns resyncs into iterator items and moves the ack past them', async () => {
    const { n, resyncs } = tracker();
    const it = n.subscribe();
    const lists = [{ path: '/a', index: 7, items: [] }, { path: '/b', index: 9, items: [{ index: 3, owner: null, data: 1 }] }];
    n.onResync(lists);
    expect(resyncs).toEqual([lists]);
    expect((await it.next()).value).toEqual({ type: 'resync', path: '/a', index: 7, items: [] });
    expect((await it.next()).value).toEqual({ type: 'resync', path: '/b', index: 9, items: lists[1]!.items });
    void it.next();
    expect(n.ackIndex()).toBe(9);
    // After a resync at 9, a resumed connection's events up to 9 are stale.
    n.beginConnection();
    n.onEvents([push(8)]);
    expect(n.ackIndex()).toBe(9);
  });

  it('ends iterators: drained then done on close, rejected with the error on expiry', async () => {
    const closed = tracker();
    const it = closed.n.subscribe();
    closed.n.onEvents([push(1)]);
    closed.n.end(null);
    expect((await it.next()).value).toMatchObject({ index: 1 });
    expect(await it.next()).toEqual({ done: true, value: undefined });

    const expired = tracker();
    const it2 = expired.n.subscribe();
    const pending = it2.next();
    expired.n.end(new VeraError('SESSION_EXPIRED', 'gone'));
    await expect(pending).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
    await expect(expired.n.subscribe().next()).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
  });
});

describe('server addresses', () => {
  it('normalises what users pass to the session endpoint URL', () => {
    expect(sessionUrl('ws://127.0.0.1:1919')).toBe('ws://127.0.0.1:1919/v1/connect');
    expect(sessionUrl('ws://127.0.0.1:1919/')).toBe('ws://127.0.0.1:1919/v1/connect');
    expect(sessionUrl('127.0.0.1:1919')).toBe('ws://127.0.0.1:1919/v1/connect');
    expect(sessionUrl('https://vera.example')).toBe('wss://vera.example/v1/connect');
    expect(sessionUrl('ws://h:1/custom/path')).toBe('ws://h:1/custom/path');
    expect(() => sessionUrl('ftp://h:1')).toThrow(/must use ws:\/\/ or wss:\/\//);
    expect(leaderSessionUrl('ws://10.0.0.2:1919')).toBe('ws://10.0.0.2:1919/v1/connect');
    expect(leaderSessionUrl('ws://10.0.0.2:1919/')).toBe('ws://10.0.0.2:1919/v1/connect');
    expect(leaderSessionUrl('ws://h:1/vera')).toBe('ws://h:1/vera/v1/connect');
    expect(leaderSessionUrl('ws://h:1/v1/connect/')).toBe('ws://h:1/v1/connect');
    // Normalised as the given addresses are, so one member is never two entries.
    expect(leaderSessionUrl('WS://Node1:1919')).toBe('ws://node1:1919/v1/connect');
    expect(leaderSessionUrl('ws://[0:0:0:0:0:0:0:1]:80')).toBe('ws://[::1]/v1/connect');
    expect(leaderSessionUrl('wss://h:443')).toBe('wss://h/v1/connect');
    expect(() => leaderSessionUrl('ws://')).toThrow(/invalid server address/);
    expect(httpBaseUrl('ws://127.0.0.1:1919')).toBe('http://127.0.0.1:1919');
    expect(httpBaseUrl('wss://h')).toBe('https://h');
  });

  it('rotates through known servers and prefers the last one that worked', () => {
    const ring = new ServerRing(['ws://a:1', 'ws://b:1'], () => 0);
    expect(ring.current()).toBe('ws://a:1/v1/connect');
    ring.advance();
    expect(ring.current()).toBe('ws://b:1/v1/connect');
    ring.advance();
    expect(ring.current()).toBe('ws://a:1/v1/connect');
    ring.prefer('ws://c:1/v1/connect');
    expect(ring.current()).toBe('ws://c:1/v1/connect');
    expect(ring.all()).toHaveLength(3);
    expect(() => new ServerRing([])).toThrow(/at least one server/);
  });
});

describe('Backoff', () => {
  it('grows exponentially with jitter up to the cap, never below a retryAfterMs hint', () => {
    const low = new Backoff({ initialMs: 10, maxMs: 100 }, () => 0);
    expect([1, 2, 3, 4, 5, 6].map(() => low.next())).toEqual([5, 10, 20, 40, 50, 50]);
    const high = new Backoff({ initialMs: 10, maxMs: 100 }, () => 1);
    expect([1, 2, 3, 4, 5].map(() => high.next())).toEqual([10, 20, 40, 80, 100]);
    expect(high.next(500)).toBe(500);
    high.reset();
    expect(high.next()).toBe(10);
  });
});

describe('ListView', () => {
  it('applies newer events of its own list and knows each item\'s predecessor', () => {
    const view = new ListView('/a', { index: 5, items: [{ index: 2, owner: 's1', data: 2 }, { index: 4, owner: 's2', data: 4 }] });
    expect(view.apply(push(4))).toBe(false); // already in the snapshot
    expect(view.apply(push(6, '/b'))).toBe(false); // another list
    expect(view.apply(push(7))).toBe(true);
    expect(view.predecessorOf(7)?.index).toBe(4);
    expect(view.apply(del(8, 4))).toBe(true);
    expect(view.predecessorOf(7)?.index).toBe(2);
    expect(view.predecessorOf(2)).toBeNull();
    expect(view.apply({ type: 'resync', path: '/a', index: 9, items: [] })).toBe(true);
    expect(view.items).toEqual([]);
    expect(view.index).toBe(9);
  });
});
