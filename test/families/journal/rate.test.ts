// Rate limits per journal (issue 35, item 14): at most N items claimed per window by all
// workers together, counted in apply from the entries' replicated clock and kept in the
// journal's replicated definition, so a new leader (or a restarted member) counts on where
// the last one stopped. Entry by entry, then on a real server.
import { afterEach, describe, expect, it } from 'vitest';
import { FAILURES_SINCE, journal } from '../../../src/families/journal/index.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import { REGISTRY } from '../../../src/families/registry.js';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import { stopServer } from '../../support/member.js';
import { JournalHarness, SETTINGS } from './harness.js';
import { refusal, startV9 } from './v9-server.js';

const open: JournalHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  await stopServer();
});

const claimed = (v: JournalValue): number => (v.op === 'claim' ? v.items.length : v.op === 'done' || v.op === 'doneMany' ? (v.next?.items.length ?? 0) : -1);

describe('a rate limit in apply', () => {
  it('claims at most max per window of the replicated clock, done-and-claim included, and the count is in the replicated state', async () => {
    const h = await JournalHarness.open();
    open.push(h);
    await h.activate(FAILURES_SINCE);
    h.now = 2_000_000; // a window starts here (the replicated clock never goes back)
    await h.ok({ op: 'create', name: 'jobs', settings: { ...SETTINGS, timeoutMs: 60_000, rateLimit: { max: 3, windowMs: 1000 } } });
    await h.ok({ op: 'add', name: 'jobs', items: Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, data: i })) });
    const first = await h.ok({ op: 'claim', name: 'jobs', max: 2 });
    expect(claimed(first)).toBe(2);
    h.now += 500;
    const second = await h.ok({ op: 'claim', name: 'jobs', max: 10 });
    expect(claimed(second)).toBe(1);
    if (first.op !== 'claim') throw new Error('claim');
    expect(claimed(await h.ok({ op: 'done', name: 'jobs', key: 'k0', lease: first.lease, claim: 5 }))).toBe(0);
    expect(h.definition('jobs')!.window).toEqual({ start: 2_000_000, claimed: 3 });
    // What a restarted member (or a new leader) loads from the db counts on alike.
    const reloaded = await StateMachine.open(h.temp.db, REGISTRY);
    expect(reloaded.stateOf(journal).journals.get('jobs')!.window).toEqual({ start: 2_000_000, claimed: 3 });
    h.now += 499;
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10 }))).toBe(0);
    h.now += 1; // the next window
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10 }))).toBe(3);
    expect(h.definition('jobs')!.window).toEqual({ start: 2_001_000, claimed: 3 });
    // Lifting the limit: claims take what is due (the four of ten not claimed yet).
    await h.ok({ op: 'configure', name: 'jobs', settings: { ...SETTINGS, timeoutMs: 60_000 } });
    expect(claimed(await h.ok({ op: 'claim', name: 'jobs', max: 10 }))).toBe(4);
  });

  it('before command version 9 a rate limit is refused, changing nothing', async () => {
    const h = await JournalHarness.open();
    open.push(h);
    const r = await h.run({ op: 'create', name: 'jobs', settings: { ...SETTINGS, rateLimit: { max: 3, windowMs: 1000 } } });
    expect(r).toMatchObject({ ok: false, code: 'BAD_REQUEST' });
    expect(h.definition('jobs')).toBeUndefined();
  });
});

describe('a rate limit on a server', () => {
  it('a claim past the window\u2019s share gets nothing at once, or waits for the next window; bad limits are refused', async () => {
    const { journals, cli } = await startV9();
    expect(await cli('create', 'jobs', '--rate-max', '4', '--rate-window', '1s', '--timeout-ms', '60s')).toMatchObject({ code: 0 });
    expect((await journals.show('jobs')).settings.rateLimit).toEqual({ max: 4, windowMs: 1000 });
    await journals.add('jobs', Array.from({ length: 12 }, (_, i) => ({ key: `k${i}`, data: i })));
    const got: number[] = [];
    for (let i = 0; i < 3; i++) got.push((await journals.claim('jobs', { max: 100, waitMs: 10_000 })).items.length);
    // Each claim takes at most the window's four; a claim in a full window waits for the next (never empty here).
    expect(got.every((n) => n >= 1 && n <= 4)).toBe(true);
    expect((await journals.show('jobs')).counts.processing).toBe(got.reduce((a, b) => a + b, 0));
    for (const rateLimit of [{ max: 0, windowMs: 1000 }, { max: 1, windowMs: 0 }, { max: 1 }, { max: 1, windowMs: 10, burst: 2 }]) {
      expect((await refusal(journals.configure('jobs', { rateLimit: rateLimit as never }))).code, JSON.stringify(rateLimit)).toBe('BAD_REQUEST');
    }
    expect((await journals.show('jobs')).settings.rateLimit).toEqual({ max: 4, windowMs: 1000 });
    expect(await cli('configure', 'jobs', '--rate-max', '4')).toMatchObject({ code: 2, err: expect.stringContaining('--rate-window') });
    await journals.configure('jobs', { rateLimit: null });
    expect((await journals.show('jobs')).settings).not.toHaveProperty('rateLimit');
    expect((await journals.claim('jobs', { max: 100 })).items.length).toBe(12 - got.reduce((a, b) => a + b, 0));
  });
});
