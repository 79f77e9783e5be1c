// The worker helper against a stand-in for the server (calls that answer as the
// test says): its backoff after a failing handler, and stop() on an idle worker.
import { describe, expect, it } from 'vitest';
import { NOT_PROPOSED, VeraError } from '../../../src/protocol/index.js';
import { JournalWorker, type WorkerCalls, type WorkerOptions } from '../../../src/families/journal/client-worker.js';
import type { Claim, ClaimedItem } from '../../../src/families/journal/client.js';

interface Released {
  readonly key: string;
  readonly delayMs: number | null;
  readonly failure: boolean;
}

/** A server with one scripted claim answer after another; later claims wait until called off. */
function fakeServer(answers: Claim[]): { calls: WorkerCalls; released: Released[]; cancels: number; next: Promise<void> } {
  const released: Released[] = [];
  const state = { cancels: 0 };
  let callOff: (() => void) | null = null;
  let releasedOne!: () => void;
  const out = {
    released,
    get cancels() {
      return state.cancels;
    },
    next: new Promise<void>((r) => (releasedOne = r)),
    calls: {
      claim: () => {
        const answer = answers.shift();
        if (answer !== undefined) return Promise.resolve(answer);
        // Nothing due: the claim waits on the server until called off (a 30 s wait, in effect forever here).
        return new Promise<Claim>((resolve) => (callOff = () => resolve({ lease: 0, items: [] })));
      },
      doneMany: () => Promise.resolve({ lost: [], next: null }),
      doneManyHeld: () => Promise.resolve({ lost: [] }),
      extend: () => Promise.resolve(),
      release: (key: string, _lease: number, processAt: number | undefined, failure: boolean) => {
        released.push({ key, delayMs: processAt === undefined ? null : processAt - Date.now(), failure });
        releasedOne();
        return Promise.resolve();
      },
      cancelWait: () => {
        state.cancels++;
        const off = callOff;
        callOff = null;
        off?.();
        return Promise.resolve(off === null ? 0 : 1);
      },
      closed: false,
    } satisfies WorkerCalls,
  };
  return out;
}

const OPTIONS: WorkerOptions = { concurrency: 1, prefetch: 0, waitMs: 30_000, timeoutMs: 30_000, retryDelayMs: (n) => Math.min(60_000, 1000 * 2 ** n) };

function item(failures: number | undefined, timeouts = 0): ClaimedItem {
  return { key: 'job', data: null, priority: 0, processAt: 0, insertedAt: 0, timeouts, ...(failures === undefined ? {} : { failures }) };
}

describe('the worker helper', () => {
  for (const [failures, delayMs] of [[0, 1000], [1, 2000], [3, 8000], [6, 60_000], [12, 60_000]] as const) {
    it(`releases a failed item as a failure, due ${delayMs} ms later after ${failures} earlier failures (1 s doubling to 1 min)`, async () => {
      const server = fakeServer([{ lease: 5, items: [item(failures)] }]);
      const worker = new JournalWorker(server.calls, OPTIONS, () => Promise.reject(new Error('poison')));
      worker.start();
      await server.next;
      await worker.stop();
      expect(server.released).toHaveLength(1);
      expect(server.released[0]!.failure).toBe(true);
      // Within the time the test itself took between the release and this check.
      expect(server.released[0]!.delayMs).toBeGreaterThan(delayMs - 1000);
      expect(server.released[0]!.delayMs).toBeLessThanOrEqual(delayMs);
    });
  }

  it('counts from the timeouts when the server reports no failures (before command version 9)', async () => {
    const server = fakeServer([{ lease: 5, items: [item(undefined, 2)] }]);
    const worker = new JournalWorker(server.calls, OPTIONS, () => Promise.reject(new Error('poison')));
    worker.start();
    await server.next;
    await worker.stop();
    expect(server.released[0]!.delayMs).toBeGreaterThan(3000);
  });

  it('stop() on an idle worker calls off its waiting claim and returns without waiting it out', async () => {
    const server = fakeServer([]);
    const worker = new JournalWorker(server.calls, OPTIONS, () => Promise.resolve());
    worker.start();
    // The stand-in's claim would wait forever: stop() returns only because it is called off.
    await worker.stop();
    expect(server.cancels).toBe(1);
  });

  it('hands back items it holds but has not started as no failure when stopping', async () => {
    let release!: () => void;
    const blocked = new Promise<void>((r) => (release = r));
    const server = fakeServer([{ lease: 5, items: [{ ...item(0), key: 'first' }, { ...item(0), key: 'second' }] }]);
    const worker = new JournalWorker(server.calls, { ...OPTIONS, prefetch: 0 }, () => blocked);
    worker.start();
    await Promise.resolve();
    const stopped = worker.stop();
    release();
    await stopped;
    expect(server.released).toEqual([{ key: 'second', delayMs: null, failure: false }]);
  });

  it('claims again after its waiting claim is answered UNAVAILABLE by a closing member, and runs what it gets', async () => {
    // The client library sends a not-proposed refusal again on its own until its request
    // deadline; the worker still must not stop at one that reaches it.
    const closing = new VeraError('UNAVAILABLE', 'this member is closing: claim again on another member', { reason: NOT_PROPOSED, retryAfterMs: 100 });
    const answers: Array<() => Promise<Claim>> = [() => Promise.reject(closing), () => Promise.resolve({ lease: 7, items: [item(0)] })];
    let claims = 0;
    const server = fakeServer([]);
    const calls: WorkerCalls = {
      ...server.calls,
      claim: (max, waitMs) => {
        claims++;
        return (answers.shift() ?? (() => server.calls.claim(max, waitMs)))();
      },
    };
    let handled!: (key: string) => void;
    const ran = new Promise<string>((r) => (handled = r));
    const worker = new JournalWorker(calls, OPTIONS, (i) => (handled(i.key), Promise.resolve()));
    worker.start();
    expect(await ran).toBe('job');
    expect(claims).toBeGreaterThanOrEqual(2);
    await worker.stop();
  });
});

