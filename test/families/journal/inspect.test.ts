// Inspecting jobs (issue 35, item 9): one by key with its status, dates, counters, last error
// and the holder's lease; a status listed page by page with a cursor and a page limit; over
// the client, HTTP and the CLI, on a real server. Bad input is refused and changes nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { stopServer } from '../../support/member.js';
import { refusal, startV9 } from './v9-server.js';
import type { JobInfo } from '../../../src/families/journal/client.js';

afterEach(stopServer);

describe('journal.get and journal.items', () => {
  it('shows one job in each status, with its counters, last error and lease', async () => {
    const { journals, http, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000, maxTimeouts: 0 });
    const later = Date.now() + 3_600_000;
    await journals.add('jobs', [{ key: 'run', data: { n: 1 }, priority: 1 }, { key: 'wait', data: 'w', priority: 9, processAt: later }, { key: 'bad', data: 'b', priority: 2 }]);
    const claim = await journals.claim('jobs', { max: 2 });
    expect(claim.items.map((i) => i.key)).toEqual(['run', 'bad']);
    expect(await journals.release('jobs', 'bad', claim.lease, undefined, { error: 'disk full' })).toEqual({ flagged: true });

    const running = await journals.get('jobs', 'run');
    expect(running).toMatchObject({ key: 'run', status: 'processing', data: { n: 1 }, priority: 1, timeouts: 0, failures: 0, lease: claim.lease, expiresAt: 0 });
    expect(running.leaseExpiresAt! - running.startedAt!).toBe(60_000);
    expect(await journals.get('jobs', 'wait')).toMatchObject({ status: 'waiting', processAt: later, priority: 9 });
    expect(await journals.get('jobs', 'bad')).toMatchObject({ status: 'flagged', failures: 1, lastError: 'disk full', flaggedAt: expect.any(Number) });
    expect((await journals.flagged('jobs'))[0]).toMatchObject({ key: 'bad', lastError: 'disk full' });
    expect((await refusal(journals.get('jobs', 'none'))).code).toBe('NOT_FOUND');

    // HTTP and the CLI show the same.
    expect(await (await fetch(`${http}/v1/journals/jobs/items/run`)).json()).toEqual(running);
    expect((await fetch(`${http}/v1/journals/jobs/items/none`)).status).toBe(404);
    expect(await cli('get', 'jobs', 'bad')).toMatchObject({ code: 0, out: expect.stringContaining('failures 1, last error: disk full') });
  });

  it('lists a status page by page in its order, with a cursor and a bounded page, refusing bad input', async () => {
    const { journals, http, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000 });
    // 25 waiting, in claim order by priority then key; 3 of them claimed.
    const keys = Array.from({ length: 25 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    await journals.add('jobs', keys.map((key, i) => ({ key, data: i, priority: 10 + (i % 3) })));
    await journals.claim('jobs', { max: 3 });
    const claimOrder = [...keys].sort((a, b) => (Number(a.slice(1)) % 3) - (Number(b.slice(1)) % 3) || (a < b ? -1 : 1));
    const waiting: JobInfo[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await journals.items('jobs', 'waiting', { limit: 10, ...(after === undefined ? {} : { after }) });
      pages++;
      expect(page.items.length).toBeLessThanOrEqual(10);
      waiting.push(...page.items);
      if (page.next === null) break;
      after = page.next;
    }
    expect(pages).toBe(3);
    expect(waiting.map((j) => j.key)).toEqual(claimOrder.slice(3));
    expect(waiting.every((j) => j.status === 'waiting')).toBe(true);
    const processing = await journals.items('jobs', 'processing');
    expect(processing).toMatchObject({ next: null });
    expect(processing.items.map((j) => j.key).sort()).toEqual(claimOrder.slice(0, 3).sort());
    expect(await journals.items('jobs', 'flagged')).toEqual({ items: [], next: null });

    // Over HTTP, with the cursor in the query.
    const first = (await (await fetch(`${http}/v1/journals/jobs/items?status=waiting&limit=20`)).json()) as { items: JobInfo[]; next: string };
    const rest = (await (await fetch(`${http}/v1/journals/jobs/items?status=waiting&limit=20&after=${first.next}`)).json()) as { items: JobInfo[]; next: null };
    expect([...first.items, ...rest.items].map((j) => j.key)).toEqual(claimOrder.slice(3));
    expect(rest.next).toBeNull();

    // Bad input: refused before anything is read.
    for (const bad of [journals.items('jobs', 'waiting', { limit: 0 }), journals.items('jobs', 'waiting', { limit: 1001 }), journals.items('jobs', 'done' as 'waiting'), journals.items('jobs', 'waiting', { after: 'not a cursor!' })]) {
      expect((await refusal(bad)).code).toBe('BAD_REQUEST');
    }
    expect((await fetch(`${http}/v1/journals/jobs/items?status=nope`)).status).toBe(400);
    expect((await refusal(journals.items('nope', 'waiting'))).code).toBe('NOT_FOUND');
    const page = await cli('items', 'jobs', '--status', 'waiting', '--limit', '2');
    expect(page).toMatchObject({ code: 0, out: expect.stringMatching(/next: --after [A-Za-z0-9_-]+\n$/) });
    expect(await cli('items', 'jobs', '--status', 'done')).toMatchObject({ code: 2 });
  });
});
