// A member's journal instance closing: the claims waiting there (long polls), the
// acknowledgements held for their entries and the feeds' watchers are answered at once
// with UNAVAILABLE (not proposed: the client sends them again elsewhere), and no timer is
// left. Before, close stopped only the due timers: a claim waited out its waitMs on a
// member that was going away, holding its timer.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { journal } from '../../../src/families/journal/index.js';
import { createServer, plugin as journalPlugin, type JournalServer } from '../../../src/families/journal/server.js';
import { JournalClient } from '../../../src/families/journal/client.js';
import { startServer, stopServer } from '../../support/member.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { WireClient, type Reply } from '../../server/wire-client.js';

afterEach(async () => {
  await stopServer();
  vi.restoreAllMocks();
});

/** A member whose journal instance the test holds. */
async function start(): Promise<{ url: string; journals: JournalClient; instance: () => JournalServer }> {
  let instance: JournalServer | null = null;
  const wrapped: typeof journalPlugin = { ...journalPlugin, createServer: (host) => (instance = createServer(host)) };
  // The registered family itself (the store keys its state by it), with the plugin that keeps its instance.
  vi.spyOn(journal, 'plugin').mockImplementation(async () => wrapped as never);
  const { url, client } = await startServer();
  const journals = new JournalClient(client);
  await untilCommandVersion(() => journals.list());
  return {
    url,
    journals,
    instance: () => {
      if (instance === null) throw new Error('no journal instance was made');
      return instance;
    },
  };
}

function expectClosing(reply: Reply): void {
  expect(reply.ok).toBe(false);
  expect(reply.error).toMatchObject({ code: 'UNAVAILABLE', reason: 'not-proposed', message: expect.stringMatching(/member is closing/) });
}

describe('a closing journal instance', () => {
  it('answers its waiting claims, held acknowledgements and feed watchers at once, and holds no timer', async () => {
    const { url, journals, instance } = await start();
    await journals.create('later');
    await journals.create('idle');
    // An item due in an hour: the claim of 'later' waits with a due timer armed for it.
    await journals.add('later', [{ key: 'a', data: 1, processAt: Date.now() + 3_600_000 }]);
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      const waitMs = 60_000;
      const replies = [
        wire.request('journal.claim', { name: 'later', max: 1, waitMs }, 'json', 10_000),
        wire.request('journal.claim', { name: 'idle', max: 5, waitMs }, 'json', 10_000),
        wire.request('journal.flags', { name: 'idle', waitMs }, 'json', 10_000),
        wire.request('journal.events', { name: 'later', waitMs }, 'json', 10_000),
      ];
      const member = instance().member;
      await expect.poll(() => member.holding()).toMatchObject({ claims: 2, watchers: 2 });
      // Held while the claim of 'later' waits (it would ride in that claim's entry).
      replies.push(wire.request('journal.doneMany', { name: 'later', items: [{ key: 'x', lease: 1 }], holdMs: 1000 }, 'json', 10_000));
      await expect.poll(() => member.holding().acks).toBe(1);
      expect(member.holding().timers).toBeGreaterThanOrEqual(2 + 1 + 1 + 2); // the claims', the due timer, the hold's, the watchers'

      const closedAt = performance.now();
      instance().close!();
      const answered = await Promise.all(replies);
      // A minute's wait cut short: answered as soon as the member closed (bounded loosely, for a
      // loaded machine), and the held acknowledgement refused rather than sent alone at its hold's end.
      expect(performance.now() - closedAt).toBeLessThan(5_000);
      // The claims that waited are answered as called off (a worker then sends a new claim, with a
      // deadline of its own, wherever its connection goes); the rest are refused as not proposed.
      const [later, idle, ...rest] = answered;
      for (const claim of [later!, idle!]) expect(claim).toMatchObject({ ok: true, lease: 0, items: [] });
      for (const reply of rest) expectClosing(reply);
      expect(member.holding()).toEqual({ claims: 0, acks: 0, watchers: 0, timers: 0 });

      // Nothing waits on it afterwards: a claim arriving now is refused at once, and a hold too.
      expectClosing(await wire.request('journal.claim', { name: 'idle', waitMs }, 'json', 5_000));
      expectClosing(await wire.request('journal.flags', { name: 'idle', waitMs }, 'json', 5_000));
      expect(member.holding()).toEqual({ claims: 0, acks: 0, watchers: 0, timers: 0 });
      // Closing again (the server's own close, after the test's) changes nothing.
      instance().close!();
    } finally {
      wire.terminate();
    }
  });

  it('on the server’s close, a claim waiting over the wire gets that answer before its connection closes', async () => {
    const { url, journals, instance } = await start();
    await journals.create('idle');
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      const reply = wire.request('journal.claim', { name: 'idle', max: 5, waitMs: 60_000 }, 'json', 10_000);
      await expect.poll(() => instance().member.holding().claims).toBe(1);
      await stopServer();
      // Before, the connections closed in the same turn as the instance: the reply never left.
      expect(await reply).toMatchObject({ ok: true, lease: 0, items: [] });
      expect(wire.closed).toMatchObject({ code: 1001 });
    } finally {
      wire.terminate();
    }
  });
});