describe('the worker helper’s claims while the journal runs short', () => {
  /** Claims that wait until the test answers them, each with what it asked for. */
  function heldClaims(): { calls: WorkerCalls; out: Array<{ max: number; answer: (c: Claim) => void }> } {
    const out: Array<{ max: number; answer: (c: Claim) => void }> = [];
    const calls: WorkerCalls = {
      ...fakeServer([]).calls,
      claim: (max) => new Promise<Claim>((answer) => out.push({ max, answer })),
      cancelWait: () => {
        for (const c of out.splice(0)) c.answer({ lease: 0, items: [] });
        return Promise.resolve(1);
      },
    };
    return { calls, out };
  }

  it('keeps three claims waiting on the server once work trickles in, asking for its free handlers between them', async () => {
    // Jobs due closer together than a Raft round: with one claim out, each one falling due while
    // that claim's entry was in flight waited for its reply and a second round.
    const { calls, out } = heldClaims();
    const handled: string[] = [];
    const worker = new JournalWorker(calls, { ...OPTIONS, concurrency: 16, prefetch: 0 }, (i) => (handled.push(i.key), Promise.resolve()));
    worker.start();
    await expect.poll(() => out.length).toBe(1);
    expect(out[0]!.max).toBe(16);
    // One job came (fewer than asked): the journal runs short but is not idle.
    out.shift()!.answer({ lease: 3, items: [item(0)] });
    await expect.poll(() => out.length).toBe(3);
    expect(handled).toEqual(['job']);
    // Between them, the handlers free when they were sent (the job's may still have been running).
    const asked = out.reduce((n, c) => n + c.max, 0);
    expect(asked).toBeGreaterThanOrEqual(15);
    expect(asked).toBeLessThanOrEqual(16);
    expect(Math.min(...out.map((c) => c.max))).toBeGreaterThanOrEqual(5);
    // They all run out empty: the journal is idle, and one claim waits (one entry per waitMs).
    for (const c of out.splice(0)) c.answer({ lease: 4, items: [] });
    await expect.poll(() => out.length).toBe(1);
    expect(out[0]!.max).toBe(16);
    await worker.stop();
  });

  it('stop() calls off every claim it has out, one that was not waiting yet at the first call off too', async () => {
    const { calls, out } = heldClaims();
    let callOffs = 0;
    const worker = new JournalWorker(
      {
        ...calls,
        // The first call off finds all but the newest claim waiting (it is still on its way); later ones find it.
        cancelWait: () => {
          callOffs++;
          const now = callOffs === 1 ? out.splice(0, out.length - 1) : out.splice(0);
          for (const c of now) c.answer({ lease: 0, items: [] });
          return Promise.resolve(now.length);
        },
      },
      { ...OPTIONS, concurrency: 16, prefetch: 0 },
      () => Promise.resolve(),
    );
    worker.start();
    await expect.poll(() => out.length).toBe(1);
    out.shift()!.answer({ lease: 3, items: [item(0)] });
    await expect.poll(() => out.length).toBe(3);
    // Without a second call off the last claim would wait out its 30 s here (for ever, in this stand-in).
    await worker.stop();
    expect(callOffs).toBeGreaterThanOrEqual(2);
    expect(out).toEqual([]);
  });
});

describe('the worker helper’s prefetch with failing handlers', () => {
  it('counts the wait for a failed item’s release as handler time, so it does not claim far ahead of what it can start', async () => {
    // Every other item fails, and its release takes 100 ms (a busy cluster); the others finish at once.
    let n = 0;
    const asked: number[] = [];
    let releases = 0;
    let tenReleases!: () => void;
    const released = new Promise<void>((r) => (tenReleases = r));
    const supply = (max: number): Claim => {
      asked.push(max);
      return { lease: 1, items: Array.from({ length: max }, () => ({ ...item(0), key: `k${n++}` })) };
    };
    const calls: WorkerCalls = {
      claim: (max) => Promise.resolve(supply(max)),
      doneMany: (_items, claim) => Promise.resolve({ lost: [], next: claim === undefined || claim === 0 ? null : supply(claim) }),
      doneManyHeld: () => Promise.resolve({ lost: [] }),
      extend: () => Promise.resolve(),
      release: (_key, _lease, _at, failure) =>
        failure ? new Promise<void>((r) => setTimeout(() => (++releases === 10 && tenReleases(), r()), 100)) : Promise.resolve(),
      cancelWait: () => Promise.resolve(0),
      closed: false,
    };
    const worker = new JournalWorker(calls, { ...OPTIONS, concurrency: 2, prefetch: 1000, timeoutMs: 3000, serverRetries: true }, (i) =>
      Number(i.key.slice(1)) % 2 === 0 ? Promise.reject(new Error('fails')) : Promise.resolve(),
    );
    worker.start();
    await released;
    await worker.stop();
    // Two handlers start about 40 items a second here (half of them hold a handler 100 ms):
    // what they start within a second is tens of items, never the thousand a claim may take
    // (which a pace judged from the fast successes alone would ask for).
    expect(asked.length).toBeGreaterThan(3);
    expect(Math.max(...asked)).toBeLessThan(500);
  });
});
