// Pause, resume and drain (issue 35, item 13): a paused journal's claims take nothing (a claim
// that waits goes on waiting, and is answered once the journal is resumed), adds go on; a
// drain deletes every Waiting job and nothing else. On a real server.
import { afterEach, describe, expect, it } from 'vitest';
import { stopServer } from '../../support/member.js';
import { refusal, startV9 } from './v9-server.js';

afterEach(stopServer);

describe('pause, resume and drain', () => {
  it('a paused journal gives no work, takes adds, and answers a waiting claim once resumed', async () => {
    const { journals, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000 });
    await journals.add('jobs', [{ key: 'a', data: 1 }]);
    expect(await cli('pause', 'jobs')).toMatchObject({ code: 0, out: 'paused journal jobs\n' });
    expect(await journals.show('jobs')).toMatchObject({ paused: true, counts: { waiting: 1 } });
    expect(await journals.claim('jobs', { max: 10 })).toMatchObject({ items: [] });
    expect(await journals.add('jobs', [{ key: 'b', data: 2 }])).toMatchObject({ inserted: 1 });
    // A claim that waits is not answered while paused, even though work is added meanwhile.
    let answered = false;
    const asked = performance.now();
    const waiting = journals.claim('jobs', { max: 10, waitMs: 30_000 }).then((c) => ((answered = true), c));
    await journals.add('jobs', [{ key: 'c', data: 3 }]);
    expect(await journals.claim('jobs')).toMatchObject({ items: [] }); // a round trip after the add: still nothing
    expect(answered).toBe(false);
    expect(await cli('resume', 'jobs')).toMatchObject({ code: 0, out: 'resumed journal jobs\n' });
    const claim = await waiting;
    expect(performance.now() - asked).toBeLessThan(25_000);
    expect(claim.items.map((i) => i.key).sort()).toEqual(['a', 'b', 'c']);
    expect((await journals.show('jobs')).paused).toBe(false);
    expect((await refusal(journals.pause('nope'))).code).toBe('NOT_FOUND');
  });

  it('a drain deletes every waiting job, a thousand an entry, and leaves processing and flagged ones', async () => {
    const { journals, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000, maxTimeouts: 0 });
    await journals.add('jobs', [{ key: 'held', data: 0, priority: 0 }, { key: 'bad', data: 0, priority: 0 }]);
    const claim = await journals.claim('jobs', { max: 2 });
    await journals.release('jobs', 'bad', claim.lease); // flagged (maxTimeouts 0)
    for (let batch = 0; batch < 3; batch++) {
      await journals.add('jobs', Array.from({ length: 1000 }, (_, i) => ({ key: `w${batch}-${i}`, data: i, priority: i % 7, processAt: Date.now() + (i % 2) * 3_600_000 })));
    }
    expect(await journals.drain('jobs')).toEqual({ removed: 3000 });
    expect((await journals.show('jobs')).counts).toMatchObject({ waiting: 0, processing: 1, flagged: 1, byPriority: {} });
    expect(await journals.items('jobs', 'waiting')).toEqual({ items: [], next: null });
    await journals.done('jobs', 'held', claim.lease);
    await journals.add('jobs', [{ key: 'x', data: 1 }]);
    expect(await cli('drain', 'jobs')).toMatchObject({ code: 0, out: 'drained jobs: 1 waiting jobs removed\n' });
    // A drained journal takes work as before.
    await journals.add('jobs', [{ key: 'y', data: 1 }]);
    expect((await journals.claim('jobs')).items.map((i) => i.key)).toEqual(['y']);
  });
});
