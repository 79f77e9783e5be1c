// Lifecycle events (issue 35, item 12): added, claimed, progress, completed, failed, released,
// flagged and removed, named by the entry that made them, read after a cursor (waiting for one),
// filtered by key so a producer can await its own job; a member keeps the latest 2000 per
// journal and says `missed` past them. On a real server.
import { afterEach, describe, expect, it } from 'vitest';
import { stopServer } from '../../support/member.js';
import { refusal, startV9 } from './v9-server.js';
import type { LifecycleEventInfo } from '../../../src/families/journal/client.js';
import { FlagFeed } from '../../../src/families/journal/flag-feed.js';
import { lifecycleEvents, type LifecycleEvent } from '../../../src/families/journal/lifecycle.js';

afterEach(stopServer);

describe('lifecycle events', () => {
  it('tell each step of each job, in order, after a cursor; by key, a producer awaits its job and reads its result', async () => {
    const { journals, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000, maxTimeouts: 1 });
    const start = await journals.events('jobs');
    expect(start).toMatchObject({ events: [], missed: false });

    // A producer waits for its own job while a worker does it.
    const finished = new Promise<LifecycleEventInfo>((resolve) => {
      const watch = journals.watchEvents('jobs', (e) => {
        if (e.type === 'completed') {
          watch.stop();
          resolve(e);
        }
      }, { after: start.next, key: 'mine' });
    });
    await journals.add('jobs', [{ key: 'mine', data: 1 }, { key: 'other', data: 2, priority: 200 }]);
    const claim = await journals.claim('jobs');
    await journals.progress('jobs', 'mine', claim.lease, 50);
    await journals.done('jobs', 'mine', claim.lease, 'ok');
    const done = await finished;
    expect((await journals.result('jobs', 'mine')).result).toBe('ok');

    const c2 = await journals.claim('jobs');
    await journals.release('jobs', 'other', c2.lease, undefined, { failure: false });
    const c3 = await journals.claim('jobs');
    await journals.release('jobs', 'other', c3.lease);
    const c4 = await journals.claim('jobs');
    await journals.release('jobs', 'other', c4.lease); // the second failure: flagged
    await journals.add('jobs', [{ key: 'gone', data: 3 }]);
    await journals.remove('jobs', 'gone');

    const page = await journals.events('jobs', { after: start.next, limit: 1000 });
    expect(page.missed).toBe(false);
    expect(page.events.map((e) => `${e.type} ${e.key}`)).toEqual([
      'added mine', 'added other', 'claimed mine', 'progress mine', 'completed mine',
      'claimed other', 'released other', 'claimed other', 'failed other', 'claimed other', 'flagged other',
      'added gone', 'removed gone',
    ]);
    expect(page.events.find((e) => e.type === 'completed')).toEqual(done);
    // Indexes rise; one cursor later, only what came after.
    expect(page.events.map((e) => e.index)).toEqual([...page.events.map((e) => e.index)].sort((a, b) => a - b));
    const later = await journals.events('jobs', { after: done.index, key: 'other', types: ['flagged'] });
    expect(later.events.map((e) => e.type)).toEqual(['flagged']);
    // A waiting read is answered by the next event.
    const waiting = journals.events('jobs', { after: page.next, waitMs: 30_000 });
    await journals.add('jobs', [{ key: 'late', data: 4 }]);
    expect((await waiting).events).toMatchObject([{ type: 'added', key: 'late' }]);

    // Bad input: refused.
    expect((await refusal(journals.events('jobs', { types: ['exploded' as 'added'] }))).code).toBe('BAD_REQUEST');
    expect((await refusal(journals.events('jobs', { limit: 0 }))).code).toBe('BAD_REQUEST');
    expect((await refusal(journals.events('nope'))).code).toBe('NOT_FOUND');
    expect(await cli('events', 'jobs', '--after', String(page.next), '--job', 'late')).toMatchObject({ code: 0, out: expect.stringMatching(/^\d+ {2}added {2}late\nnext: --after \d+\n$/) });
  });

  it('a member keeps a bounded number per journal, and a cursor older than those says missed', () => {
    const feed = new FlagFeed<LifecycleEvent>(0, 3);
    for (let i = 1; i <= 5; i++) feed.record(i, 'j', lifecycleEvents({ op: 'add', journal: 'j', inserted: 1, merged: 0, deferred: 0, keys: [`k${i}`] }, i));
    expect(feed.read('j', 0, 10)).toMatchObject({ missed: true, events: [{ key: 'k3' }, { key: 'k4' }, { key: 'k5' }] });
    expect(feed.read('j', 2, 10)).toMatchObject({ missed: false, next: 5 });
  });
});
