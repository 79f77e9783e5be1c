// The mutex (src/client/recipes/lock.ts) against a real server: mutual exclusion
// under concurrent read-modify-write, no herd when the lock changes hands, and a
// crashed holder's lock released by its session's expiry.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VeraClient } from '../../src/client/index.js';
import { Mutex, type LockHandle } from '../../src/client/recipes/index.js';
import { killAll, type VeraProcess } from '../support/vera-process.js';
import { Clients, expectOnlySuccessorWoke, fence, Instrument, parked, startServer, type Mark } from './support.js';

const SHORT_TIMEOUT_MS = 1000;
const SLACK_MS = 2000;

let server: VeraProcess;
let clients: Clients;

beforeAll(async () => {
  server = await startServer();
  clients = new Clients(server.clientPort);
});
afterEach(() => clients.closeAll());
afterAll(async () => {
  await killAll();
  server?.removeData();
});

/** One pass through the critical section as the contender saw it. */
interface Section {
  readonly contender: number;
  readonly token: number;
  readonly enteredAt: number;
  readonly leftAt: number;
}

/**
 * The critical section: read the counter (the newest item of a persistent list)
 * and push its successor. Without mutual exclusion two contenders read the same
 * value and one increment is lost, or a value appears twice.
 */
async function increment(client: VeraClient, counterPath: string): Promise<void> {
  const { items } = await client.get(counterPath);
  const current = (items.at(-1)?.data as number | undefined) ?? 0;
  await client.push(counterPath, current + 1, { persistent: true, watch: false });
}

/** Runs `rounds` locked increments and records each critical section. */
async function contend(client: VeraClient, contender: number, lockPath: string, counterPath: string, rounds: number, sections: Section[], inside: { now: number; max: number }): Promise<void> {
  const mutex = new Mutex(client, lockPath);
  for (let round = 0; round < rounds; round++) {
    await mutex.withLock(async (handle) => {
      inside.now++;
      inside.max = Math.max(inside.max, inside.now);
      const enteredAt = performance.now();
      try {
        await increment(client, counterPath);
      } finally {
        sections.push({ contender, token: handle.fencingToken, enteredAt, leftAt: performance.now() });
        inside.now--;
      }
    });
  }
}

function expectSerial(sections: readonly Section[]): void {
  const byEntry = [...sections].sort((a, b) => a.enteredAt - b.enteredAt);
  for (let i = 1; i < byEntry.length; i++) {
    // No overlap, and the holders came in the order of their fencing tokens.
    expect(byEntry[i]!.enteredAt).toBeGreaterThanOrEqual(byEntry[i - 1]!.leftAt);
    expect(byEntry[i]!.token).toBeGreaterThan(byEntry[i - 1]!.token);
  }
}

