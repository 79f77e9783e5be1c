// The leader's memory of recent change events: bounded, and complete for every
// session it answers for (or it says it cannot be, and the session gets a resync).

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { EventLog, type RecordedEvent } from '../../src/server/node/event-log.js';
import { packValue } from '../../src/protocol/msgpack.js';
import { PackedValue } from '../../src/protocol/packed.js';

const event = (index: number, recipients: string[], path = '/a'): RecordedEvent => ({
  event: { index, type: 'push', path, item: { index, owner: null, data: `d${index}` } },
  recipients,
});

describe('EventLog', () => {
  it('replays the events a session watched after a given index, in order', () => {
    const log = new EventLog(100, 0);
    log.record([event(1, ['s1']), event(2, ['s2'])]);
    log.record([event(3, ['s1', 's2'])]);
    expect(log.eventsFor('s1', 0)!.map((e) => e.index)).toEqual([1, 3]);
    expect(log.eventsFor('s1', 1)!.map((e) => e.index)).toEqual([3]);
    expect(log.eventsFor('s2', 0)!.map((e) => e.index)).toEqual([2, 3]);
  });

  it('past its capacity forgets the oldest events and says so (null: resync)', () => {
    // Each event costs 1 plus its recipients: a capacity of 4 holds two of these.
    const log = new EventLog(4, 0);
    for (let i = 1; i <= 5; i++) log.record([event(i, ['s1'])]);
    expect(log.eventsFor('s1', 2)).toBeNull();
    expect(log.eventsFor('s1', 3)!.map((e) => e.index)).toEqual([4, 5]);
  });

  it('keeps no event that nobody watched: unwatched writes neither cost memory nor push out what a session needs', () => {
    const log = new EventLog(3, 0);
    for (let i = 1; i <= 1000; i++) log.record([event(i, [])]);
    log.record([event(1001, ['s1'])]);
    expect(log.eventsFor('s1', 0)!.map((e) => e.index)).toEqual([1001]);
    expect(log.eventsFor('s2', 0)).toEqual([]);
  });

  it('starts from the applied index it was opened at, and reset() forgets everything before a new start', () => {
    const log = new EventLog(10, 7);
    expect(log.eventsFor('s1', 6)).toBeNull();
    log.record([event(8, ['s1'])]);
    expect(log.eventsFor('s1', 7)!.map((e) => e.index)).toEqual([8]);
    log.reset(20);
    expect(log.eventsFor('s1', 7)).toBeNull();
    expect(log.eventsFor('s1', 20)).toEqual([]);
  });

  it('keeps the history of every change, watched or not, by path and prefix, within its byte bound', () => {
    // Each of these events is about 69 bytes on the wire (64 + path + data) and counts 272 plus twice
    // that in memory, about 410: 4,150 bytes hold 10.
    const log = new EventLog(1000, 0, 4150);
    for (let i = 1; i <= 6; i++) log.record([event(i, [], i % 2 === 0 ? '/a/b' : '/a')]);
    log.record([event(7, ['s1'], '/ab')]);
    expect(log.eventsOf('/a', false, 0, 7)!.map((e) => e.index)).toEqual([1, 3, 5]);
    expect(log.eventsOf('/a', true, 0, 7)!.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6]); // not /ab: another list
    expect(log.eventsOf('/', true, 2, 5)!.map((e) => e.index)).toEqual([3, 4, 5]);
    // A reply's room is judged by the events' wire size, not by what they cost in memory.
    expect(log.eventsOf('/a', true, 0, 6, 6 * 69)!.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(log.eventsOf('/a', true, 0, 6, 6 * 69 - 6)).toBeNull();
    for (let i = 8; i <= 20; i++) log.record([event(i, [])]);
    expect(log.eventsOf('/a', false, 0, 20)).toBeNull(); // forgotten: the caller re-reads
    expect(log.eventsOf('/a', false, 15, 20)!.map((e) => e.index)).toEqual([16, 17, 18, 19, 20]);
    // The resume log still holds what a session watched: the history's bound is its own.
    expect(log.eventsFor('s1', 0)!.map((e) => e.index)).toEqual([7]);
    log.reset(30);
    expect(log.eventsOf('/a', false, 20, 40)).toBeNull();
    expect(log.eventsOf('/a', false, 30, 40)).toEqual([]);
  });

  it('keeps an event whose encoded data is a view into a larger buffer with a copy of its own bytes, not the buffer', () => {
    const shared = Buffer.alloc(64 * 1024);
    const bytes = packValue({ n: 1 });
    bytes.copy(shared, 100);
    const view = shared.subarray(100, 100 + bytes.length);
    const log = new EventLog(100, 0);
    log.record([{ event: { index: 1, type: 'push', path: '/a', item: { index: 1, owner: null, data: new PackedValue({ n: 1 }, view) } }, recipients: [] }]);
    const [kept] = log.eventsOf('/a', false, 0, 1)!;
    const data = kept!.item.data as PackedValue;
    expect(data.value).toEqual({ n: 1 });
    expect(Buffer.compare(data.bytes, bytes)).toBe(0);
    expect(data.bytes.buffer).not.toBe(shared.buffer); // not the buffer it came in
  });

  it('lets go of an event as soon as it forgets it (the history and the resume log alike)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const log = new EventLog(4, 0, 4150); // each resume event costs 2, each history event about 410
    const first = new WeakRef(event(1, ['s1']));
    log.record([first.deref()!]);
    const unwatched = new WeakRef(event(2, []).event); // in the history only
    log.record([{ event: unwatched.deref()!, recipients: [] }]);
    for (let i = 3; i <= 12; i++) log.record([event(i, ['s1'])]);
    expect(log.eventsFor('s1', 10)!.map((e) => e.index)).toEqual([11, 12]);
    expect(log.eventsOf('/a', false, 2, 12)!.map((e) => e.index)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    await new Promise((resolve) => setImmediate(resolve)); // a WeakRef holds its target until the job that made it ends
    gc();
    expect(first.deref()).toBeUndefined();
    expect(unwatched.deref()).toBeUndefined();
  });
});

