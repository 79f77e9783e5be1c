// Retry policies (issue 35, item 7): attempts, fixed or exponential backoff with a jitter
// derived from the key and attempt (never a random number in apply), an unrecoverable failure
// flagged at once, the last error kept (bounded) into the flagged copy, requeue still working.
// Entry by entry on a real state machine, then the worker helper on a real server.
import { afterEach, describe, expect, it } from 'vitest';
import { FAILURES_SINCE } from '../../../src/families/journal/index.js';
import { decodeDefinition, decodeItem, encodeDefinition, encodeItem, type JournalItem, type RetryPolicy } from '../../../src/families/journal/records.js';
import { retryDelay } from '../../../src/families/journal/rules.js';
import { encodeCommand } from '../../../src/families/commands.js';
import { JOURNAL_OPS, MAX_ERROR_BYTES } from '../../../src/families/journal/wire.js';
import { UnrecoverableError, type ClaimedItem } from '../../../src/families/journal/client.js';
import { stopServer } from '../../support/member.js';
import { JournalHarness, SETTINGS } from './harness.js';
import { refusal, startV9 } from './v9-server.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  await stopServer();
});

const FIXED: RetryPolicy = { attempts: 3, backoff: 'fixed', delayMs: 5000, maxDelayMs: 5000, jitterPct: 0 };

async function withJournal(retry?: RetryPolicy): Promise<JournalHarness> {
  const h = await JournalHarness.open();
  open.push(h);
  await h.activate(FAILURES_SINCE);
  await h.ok({ op: 'create', name: 'jobs', settings: { ...SETTINGS, ...(retry === undefined ? {} : { retry }) } });
  return h;
}

/** Claims `key` (the only due item) and releases it as a failure; the release's value. */
async function fail(h: JournalHarness, key: string, extra: { error?: string; unrecoverable?: true } = {}) {
  const c = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
  if (c.op !== 'claim' || c.items[0]?.key !== key) throw new Error(`expected to claim ${key}`);
  return h.ok({ op: 'release', name: 'jobs', key, lease: c.lease, ...extra });
}

describe('a retry policy in apply', () => {
  it('delays each failure as the policy says and flags the one that ends the last attempt, keeping the last error', async () => {
    const h = await withJournal(FIXED);
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'a', data: 1 }] });
    for (let attempt = 1; attempt <= 2; attempt++) {
      expect(await fail(h, 'a', { error: `boom ${attempt}` })).toMatchObject({ flagged: false });
      expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'waiting', failures: attempt, processAt: h.now + 5000, lastError: `boom ${attempt}` });
      h.now += 5000; // due again
    }
    expect(await fail(h, 'a', { error: 'boom 3' })).toMatchObject({ flagged: true });
    expect((await h.flagged()).get('a')!.item).toMatchObject({ failures: 3, lastError: 'boom 3' });
    // Requeue from flagged still works: due now, counters back to 0, the last error kept as history.
    await h.ok({ op: 'requeue', name: 'jobs', key: 'a' });
    expect((await h.items('jobs')).get('a')).toMatchObject({ status: 'waiting', failures: 0, timeouts: 0, processAt: h.now, lastError: 'boom 3' });
  });

  it('an unrecoverable failure is flagged at once; a release with its own date keeps it; a timeout follows the policy too', async () => {
    const h = await withJournal({ ...FIXED, attempts: 10 });
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'u', data: 1 }, { key: 'd', data: 2, priority: 200 }] });
    expect(await fail(h, 'u', { unrecoverable: true, error: 'bad input' })).toMatchObject({ flagged: true });
    expect((await h.flagged()).get('u')!.item).toMatchObject({ failures: 1, lastError: 'bad input' });
    const c = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    if (c.op !== 'claim') throw new Error('claim');
    await h.ok({ op: 'release', name: 'jobs', key: 'd', lease: c.lease, processAt: h.now + 42 });
    expect((await h.items('jobs')).get('d')).toMatchObject({ processAt: h.now + 42, failures: 1 });
    h.now += 42;
    const again = await h.ok({ op: 'claim', name: 'jobs', max: 1 });
    if (again.op !== 'claim') throw new Error('claim');
    h.now += SETTINGS.timeoutMs;
    await h.ok({ op: 'timeout', name: 'jobs', claims: [['d', again.lease]] });
    expect((await h.items('jobs')).get('d')).toMatchObject({ processAt: h.now + 5000, failures: 2, lastError: expect.stringMatching(/^timed out/) });
  });

  it('an item\u2019s own policy is over its journal\u2019s; exponential backoff doubles to its maximum, with a jitter from the key and attempt', async () => {
    const h = await withJournal(FIXED);
    const own: RetryPolicy = { attempts: 6, backoff: 'exponential', delayMs: 1000, maxDelayMs: 4000, jitterPct: 50 };
    await h.ok({ op: 'add', name: 'jobs', items: [{ key: 'e', data: 1, retry: own }] });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      expect(await fail(h, 'e')).toMatchObject({ flagged: false });
      const item = (await h.items('jobs')).get('e')!;
      delays.push(item.processAt - h.now);
      h.now = item.processAt;
    }
    expect(delays).toEqual([1, 2, 3, 4, 5].map((n) => retryDelay(own, 'e', n)));
    const bases = [1000, 2000, 4000, 4000, 4000];
    delays.forEach((d, i) => {
      expect(d).toBeLessThanOrEqual(bases[i]!);
      expect(d).toBeGreaterThanOrEqual(bases[i]! / 2);
    });
    // The jitter is a function of the key and the attempt: another key spreads differently, the same key alike.
    expect(retryDelay(own, 'e', 3)).toBe(retryDelay(own, 'e', 3));
    expect(new Set(Array.from({ length: 20 }, (_, i) => retryDelay(own, `k${i}`, 1))).size).toBeGreaterThan(5);
    expect(await fail(h, 'e')).toMatchObject({ flagged: true }); // the sixth attempt was the last
  });

  it('records and definitions with the new fields round-trip; those without keep their bytes', async () => {
    const item: JournalItem = {
      key: 'k', data: 1, priority: 3, processAt: 5, insertedAt: 4, expiresAt: 0, status: 'processing', startedAt: 6, timeouts: 1, failures: 2, lease: 9, next: null,
      cancelled: true, lastError: 'oops', progress: { done: 3 }, retry: FIXED,
    };
    expect(decodeItem(encodeItem(item))).toEqual(item);
    const charged = { ...item, user: 'ann', chargedBytes: 12 };
    expect(decodeItem(encodeItem(charged))).toEqual(charged);
    const { cancelled: _c, lastError: _e, progress: _p, retry: _r, ...plain } = item;
    expect(encodeItem(plain).length).toBeLessThan(encodeItem(item).length);
    const d = { settings: { ...SETTINGS, retry: FIXED, keepResultsMs: 10, rateLimit: { max: 5, windowMs: 1000 } }, counts: { waiting: 1, processing: 0, flagged: 0, byPriority: { 3: 1 } }, dropping: false, paused: true, window: { start: 1000, claimed: 2 }, results: 4 };
    expect(decodeDefinition(encodeDefinition(d))).toEqual(d);
    const old = { settings: SETTINGS, counts: d.counts, dropping: false };
    expect(decodeDefinition(encodeDefinition(old))).toEqual(old);
  });

  it('refuses bad policies and over-long errors before anything is proposed', () => {
    const limits = { dataBytes: 1 << 20, dataDepth: 64 } as never;
    const build = (op: string, f: Record<string, unknown>) => () => JOURNAL_OPS.get(op)!(f, 1, limits);
    for (const retry of [{}, { attempts: 0 }, { attempts: 2, backoff: 'linear' }, { attempts: 2, jitterPct: 101 }, { attempts: 2, delayMs: 10, maxDelayMs: 5 }, { attempts: 2, colour: 1 }]) {
      expect(build('journal.create', { name: 'j', retry }), JSON.stringify(retry)).toThrow(/retry/);
      expect(build('journal.add', { name: 'j', items: [{ key: 'k', data: 1, retry }] }), JSON.stringify(retry)).toThrow(/retry/);
    }
    expect(build('journal.release', { name: 'j', key: 'k', lease: 1, failure: false, unrecoverable: true })).toThrow(/no failure/);
    // A long error is cut to the bound, not refused; an entry carrying a longer one is refused by every member.
    const long = JOURNAL_OPS.get('journal.release')!({ name: 'j', key: 'k', lease: 1, error: 'x'.repeat(5000) }, 1, limits) as unknown as { error: string };
    expect(Buffer.byteLength(long.error)).toBeLessThanOrEqual(MAX_ERROR_BYTES);
    expect(() => encodeCommand({ family: 'journal', op: 'release', name: 'j', key: 'k', lease: 1, error: 'x'.repeat(5000) } as never)).toThrow(/error/);
  });
});

