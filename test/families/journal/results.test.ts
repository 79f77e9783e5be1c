// Progress and results (issue 35, item 11): the holder reports progress (bounded, shown by get,
// cleared by the next claim, and a sign of life that extends the claim); done may carry a result
// (bounded) kept for the journal's keepResultsMs and readable by key, then deleted by the
// leader; a journal keeps at most 100,000 results (or its maxItems), the oldest going first.
import { afterEach, describe, expect, it } from 'vitest';
import { FAILURES_SINCE } from '../../../src/families/journal/index.js';
import { JournalBucket } from '../../../src/families/journal/keys.js';
import { stopServer } from '../../support/member.js';
import { JournalHarness, SETTINGS } from './harness.js';
import { refusal, startV9 } from './v9-server.js';
import { pollUntil } from '../../support/poll.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  await stopServer();
});

describe('progress', () => {
  it('is shown by get, extends the claim, is cleared by the next claim, and is bounded', async () => {
    const { journals, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000 });
    await journals.add('jobs', [{ key: 'a', data: 1 }]);
    const claim = await journals.claim('jobs');
    const before = await journals.get('jobs', 'a');
    await journals.progress('jobs', 'a', claim.lease, { percent: 40 });
    const after = await journals.get('jobs', 'a');
    expect(after.progress).toEqual({ percent: 40 });
    expect(after.startedAt!).toBeGreaterThanOrEqual(before.startedAt!);
    expect(await cli('progress', 'jobs', 'a', String(claim.lease), '{"percent":80}')).toMatchObject({ code: 0 });
    expect((await journals.get('jobs', 'a')).progress).toEqual({ percent: 80 });
    expect((await refusal(journals.progress('jobs', 'a', claim.lease, 'x'.repeat(5000)))).code).toBe('TOO_LARGE');
    expect((await refusal(journals.progress('jobs', 'a', claim.lease + 1, 1))).code).toBe('CONFLICT');
    expect((await journals.get('jobs', 'a')).progress).toEqual({ percent: 80 });
    await journals.release('jobs', 'a', claim.lease, undefined, { failure: false });
    await journals.claim('jobs');
    expect(await journals.get('jobs', 'a')).not.toHaveProperty('progress');
  });
});

describe('results', () => {
  it('a done\u2019s result is readable by key until its time is up, then the leader deletes it', async () => {
    const { journals, http, cli } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000, keepResultsMs: 60_000 });
    await journals.add('jobs', [{ key: 'a', data: 1 }, { key: 'b', data: 2 }, { key: 'c', data: 3 }]);
    const claim = await journals.claim('jobs', { max: 3 });
    await journals.done('jobs', 'a', claim.lease, { sent: true });
    await journals.doneMany('jobs', [{ key: 'b', lease: claim.lease, result: [1, 2] }, { key: 'c', lease: claim.lease }]);
    const a = await journals.result('jobs', 'a');
    expect(a).toMatchObject({ key: 'a', result: { sent: true } });
    expect(a.keptUntil - a.doneAt).toBe(60_000);
    expect((await journals.result('jobs', 'b')).result).toEqual([1, 2]);
    expect((await refusal(journals.result('jobs', 'c'))).code).toBe('NOT_FOUND');
    expect(await (await fetch(`${http}/v1/journals/jobs/results/b`)).json()).toMatchObject({ key: 'b', result: [1, 2] });
    expect((await fetch(`${http}/v1/journals/jobs/results/c`)).status).toBe(404);
    expect((await journals.show('jobs')).counts.results).toBe(2);
    expect(await cli('result', 'jobs', 'a')).toMatchObject({ code: 0, out: expect.stringContaining('{"sent":true}') });

    // Bounded: a result over 64 KiB is refused and the item stays held.
    await journals.add('jobs', [{ key: 'big', data: 0 }]);
    const big = await journals.claim('jobs');
    expect((await refusal(journals.done('jobs', 'big', big.lease, 'x'.repeat(70_000)))).code).toBe('TOO_LARGE');
    expect((await journals.get('jobs', 'big')).status).toBe('processing');

    // A short keep: the leader's duty deletes results once their time is up.
    await journals.configure('jobs', { keepResultsMs: 200 });
    await journals.done('jobs', 'big', big.lease, 'short');
    expect((await journals.result('jobs', 'big')).result).toBe('short');
    await journals.configure('jobs', { keepResultsMs: 0 }); // 0: results are not kept
    await journals.add('jobs', [{ key: 'none', data: 0 }]);
    const none = await journals.claim('jobs');
    await journals.done('jobs', 'none', none.lease, 'dropped');
    expect((await refusal(journals.result('jobs', 'none'))).code).toBe('NOT_FOUND');
    await pollUntil('the short-kept result deleted by the leader', async () => {
      const gone = await journals.result('jobs', 'big').then(() => false, () => true);
      return gone && (await journals.show('jobs')).counts.results === 2 ? true : undefined;
    });
  });

  it('the worker helper keeps what its handler returns', async () => {
    const { journals } = await startV9();
    await journals.create('jobs', { timeoutMs: 60_000 });
    await journals.add('jobs', [{ key: 'sum', data: [2, 3] }, { key: 'void', data: [] }]);
    const worker = journals.process('jobs', async (item) => (item.key === 'sum' ? (item.data as number[]).reduce((x, y) => x + y, 0) : undefined));
    await pollUntil('both jobs done', async () => {
      const counts = (await journals.show('jobs')).counts;
      return counts.waiting + counts.processing === 0 ? true : undefined;
    });
    await worker.stop();
    expect((await journals.result('jobs', 'sum')).result).toBe(5);
    expect((await refusal(journals.result('jobs', 'void'))).code).toBe('NOT_FOUND');
  });

  it('a journal keeps at most its maxItems (and 100,000) results: the oldest go first', async () => {
    const h = await JournalHarness.open();
    open.push(h);
    await h.activate(FAILURES_SINCE);
    await h.ok({ op: 'create', name: 'jobs', settings: { ...SETTINGS, maxItems: 3, keepResultsMs: 60_000 } });
    for (let i = 0; i < 5; i++) {
      await h.ok({ op: 'add', name: 'jobs', items: [{ key: `r${i}`, data: i }] });
      const c = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
      if (c.op !== 'claim') throw new Error('claim');
      await h.ok({ op: 'done', name: 'jobs', key: `r${i}`, lease: c.lease, result: i });
      h.now += 1;
    }
    expect(h.definition('jobs')!.results).toBe(3);
    expect((await h.indexKeys(JournalBucket.result)).length).toBe(3);
    expect((await h.indexKeys(JournalBucket.resultExpiry)).length).toBe(3);
    // The leader's expiry entry deletes them once their time is up.
    h.now += 60_000;
    expect(await h.ok({ op: 'expireResults', name: 'jobs', max: 10 })).toMatchObject({ expired: 3 });
    expect(h.definition('jobs')!.results).toBeUndefined();
    expect((await h.indexKeys(JournalBucket.resultExpiry)).length).toBe(0);
  });
});
