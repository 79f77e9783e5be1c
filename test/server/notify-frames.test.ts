// Notification fan-out encodes each distinct notify frame once per encoding and
// hands the same bytes to every watcher.

import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/server/node/event-log.js';
import { DEFAULT_NOTIFIER_LIMITS, Notifier, type NotifySink } from '../../src/server/front/notifier.js';
import { decodeServerFrame, NotifyFrames, type NotifyPayload } from '../../src/protocol/index.js';
import type { ChangeEvent } from '../../src/families/lists/item.js';

const push = (index: number, path = '/a'): ChangeEvent => ({ index, type: 'push', path, item: { index, owner: null, data: `v${index}` } });

describe('NotifyFrames', () => {
  it('encodes a payload once per encoding and key, and the bytes decode to the payload', () => {
    const frames = new NotifyFrames();
    const payload: NotifyPayload = { events: [push(5)] };
    const a = frames.encode('k', payload, 'msgpack');
    expect(frames.encode('k', payload, 'msgpack')).toBe(a);
    const json = frames.encode('k', payload, 'json');
    expect(typeof json).toBe('string');
    expect(frames.encode('k', payload, 'json')).toBe(json);
    expect(frames.encode('other', { events: [push(6)] }, 'msgpack')).not.toBe(a);
    for (const frame of [a, json]) expect(decodeServerFrame(frame, typeof frame !== 'string')).toMatchObject({ kind: 'notify', events: [push(5)] });
  });
});

describe('Notifier fan-out', () => {
  it('gives every watcher of a change the same frame bytes, and a watcher with other events its own', async () => {
    const sent: Array<{ session: string; frame: unknown }> = [];
    const sink = (session: string, encoding: 'msgpack' | 'json'): NotifySink => ({
      sendNotify: (payload, shared) => {
        expect(shared).toBeDefined();
        sent.push({ session, frame: shared!.frames.encode(shared!.key, payload, encoding) });
      },
      bufferedBytes: () => 0,
      closeSlow: () => undefined,
      room: async () => undefined,
    });
    const source = { watchesOf: () => [], readListPages: async () => undefined, children: async () => ({ children: [] }) };
    const notifier = new Notifier(source, new EventLog(1000, 0), DEFAULT_NOTIFIER_LIMITS, (err) => {
      throw err;
    });
    for (const s of ['s1', 's2', 's3']) notifier.attach(s, sink(s, 'msgpack'), 0);
    notifier.attach('j1', sink('j1', 'json'), 0);
    notifier.deliver([{ event: push(7), recipients: ['s1', 's2', 'j1'] }]);
    notifier.deliver([{ event: push(8, '/b'), recipients: ['s3'] }]);
    await new Promise<void>((resolve) => setImmediate(resolve)); // the notifier flushes once per turn
    const bySession = new Map(sent.map((x) => [x.session, x.frame]));
    expect([...bySession.keys()].sort()).toEqual(['j1', 's1', 's2', 's3']);
    expect(bySession.get('s2')).toBe(bySession.get('s1'));
    expect(bySession.get('s3')).not.toBe(bySession.get('s1'));
    expect(decodeServerFrame(bySession.get('s3') as Buffer, true)).toMatchObject({ kind: 'notify', events: [push(8, '/b')] });
    expect(decodeServerFrame(bySession.get('j1') as string, false)).toMatchObject({ kind: 'notify', events: [push(7)] });
    notifier.close();
  });
});
