// Watching from a past index (issue 17): a client that restarts and watches
// again from the last index it saw gets every event it missed with the reply,
// then live ones, with nothing lost or doubled; when the member no longer holds
// them (after its own restart) the reply says `missed` instead of lying.
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../../src/client/client.js';
import { WireClient } from '../../server/wire-client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';
import { closeKeepingData, startServer, stopServer, collectEvents } from '../../support/member.js';

afterEach(stopServer);

describe('watching from a past index', () => {
  it('replays what happened after it with the reply, then goes live, for exact and prefix watches', async () => {
    const { url, client: writer } = await startServer();
    const first = await writer.push('/h/a', 'one', { persistent: true, watch: false });
    const lastSeen = first.index;
    // What a watcher that went away would have missed: pushes, a delete, and a list it does not watch.
    const second = await writer.push('/h/a', 'two', { persistent: true, watch: false });
    await writer.push('/h/b/c', 'below', { persistent: true, watch: false });
    await writer.delete('/h/a', first.index);
    await writer.push('/elsewhere', 'x', { persistent: true, watch: false });

    const watcher = await connect(url, { timeoutMs: 10_000 });
    try {
      const live = collectEvents(watcher);
      const exact = await watcher.watch('/h/a', { since: lastSeen });
      expect(exact.missed).toBeUndefined();
      expect(exact.events!.map((e) => [e.type, e.path, e.item.data])).toEqual([
        ['push', '/h/a', 'two'],
        ['delete', '/h/a', 'one'],
      ]);
      expect(exact.items!.map((i) => i.data)).toEqual(['two']);
      const prefix = await watcher.watch('/h', { prefix: true, since: lastSeen });
      expect(prefix.events!.map((e) => [e.type, e.path])).toEqual([
        ['push', '/h/a'],
        ['push', '/h/b/c'],
        ['delete', '/h/a'],
      ]);
      // Live events follow from the watch's index, none of them a replayed one again.
      const after = await writer.push('/h/a', 'three', { persistent: true, watch: false });
      await expect.poll(() => live.filter((e) => e.item.index === after.index).length).toBeGreaterThan(0);
      expect(live.every((e) => e.index > prefix.index || e.index > exact.index)).toBe(true);
      expect(live.some((e) => e.item.index === second.index)).toBe(false);
      // From the watch's own index or later there is nothing to replay.
      expect((await watcher.watch('/h/a', { since: after.index + 1000 })).events).toBeUndefined();
    } finally {
      await watcher.close();
    }
    // vera watch --since prints the missed events after the list, then would go live (stopped here).
    const io = captureIO();
    const running = main(['watch', '/h/a', '--since', String(lastSeen), '--json', '--server', url], io);
    await io.waitForOut(/"three"/);
    io.stopNow();
    expect(await running).toBe(0);
    const lines = io.out().trim().split('\n').map((l) => JSON.parse(l) as { type: string; item?: { data: unknown } });
    expect(lines.map((l) => [l.type, l.item?.data])).toEqual([
      ['watch', undefined],
      ['push', 'two'],
      ['delete', 'one'],
      ['push', 'three'],
    ]);
  });

  it('says missed when the member no longer holds the events, and refuses a bad since', async () => {
    const { client, dataDir } = await startServer();
    const old = await client.push('/r/a', 1, { persistent: true, watch: false });
    await client.push('/r/a', 2, { persistent: true, watch: false });
    await closeKeepingData();
    const { client: again, url } = await startServer({ dataDir });
    const result = await again.watch('/r/a', { since: old.index });
    expect(result.missed).toBe(true);
    expect(result.events).toBeUndefined();
    expect(result.items!.map((i) => i.data)).toEqual([1, 2]); // re-read from here
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      for (const since of [-1, 1.5, 'x']) expect((await wire.request('watch', { path: '/r/a', since })).error?.code, String(since)).toBe('BAD_REQUEST');
    } finally {
      wire.terminate();
    }
  });
});
