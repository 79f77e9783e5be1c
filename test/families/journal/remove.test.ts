// Removing one job by key (issue 35, item 8): a Waiting job is deleted; a Processing one is
// cancelled, its holder told on its next extend, progress, done or release (CONFLICT, reason
// cancelled), and the item goes when its claim times out. On a real server.
import { afterEach, describe, expect, it } from 'vitest';
import { stopServer } from '../../support/member.js';
import { refusal, startV9 } from './v9-server.js';
import { pollUntil } from '../../support/poll.js';

afterEach(stopServer);

describe('journal.remove', () => {
  it('deletes a waiting job, cancels a processing one and tells its holder, and refuses bad input changing nothing', async () => {
    const { journals, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 300 });
    await journals.add('jobs', [{ key: 'w', data: 1, priority: 5 }, { key: 'p', data: 2, priority: 1 }]);
    const claim = await journals.claim('jobs');
    expect(claim.items.map((i) => i.key)).toEqual(['p']);

    expect(await journals.remove('jobs', 'w')).toEqual({ status: 'removed' });
    expect((await journals.show('jobs')).counts).toMatchObject({ waiting: 0, processing: 1 });
    expect((await refusal(journals.get('jobs', 'w'))).code).toBe('NOT_FOUND');

    expect(await journals.remove('jobs', 'p')).toEqual({ status: 'cancelled' });
    expect(await journals.get('jobs', 'p')).toMatchObject({ status: 'cancelled', lease: claim.lease });
    for (const told of [journals.extend('jobs', 'p', claim.lease), journals.done('jobs', 'p', claim.lease), journals.release('jobs', 'p', claim.lease), journals.progress('jobs', 'p', claim.lease, 50)]) {
      const err = await refusal(told);
      expect(err.code).toBe('CONFLICT');
      expect(err.hints.reason).toBe('cancelled');
    }
    // A batch of acknowledgements reports it lost, as any stale lease.
    expect(await journals.doneMany('jobs', [{ key: 'p', lease: claim.lease }])).toMatchObject({ done: 0, lost: ['p'] });

    // Its claim ends (the timeout duty): it is gone, not back in the queue, not flagged.
    const counts = await pollUntil('the cancelled claim to end', async () => {
      const c = (await journals.show('jobs')).counts;
      return c.processing === 0 ? c : undefined;
    });
    expect(counts).toMatchObject({ waiting: 0, flagged: 0 });
    expect((await refusal(journals.get('jobs', 'p'))).code).toBe('NOT_FOUND');

    // Nothing there, a bad key, an unknown journal: refused, nothing changes.
    expect((await refusal(journals.remove('jobs', 'p'))).code).toBe('NOT_FOUND');
    expect((await refusal(journals.remove('jobs', ''))).code).toBe('BAD_REQUEST');
    expect((await refusal(journals.remove('nope', 'x'))).code).toBe('NOT_FOUND');

    // From the command line.
    await journals.add('jobs', [{ key: 'c', data: 3 }]);
    expect(await cli('remove', 'jobs', 'c')).toMatchObject({ code: 0, out: 'removed c\n' });
    expect(await cli('remove', 'jobs', 'c')).toMatchObject({ code: 1, err: expect.stringContaining('NOT_FOUND') });
  });

  it('a version added after the cancel waits once the cancelled claim ends', async () => {
    const { journals } = await startV9();
    await journals.create('jobs', { timeoutMs: 300 });
    await journals.add('jobs', [{ key: 'k', data: 'old' }]);
    const claim = await journals.claim('jobs');
    await journals.add('jobs', [{ key: 'k', data: 'kept aside, removed with the cancel' }]);
    await journals.remove('jobs', 'k');
    expect(await journals.get('jobs', 'k')).not.toHaveProperty('next');
    await journals.add('jobs', [{ key: 'k', data: 'new' }]);
    // The claim waits, and is woken when the cancelled claim ends (not at the end of its wait).
    const asked = performance.now();
    const next = await journals.claim('jobs', { waitMs: 20_000 });
    expect(performance.now() - asked).toBeLessThan(15_000);
    expect(next.items).toMatchObject([{ key: 'k', data: 'new', timeouts: 0, failures: 0 }]);
    expect(next.lease).toBeGreaterThan(claim.lease);
  });
});