describe('mutex', () => {
  it('N contenders doing k read-modify-writes each on a shared counter never overlap and lose nothing', async () => {
    const contenders = 5;
    const rounds = 4;
    const lockPath = '/locks/counter';
    const counterPath = '/data/counter';
    const all = await Promise.all(Array.from({ length: contenders }, () => clients.open()));
    const sections: Section[] = [];
    const inside = { now: 0, max: 0 };

    await Promise.all(all.map((client, i) => contend(client, i, lockPath, counterPath, rounds, sections, inside)));

    const { items } = await all[0]!.get(counterPath);
    expect(items.map((i) => i.data)).toStrictEqual(Array.from({ length: contenders * rounds }, (_, i) => i + 1));
    expect(inside.max).toBe(1);
    expect(sections).toHaveLength(contenders * rounds);
    expectSerial(sections);
    expect((await all[0]!.get(lockPath)).items).toStrictEqual([]);
  });

  it('turns of one session on the same lock are serialised too', async () => {
    const client = await clients.open();
    const sections: Section[] = [];
    const inside = { now: 0, max: 0 };
    await Promise.all([0, 1, 2].map((i) => contend(client, i, '/locks/one-session', '/data/one-session', 3, sections, inside)));
    const { items } = await client.get('/data/one-session');
    expect(items.map((i) => i.data)).toStrictEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(inside.max).toBe(1);
    expectSerial(sections);
  });

  it('a release wakes only the next waiter; the others hear nothing and send nothing', async () => {
    const lockPath = '/locks/no-herd';
    const fencePath = '/locks/no-herd-fence';
    const writer = await clients.open();
    const holderClient = await clients.open();
    const waiters = await Promise.all([1, 2, 3].map(async () => new Instrument(await clients.open())));
    for (const w of waiters) await w.client.watch(fencePath);

    const held = await new Mutex(holderClient, lockPath).acquire({ data: 'holder' });
    const acquisitions: Array<Promise<LockHandle>> = [];
    for (const [i, w] of waiters.entries()) {
      const mark = w.mark();
      const acquisition = new Mutex(w.client, lockPath).acquire({ data: `waiter-${i}` });
      acquisition.catch(() => undefined);
      acquisitions.push(acquisition);
      await parked(w, mark, `waiter ${i} to queue`);
    }
    await fence(writer, fencePath, waiters);
    const marks = new Map<Instrument, Mark>(waiters.map((w) => [w, w.mark()]));

    await held.release();
    const next = await acquisitions[0]!;
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    expect(next.item).toMatchObject({ owner: waiters[0]!.client.session, data: 'waiter-0' });

    await fence(writer, fencePath, waiters);
    expectOnlySuccessorWoke(waiters[0]!, waiters.slice(1), marks, fencePath, holderClient.session);

    // The chain goes on: each release hands the lock to the next in line.
    await next.release();
    const third = await acquisitions[1]!;
    await third.release();
    const fourth = await acquisitions[2]!;
    expect(fourth.fencingToken).toBeGreaterThan(third.fencingToken);
    await fourth.release();
    expect((await writer.get(lockPath)).items).toStrictEqual([]);
  });

  it('the lock of a holder whose connection dropped is released once its session times out', async () => {
    const lockPath = '/locks/crash';
    const { client: holderClient, link } = await clients.openCuttable({ timeoutMs: SHORT_TIMEOUT_MS });
    const waiter = new Instrument(await clients.open());

    const held = await new Mutex(holderClient, lockPath).acquire();
    const mark = waiter.mark();
    const acquisition = new Mutex(waiter.client, lockPath).acquire();
    acquisition.catch(() => undefined);
    await parked(waiter, mark, 'the waiter to queue');

    const cutAt = performance.now();
    link.cut();
    const next = await acquisition;
    const releasedAfterMs = performance.now() - cutAt;

    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    // Not before the timeout (less the one heartbeat interval the server may have heard last), nor long after it.
    expect(releasedAfterMs).toBeGreaterThanOrEqual((SHORT_TIMEOUT_MS * 2) / 3 - 20);
    expect(releasedAfterMs).toBeLessThan(SHORT_TIMEOUT_MS + SLACK_MS);
    expect((await waiter.client.get(lockPath)).items.map((i) => i.owner)).toStrictEqual([waiter.client.session]);
    await next.release();
  });

  it('a waiter that gives up withdraws, and the lock passes over it', async () => {
    const lockPath = '/locks/give-up';
    const instrumented = async () => new Instrument(await clients.open());
    const [a, b, c] = await Promise.all([instrumented(), instrumented(), instrumented()]);
    const held = await new Mutex(a.client, lockPath).acquire();

    const abort = new AbortController();
    const bMark = b.mark();
    const bAcquisition = new Mutex(b.client, lockPath).acquire({ signal: abort.signal });
    bAcquisition.catch(() => undefined);
    await parked(b, bMark, 'b to queue');
    const cMark = c.mark();
    const cAcquisition = new Mutex(c.client, lockPath).acquire();
    cAcquisition.catch(() => undefined);
    await parked(c, cMark, 'c to queue');

    abort.abort();
    await expect(bAcquisition).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('aborted') });
    await held.release();
    const cHolds = await cAcquisition;
    expect((await a.client.get(lockPath)).items.map((i) => i.owner)).toStrictEqual([c.client.session]);
    await cHolds.release();
  });
});