describe('retries on a server', () => {
  it('the worker helper follows the journal\u2019s policy: failures retried after its delay, flagged after its attempts with the thrown message; an unrecoverable error flags at once', async () => {
    const { journals, cli } = await startV9();
    expect(await cli('create', 'jobs', '--retry-attempts', '3', '--backoff', 'fixed', '--backoff-delay', '50', '--timeout-ms', '10s')).toMatchObject({ code: 0 });
    expect((await journals.show('jobs')).settings.retry).toEqual({ attempts: 3, backoff: 'fixed', delayMs: 50, maxDelayMs: 3_600_000, jitterPct: 0 });
    await journals.add('jobs', [{ key: 'flaky', data: 1 }, { key: 'poison', data: 2 }]);
    const runs: Record<string, ClaimedItem[]> = { flaky: [], poison: [] };
    const flagged = new Promise<void>((resolve) => {
      const watch = journals.watchFlags('jobs', async () => {
        if ((await journals.flagged('jobs')).length === 2) {
          watch.stop();
          resolve();
        }
      }, { after: 0 });
    });
    const worker = journals.process('jobs', async (item) => {
      runs[item.key]!.push(item);
      if (item.key === 'poison') throw new UnrecoverableError('cannot parse');
      throw new Error(`attempt ${runs.flaky!.length} failed`);
    }, { concurrency: 2 });
    await flagged;
    await worker.stop();
    expect(runs.flaky!.map((i) => i.failures)).toEqual([0, 1, 2]);
    expect(runs.poison!.length).toBe(1);
    expect(await journals.get('jobs', 'flaky')).toMatchObject({ status: 'flagged', failures: 3, lastError: 'attempt 3 failed' });
    expect(await journals.get('jobs', 'poison')).toMatchObject({ status: 'flagged', failures: 1, lastError: 'cannot parse' });
    // Bad policies are refused and change nothing; configure clears a policy with null.
    expect((await refusal(journals.configure('jobs', { retry: { attempts: 0 } }))).code).toBe('BAD_REQUEST');
    expect((await journals.show('jobs')).settings.retry).toMatchObject({ attempts: 3 });
    expect(await cli('configure', 'jobs', '--no-retry')).toMatchObject({ code: 0 });
    expect((await journals.show('jobs')).settings).not.toHaveProperty('retry');
    expect(await cli('create', 'other', '--backoff', 'fixed')).toMatchObject({ code: 2, err: expect.stringContaining('--retry-attempts') });
  });
});
