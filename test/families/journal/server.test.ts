// The journal end to end on a real server (in this process, on loopback): its
// ops over the WebSocket in both encodings and through the client library,
// claims that wait for work, the leader's timeout duty, and the worker helper.
import { afterEach, describe, expect, it } from 'vitest';
import { JournalClient, type ClaimedItem } from '../../../src/families/journal/client.js';
import { startServer, stopServer } from '../../support/member.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { WireClient } from '../../server/wire-client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';

afterEach(stopServer);

async function start(): Promise<{ url: string; journals: JournalClient }> {
  const { url, client } = await startServer();
  const journals = new JournalClient(client);
  await untilCommandVersion(() => journals.list());
  return { url, journals };
}

describe('the journal on a server', () => {
  it('answers its ops in both encodings, refusing bad requests before proposing anything', async () => {
    const { url, journals } = await start();
    await journals.create('jobs', { timeoutMs: 60_000 });
    for (const encoding of ['json', 'msgpack'] as const) {
      const wire = await WireClient.connect(url, encoding);
      try {
        await wire.hello({ timeoutMs: 10_000 });
        expect(await wire.call('journal.add', { name: 'jobs', items: [{ key: `k-${encoding}`, data: { enc: encoding }, priority: 3 }] })).toMatchObject({ inserted: 1 });
        const claimed = await wire.call('journal.claim', { name: 'jobs', max: 5 });
        expect(claimed).toMatchObject({ lease: expect.any(Number), items: [{ key: `k-${encoding}`, data: { enc: encoding }, priority: 3, timeouts: 0 }] });
        expect((await wire.request('journal.done', { name: 'jobs', key: `k-${encoding}`, lease: (claimed.lease as number) + 1 })).error?.code).toBe('CONFLICT');
        expect(await wire.call('journal.done', { name: 'jobs', key: `k-${encoding}`, lease: claimed.lease })).toEqual({});
        for (const bad of [
          { name: 'jobs', items: [{ key: 'x', data: 1, priority: 256 }] },
          { name: 'no spaces', items: [{ key: 'x', data: 1 }] },
          { name: 'jobs', items: [] },
          { name: 'jobs', items: [{ key: '', data: 1 }] },
          { name: 'jobs', items: [{ key: 'x' }] },
          { name: 'jobs', items: [{ key: 'x', data: 1, colour: 'red' }] },
        ]) {
          expect((await wire.request('journal.add', bad)).error?.code, JSON.stringify(bad)).toBe('BAD_REQUEST');
        }
        expect((await wire.request('journal.claim', { name: 'jobs', max: 100_000 })).error?.code).toBe('BAD_REQUEST');
        expect((await wire.request('journal.claim', { name: 'missing' })).error?.code).toBe('NOT_FOUND');
      } finally {
        wire.terminate();
      }
    }
    expect((await journals.show('jobs')).counts).toMatchObject({ waiting: 0, processing: 0 });
    // The cluster-wide limit on journals: read, set, enforced, and checked before proposing.
    expect(await journals.limits()).toEqual({ maxJournals: 10_000, journals: 1 });
    expect(await journals.limits({ maxJournals: 1 })).toEqual({ maxJournals: 1, journals: 1 });
    await expect(journals.create('more')).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    await expect(journals.limits({ maxJournals: 0 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('a claim that waits is answered when work is added, and a timed-out claim comes back with its counter raised', async () => {
    const { journals } = await start();
    await journals.create('jobs', { timeoutMs: 200, maxTimeouts: 1 });
    const waiting = journals.claim('jobs', { waitMs: 20_000 });
    await journals.add('jobs', [{ key: 'a', data: 'x' }]);
    const first = await waiting;
    expect(first.items.map((i) => i.key)).toEqual(['a']);
    // Not extended: the leader's timeout duty puts it back, and a waiting claim gets it again.
    const again = await journals.claim('jobs', { waitMs: 20_000 });
    expect(again.items).toMatchObject([{ key: 'a', timeouts: 1 }]);
    expect(again.lease).toBeGreaterThan(first.lease);
    await expect(journals.done('jobs', 'a', first.lease)).rejects.toMatchObject({ code: 'CONFLICT' });
    // Timing out past maxTimeouts flags it: it leaves the queue and shows among the flagged.
    for (;;) {
      const flagged = await journals.flagged('jobs');
      if (flagged.length > 0) {
        expect(flagged).toMatchObject([{ key: 'a', timeouts: 2 }]);
        break;
      }
      await journals.claim('jobs', { waitMs: 300 });
    }
    expect((await journals.show('jobs')).counts).toMatchObject({ waiting: 0, processing: 0, flagged: 1 });
    await journals.requeue('jobs', 'a');
    expect((await journals.claim('jobs')).items).toMatchObject([{ key: 'a', timeouts: 0 }]);
  });

  it('sends exactly one flag event per flagged item to every watcher, by cursor, and says when a cursor is too old', async () => {
    const { journals } = await start();
    await journals.create('jobs', { timeoutMs: 100, maxTimeouts: 0 });
    const from = (await journals.flags('jobs')).next; // "from now": nothing flagged yet, answered at once
    const seen: string[] = [];
    const watcher = journals.watchFlags('jobs', (e) => void seen.push(`${e.key}@${e.index}`), { after: from, waitMs: 5_000 });
    const waiting = journals.flags('jobs', { after: from, waitMs: 20_000 });
    await journals.add('jobs', [
      { key: 'a', data: 1 },
      { key: 'b', data: 2 },
    ]);
    const claim = await journals.claim('jobs', { max: 2 });
    expect(claim.items).toHaveLength(2);
    // Not extended: with maxTimeouts 0 the first timeout flags both, in one entry.
    const page = await waiting;
    expect(page.missed).toBe(false);
    expect(page.events.map((e) => e.key).sort()).toEqual(['a', 'b']);
    const [first, second] = page.events;
    expect(first!.index).toBe(second!.index);
    expect(page.next).toBe(first!.index);
    // Asked again from the cursor: nothing new (the wait runs out).
    expect(await journals.flags('jobs', { after: page.next, waitMs: 200 })).toMatchObject({ events: [], missed: false });
    // Asked from index 0: the feed began at this member's first entry, so nothing can be missing
    // (a cursor before a feed's start says missed: flag-feed.test.ts). It once said missed here,
    // because the feed took its start from the db's applied index, which trails the entries
    // already reported.
    const old = await journals.flags('jobs', { after: 0 });
    expect(old.missed).toBe(false);
    expect(old.events.map((e) => e.key).sort()).toEqual(['a', 'b']);
    // The helper saw each once; requeue and a second flagging is a second event.
    await journals.requeue('jobs', 'a');
    const again = await journals.claim('jobs');
    expect(again.items.map((i) => i.key)).toEqual(['a']);
    const next = await journals.flags('jobs', { after: page.next, waitMs: 20_000 });
    expect(next.events.map((e) => e.key)).toEqual(['a']);
    expect(next.events[0]!.index).toBeGreaterThan(first!.index);
    await expect.poll(() => seen.length).toBe(3);
    watcher.stop();
    await watcher.done;
    expect(seen.sort()).toEqual([`a@${first!.index}`, `a@${next.events[0]!.index}`, `b@${first!.index}`].sort());
    await expect(journals.flags('missing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a claim waiting for a delayed item is answered once it is due, without polling', async () => {
    const { journals } = await start();
    await journals.create('later');
    const due = Date.now() + 300;
    await journals.add('later', [{ key: 'd', data: 1, processAt: due }]);
    const claim = await journals.claim('later', { waitMs: 20_000 });
    expect(claim.items.map((i) => i.key)).toEqual(['d']);
    expect(Date.now()).toBeGreaterThanOrEqual(due);
  });

  it('the worker helper handles every item once, retries a failure, and stops cleanly', async () => {
    const { journals } = await start();
    await journals.create('work', { timeoutMs: 5_000 });
    await journals.add('work', Array.from({ length: 50 }, (_, i) => ({ key: `job-${i}`, data: i })));
    const handled = new Map<string, number>();
    let failedOnce = false;
    let finish: () => void = () => undefined;
    const allDone = new Promise<void>((resolve) => (finish = resolve));
    const worker = journals.process(
      'work',
      async (item: ClaimedItem) => {
        if (item.key === 'job-7' && !failedOnce) {
          failedOnce = true;
          throw new Error('flaky');
        }
        handled.set(item.key, (handled.get(item.key) ?? 0) + 1);
        if (handled.size === 50) finish();
      },
      { concurrency: 4, waitMs: 500, retryDelayMs: () => 0 },
    );
    await allDone;
    await worker.stop();
    expect(failedOnce).toBe(true);
    expect([...handled.values()].every((n) => n === 1)).toBe(true);
    expect(handled.size).toBe(50);
    expect((await journals.show('work')).counts).toMatchObject({ waiting: 0, processing: 0 });
  });

  it('a job whose handler always throws is flagged after maxTimeouts + 1 failures, with its flag event', async () => {
    const { journals } = await start();
    await journals.create('poison', { timeoutMs: 30_000, maxTimeouts: 2 });
    const flags: string[] = [];
    let flagged!: () => void;
    const seen = new Promise<void>((resolve) => (flagged = resolve));
    const watch = journals.watchFlags('poison', (e) => {
      flags.push(e.key);
      flagged();
    }, { waitMs: 1000 });
    await journals.add('poison', [{ key: 'bad', data: 1 }]);
    const failures: Array<number | undefined> = [];
    const worker = journals.process('poison', async (item) => {
      failures.push(item.failures);
      throw new Error('always');
    }, { waitMs: 1000, retryDelayMs: () => 0 });
    await seen;
    await worker.stop();
    watch.stop();
    expect(flags).toEqual(['bad']);
    expect(failures).toEqual([0, 1, 2]);
    expect(await journals.flagged('poison')).toMatchObject([{ key: 'bad', timeouts: 3, failures: 3 }]);
    expect((await journals.show('poison')).counts).toMatchObject({ waiting: 0, processing: 0, flagged: 1 });
  });

  it('stop() on an idle worker returns at once, though its claim would wait 30 s; a claim called off is answered empty', async () => {
    const { url, journals } = await start();
    await journals.create('idle');
    const worker = journals.process('idle', () => Promise.resolve(), { waitMs: 30_000 });
    const started = performance.now();
    await worker.stop();
    expect(performance.now() - started).toBeLessThan(10_000);
    // Over the wire: the session's waiting claim answers empty, with no entry (lease 0).
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      const waiting = wire.call('journal.claim', { name: 'idle', max: 1, waitMs: 30_000 });
      let cancelled = 0;
      while (cancelled === 0) cancelled = (await wire.call('journal.cancelWait', { name: 'idle' })).cancelled as number;
      expect(await waiting).toEqual({ lease: 0, items: [] });
      expect((await wire.request('journal.cancelWait', { name: 'missing' })).error?.code).toBe('NOT_FOUND');
    } finally {
      wire.terminate();
    }
  });

  it('a release that says it is no failure does not count; one that does, counts', async () => {
    const { journals } = await start();
    await journals.create('rel', { maxTimeouts: 5 });
    await journals.add('rel', [{ key: 'k', data: 1 }]);
    for (const failure of [false, false, true]) {
      const c = await journals.claim('rel', { max: 1 });
      expect(await journals.release('rel', 'k', c.lease, undefined, { failure })).toEqual({ flagged: false });
    }
    expect((await journals.claim('rel', { max: 1 })).items[0]).toMatchObject({ key: 'k', timeouts: 1, failures: 1 });
  });

  it('doneMany finishes many items in one entry, reports stale leases without failing the rest, and claims the next ones', async () => {
    const { url, journals } = await start();
    await journals.create('batch', { timeoutMs: 60_000 });
    await journals.add('batch', Array.from({ length: 6 }, (_, i) => ({ key: `j${i}`, data: i })));
    const first = await journals.claim('batch', { max: 2 });
    const second = await journals.claim('batch', { max: 2 });
    const finishing = [
      ...first.items.map((i) => ({ key: i.key, lease: first.lease })),
      { key: second.items[0]!.key, lease: second.lease + 1 }, // not its lease: lost, and left as it was
      { key: 'never-added', lease: first.lease },
    ];
    const r = await journals.doneMany('batch', finishing, 3);
    expect(r.done).toBe(2);
    expect(r.lost).toEqual([second.items[0]!.key, 'never-added']);
    expect(r.next?.items.map((i) => i.key)).toEqual(['j4', 'j5']); // two were left Waiting; a claim of 3 takes both
    expect((await journals.show('batch')).counts).toMatchObject({ waiting: 0, processing: 4 });
    // The stale one is still held by its real lease.
    expect((await journals.doneMany('batch', [{ key: second.items[0]!.key, lease: second.lease }])).lost).toEqual([]);
    expect(await journals.doneMany('batch', [{ key: 'j4', lease: r.next!.lease }])).toEqual({ done: 1, lost: [], next: null });
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      for (const bad of [
        { name: 'batch', items: [] },
        { name: 'batch', items: [['j5', 1]] },
        { name: 'batch', items: [{ key: 'j5' }] },
        { name: 'batch', items: [{ key: 'j5', lease: 0 }] },
        { name: 'batch', items: [{ key: 'j5', lease: 1, extra: true }] },
        { name: 'batch', items: Array.from({ length: 1001 }, () => ({ key: 'j5', lease: 1 })) },
        { name: 'batch', items: [{ key: 'j5', lease: 1 }], claim: 0 },
      ]) {
        expect((await wire.request('journal.doneMany', bad)).error?.code, JSON.stringify(bad).slice(0, 80)).toBe('BAD_REQUEST');
      }
      expect((await wire.request('journal.doneMany', { name: 'missing', items: [{ key: 'a', lease: 1 }] })).error?.code).toBe('NOT_FOUND');
    } finally {
      wire.terminate();
    }
    expect((await journals.show('batch')).counts).toMatchObject({ waiting: 0, processing: 2 });
  });

  it('doneMany with holdMs rides in the entry of the claim waiting for work, is answered as doneMany, and goes alone when no claim comes', async () => {
    const { url, journals } = await start();
    await journals.create('held', { timeoutMs: 60_000 });
    await journals.add('held', [{ key: 'a', data: 1 }, { key: 'b', data: 2 }]);
    const first = await journals.claim('held', { max: 2 });
    // A claim waits for work; the acknowledgements sent after it are held for its entry.
    const claimer = journals.claim('held', { max: 5, waitMs: 20_000 });
    const sent = performance.now();
    const order: string[] = [];
    const acks = journals.doneManyHeld('held', [{ key: 'a', lease: first.lease }, { key: 'b', lease: first.lease + 1 }], 1000).finally(() => order.push('acks'));
    const stranger = journals.doneManyHeld('held', [{ key: 'never-added', lease: first.lease }], 1000);
    await journals.add('held', [{ key: 'c', data: 3 }]); // wakes the claim, which carries them
    order.push('added');
    const next = await claimer;
    expect(next.items.map((i) => i.key)).toEqual(['c']);
    expect(await acks).toEqual({ done: 1, lost: ['b'] }); // b's lease was not that one: left as it was
    expect(await stranger).toEqual({ done: 0, lost: ['never-added'] });
    expect(order).toEqual(['added', 'acks']); // sent before the add, done after it: in the claim's entry
    // Answered when the claim took them, not when their hold of a second ran out.
    expect(performance.now() - sent).toBeLessThan(900);
    expect((await journals.show('held')).counts).toMatchObject({ waiting: 0, processing: 2 });
    // No claim waits: held for nothing, so answered at once.
    const alone = performance.now();
    expect(await journals.doneManyHeld('held', [{ key: 'b', lease: first.lease }], 1000)).toEqual({ done: 1, lost: [] });
    expect(performance.now() - alone).toBeLessThan(900);
    // A claim waits for an item due much later: the hold ends first and the acknowledgement goes alone.
    await journals.add('held', [{ key: 'later', data: 4, processAt: Date.now() + 60_000 }]);
    let claimed = false;
    const waiting = journals.claim('held', { waitMs: 3_000 }).then((c) => ((claimed = true), c));
    expect(await journals.doneManyHeld('held', [{ key: 'c', lease: next.lease }], 50)).toEqual({ done: 1, lost: [] });
    expect(claimed).toBe(false);
    expect((await journals.show('held')).counts).toMatchObject({ waiting: 1, processing: 0 });
    expect((await waiting).items).toEqual([]);
    const wire = await WireClient.connect(url, 'msgpack');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      for (const bad of [
        { name: 'held', items: [{ key: 'x', lease: 1 }], holdMs: 0 },
        { name: 'held', items: [{ key: 'x', lease: 1 }], holdMs: 1001 },
        { name: 'held', items: [{ key: 'x', lease: 1 }], holdMs: 10, claim: 1 },
        { name: 'held', items: [{ key: 'x', lease: 1 }], holdMs: 'soon' },
      ]) {
        expect((await wire.request('journal.doneMany', bad)).error?.code, JSON.stringify(bad)).toBe('BAD_REQUEST');
      }
    } finally {
      wire.terminate();
    }
  });

  it('a claim that ran out of time leaves nothing waiting: acknowledgements asking to be held go at once', async () => {
    const { journals } = await start();
    await journals.create('idle', { timeoutMs: 60_000 });
    await journals.add('idle', [{ key: 'a', data: 1 }]);
    const { lease } = await journals.claim('idle', { max: 1 });
    expect((await journals.claim('idle', { waitMs: 50 })).items).toEqual([]);
    const sent = performance.now();
    expect(await journals.doneManyHeld('idle', [{ key: 'a', lease }], 1000)).toEqual({ done: 1, lost: [] });
    expect(performance.now() - sent).toBeLessThan(900);
  });

  it('held acknowledgements that can no longer be done (their journal was dropped) fail with why, and the member stays up', async () => {
    const { journals } = await start();
    await journals.create('gone', { timeoutMs: 60_000 });
    await journals.add('gone', [{ key: 'a', data: 1 }]);
    const { lease } = await journals.claim('gone', { max: 1 });
    const waiting = journals.claim('gone', { waitMs: 2_000 }).catch((err: unknown) => err);
    const held = journals.doneManyHeld('gone', [{ key: 'a', lease }], 300).catch((err: unknown) => err);
    await journals.drop('gone');
    expect(await held).toMatchObject({ code: 'NOT_FOUND' });
    await waiting;
    await journals.create('still-here');
    expect((await journals.show('still-here')).counts).toMatchObject({ waiting: 0 });
  });

  it('the worker helper claims ahead of its handlers only as many items as it can start within a third of the timeout and within a second', async () => {
    const { journals } = await start();
    /** Runs `items` items through a worker whose handlers take `handlerMs`; returns the most Processing at once, sampled every `every` items. */
    const mostHeld = async (name: string, timeoutMs: number, items: number, handlerMs: number, concurrency: number, every: number): Promise<number> => {
      await journals.create(name, { timeoutMs });
      for (let i = 0; i < items; i += 500) await journals.add(name, Array.from({ length: Math.min(500, items - i) }, (_, j) => ({ key: `${name}${i + j}`, data: i + j })));
      let most = 0;
      let handled = 0;
      let finish: () => void = () => undefined;
      const done = new Promise<void>((resolve) => (finish = resolve));
      const worker = journals.process(
        name,
        async () => {
          if (handled % every === 0) most = Math.max(most, (await journals.show(name)).counts.processing);
          if (handlerMs > 0) await new Promise((resolve) => setTimeout(resolve, handlerMs));
          if (++handled === items) finish();
        },
        { concurrency, waitMs: 500 },
      );
      await done;
      await worker.stop();
      // Nothing timed out on the way (a timeout would have put an item back with its counter raised, or flagged it).
      expect((await journals.show(name)).counts).toMatchObject({ waiting: 0, processing: 0, flagged: 0 });
      return most;
    };
    // Fast handlers: it claims ahead, past the old default of 256, up to what one claim takes.
    const fast = await mostHeld('fast', 30_000, 1500, 0, 2, 50);
    expect(fast).toBeGreaterThan(256);
    expect(fast).toBeLessThanOrEqual(2 + 1000);
    // Handlers of 100 ms against a 600 ms timeout, 2 at a time: 4 more start within a third of it, so 2 + 4 held at most (of 20).
    expect(await mostHeld('slow', 600, 20, 100, 2, 1)).toBeLessThanOrEqual(6);
    // Handlers of 10 ms against a long timeout, one at a time: a second of work ahead, about 100 items, not the 1000 a claim may take.
    const steady = await mostHeld('steady', 60_000, 300, 10, 1, 20);
    expect(steady).toBeGreaterThan(1);
    expect(steady).toBeLessThanOrEqual(1 + 100);
  });

  it('is driven from the command line: vera journal create, add, claim, done, show, with --json and usage errors', async () => {
    const { url } = await start();
    const run = async (...argv: string[]) => {
      const io = captureIO();
      const code = await main(['journal', ...argv, '--server', url], io);
      return { code, out: io.out(), err: io.err() };
    };
    expect(await run('create', 'mail', '--timeout-ms', '30s', '--max-timeouts', '3')).toMatchObject({ code: 0, out: 'created journal mail\n' });
    expect(await run('add', 'mail', 'user-1', '{"to":"a@b"}', '--priority', '10')).toMatchObject({ code: 0, out: 'added item user-1\n' });
    expect(await run('add', 'mail', 'user-1', '{"to":"c@d"}', '--priority', '50')).toMatchObject({ code: 0, out: 'merged into the waiting item user-1\n' });
    const claimed = await run('claim', 'mail', '--max', '5', '--json');
    expect(claimed.code).toBe(0);
    const claim = JSON.parse(claimed.out) as { lease: number; items: Array<{ key: string; data: unknown; priority: number }> };
    expect(claim.items).toEqual([expect.objectContaining({ key: 'user-1', data: { to: 'c@d' }, priority: 10 })]);
    expect(await run('done', 'mail', 'user-1', String(claim.lease + 1))).toMatchObject({ code: 1, err: expect.stringContaining('CONFLICT') });
    expect(await run('done', 'mail', 'user-1', String(claim.lease))).toMatchObject({ code: 0 });
    const shown = JSON.parse((await run('show', 'mail', '--json')).out) as { settings: { timeoutMs: number; maxTimeouts: number }; counts: { waiting: number } };
    expect(shown).toMatchObject({ settings: { timeoutMs: 30_000, maxTimeouts: 3 }, counts: { waiting: 0, processing: 0 } });
    expect(await run('add', 'mail', 'k', '1', '--priority', '300')).toMatchObject({ code: 2, err: expect.stringContaining('--priority') });
    expect(await run('frob', 'mail')).toMatchObject({ code: 2, err: expect.stringContaining('unknown journal subcommand') });
    expect(await run('show', 'no such')).toMatchObject({ code: 2 });
    expect(await run('show', 'missing')).toMatchObject({ code: 1, err: expect.stringContaining('NOT_FOUND') });
    expect(await run('limits', '--max-journals', '50')).toMatchObject({ code: 0, out: '1 journals, at most 50\n' });
    expect(await run('limits', '--max-journals', 'lots')).toMatchObject({ code: 2 });
    const flags = JSON.parse((await run('flags', 'mail', '--json')).out) as { events: unknown[]; next: number; missed: boolean };
    expect(flags).toMatchObject({ events: [], missed: false });
    // Nothing flagged since: only the cursor, which moves on with whatever else the member applied (this CLI's own session, for one).
    const later = await run('flags', 'mail', '--after', String(flags.next));
    expect(later).toMatchObject({ code: 0, out: expect.stringMatching(/^next: --after \d+\n$/) });
    expect(Number(/\d+/.exec(later.out)![0])).toBeGreaterThanOrEqual(flags.next);
    // release: a failure unless --not-failed; past maxTimeouts (set to 1 here) it is flagged.
    expect(await run('configure', 'mail', '--max-timeouts', '1')).toMatchObject({ code: 0 });
    await run('add', 'mail', 'f', '1', '--priority', '0');
    for (const [flags, out] of [[['--not-failed'], 'released f\n'], [[], 'released f\n'], [[], 'released f: flagged (too many failures)\n']] as const) {
      const c = JSON.parse((await run('claim', 'mail', '--json')).out) as { lease: number };
      expect(await run('release', 'mail', 'f', String(c.lease), ...flags)).toMatchObject({ code: 0, out });
    }
  });

  it('answers HTTP reads of journals and reports per-journal metrics', async () => {
    const { url, journals } = await start();
    const base = url.replace('ws://', 'http://');
    await journals.create('jobs', { timeoutMs: 60_000 });
    await journals.add('jobs', [{ key: 'a', data: 1 }, { key: 'b', data: 2 }, { key: 'later', data: 3, processAt: Date.now() + 3_600_000 }]);
    await journals.claim('jobs');
    const list = (await (await fetch(`${base}/v1/journals`)).json()) as { journals: Array<{ name: string; counts: { waiting: number; processing: number } }> };
    expect(list.journals).toMatchObject([{ name: 'jobs', counts: { waiting: 2, processing: 1 } }]);
    expect(await (await fetch(`${base}/v1/journals/jobs`)).json()).toMatchObject({ name: 'jobs', settings: { timeoutMs: 60_000 } });
    expect(await (await fetch(`${base}/v1/journals/jobs/flagged`)).json()).toEqual({ items: [] });
    const missing = await fetch(`${base}/v1/journals/nope`);
    expect(missing.status).toBe(404);
    expect((await fetch(`${base}/v1/journals/jobs/flagged?limit=abc`)).status).toBe(400);
    expect((await fetch(`${base}/v1/journals/jobs/other`)).status).toBe(404);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('vera_journal_items{journal="jobs",status="waiting"} 2');
    expect(metrics).toContain('vera_journal_items{journal="jobs",status="processing"} 1');
    expect(metrics).toContain('vera_journal_due{journal="jobs"} 1');
    expect(metrics).toContain('vera_journal_claimed_total{journal="jobs"} 1');
    expect(metrics).toMatch(/vera_journal_added_total\{journal="jobs"\} 3/);
    expect(metrics).toContain('vera_proposals_total'); // the server's own metrics are still there
  });
});
