// The leader's memory of recent change events: bounded, and complete for every
// session it answers for (or it says it cannot be, and the session gets a resync).

import { describe, expect, it } from 'vitest';
import { EventLog, type RecordedEvent } from '../../src/server/event-log.js';

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
});
