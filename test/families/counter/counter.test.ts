// The counter family (the kit's example plugin) on a real member in this process:
// typed ops through the client library and the CLI, refusals that change nothing,
// concurrent adds that lose no update, and values that survive a restart.
import { afterEach, describe, expect, it } from 'vitest';
import { CounterClient } from '../../../src/families/counter/client.js';
import { closeKeepingData, startServer, stopServer } from '../../support/member.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { WireClient } from '../../server/wire-client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';

afterEach(async () => {
  await stopServer();
});

async function start(dataDir?: string): Promise<{ url: string; counters: CounterClient; dataDir: string }> {
  const { url, client, dataDir: dir } = await startServer(dataDir === undefined ? {} : { dataDir });
  const counters = new CounterClient(client);
  await untilCommandVersion(() => counters.get('warm-up'));
  return { url, counters, dataDir: dir };
}

describe('counters', () => {
  it('adds, compares-and-sets, reads and removes, and refuses bad input without a change', async () => {
    const { counters } = await start();
    expect(await counters.get('orders')).toEqual({ name: 'orders', value: 0, exists: false });
    expect((await counters.add('orders')).value).toBe(1);
    expect((await counters.add('orders', 41)).value).toBe(42);
    expect((await counters.add('orders', -2)).value).toBe(40);
    await expect(counters.add('orders', 1, { ifValue: 39 })).rejects.toMatchObject({ code: 'CONFLICT', message: 'counter orders is 40, not 39' });
    expect((await counters.add('orders', 1, { ifValue: 40 })).value).toBe(41);
    expect(await counters.get('orders', { stale: true })).toEqual({ name: 'orders', value: 41, exists: true });

    await expect(counters.add('bad name!', 1)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('name must be') });
    await expect(counters.add('orders', 1.5)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('delta must be an integer') });
    await expect(counters.add('orders', Number.MAX_SAFE_INTEGER)).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('safe integer range') });
    expect((await counters.get('orders')).value).toBe(41);

    expect(await counters.remove('orders')).toBe(true);
    expect(await counters.remove('orders')).toBe(false);
    expect((await counters.get('orders')).exists).toBe(false);
  });

  it('loses no update when many adds share a batch, and keeps values across a restart', async () => {
    const { counters, dataDir } = await start();
    const adds = await Promise.all(Array.from({ length: 200 }, () => counters.add('hits')));
    // Every add saw the one before it: 200 distinct results, 1 to 200.
    expect(new Set(adds.map((a) => a.value)).size).toBe(200);
    expect(Math.max(...adds.map((a) => a.value))).toBe(200);
    await counters.add('other', 7);
    await closeKeepingData();
    const again = await start(dataDir);
    expect((await again.counters.get('hits')).value).toBe(200);
    expect((await again.counters.get('other')).value).toBe(7);
  });

  it('checks a raw frame with the same schema: unknown fields and wrong types are refused by name', async () => {
    const { url, counters } = await start();
    await counters.add('raw', 5);
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello();
      expect(await wire.request('counter.add', { name: 'raw', delta: 1, extra: true })).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST', message: "unexpected field 'extra'" } });
      expect(await wire.request('counter.get', { name: 'raw', consistency: 'sometimes' })).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
      expect(await wire.request('counter.get', { name: 'raw' })).toMatchObject({ ok: true, value: 5, exists: true });
    } finally {
      await wire.close();
    }
    expect((await counters.get('raw')).value).toBe(5);
  });

  it('reaches the command line through the registry alone: vera counter add|get|remove', async () => {
    const { url } = await start();
    const run = async (...argv: string[]): Promise<{ code: number; out: string; err: string }> => {
      const io = captureIO();
      const code = await main([...argv, '--server', url], io);
      return { code, out: io.out(), err: io.err() };
    };
    expect(await run('counter', 'add', 'jobs', '--by', '5')).toMatchObject({ code: 0, out: '5\n' });
    expect(await run('counter', 'add', 'jobs', '--by=-2', '--if-value', '5')).toMatchObject({ code: 0, out: '3\n' });
    expect(JSON.parse((await run('counter', 'get', 'jobs', '--json')).out)).toEqual({ name: 'jobs', value: 3, exists: true });
    const refused = await run('counter', 'add', 'jobs', '--if-value', '9');
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain('counter jobs is 3, not 9');
    expect(await run('counter', 'remove', 'jobs')).toMatchObject({ code: 0, out: 'removed jobs\n' });
  });
});
