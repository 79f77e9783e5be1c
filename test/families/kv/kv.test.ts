// put, transactions and leases (issue 17) on a real server in this process, on
// loopback: through the client library, and refusals through the raw wire.
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { KvClient } from '../../../src/families/kv/client.js';
import { MAX_REMOVED } from '../../../src/families/kv/apply.js';
import { LeaseClient } from '../../../src/families/lease/client.js';
import { startServer, stopServer, collectEvents } from '../../support/member.js';
import { untilCommandVersion } from '../../server/fixture.js';
import { WireClient } from '../../server/wire-client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';

const clients: VeraClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await stopServer();
});

async function start(): Promise<{ url: string; kv: KvClient; leases: LeaseClient; client: VeraClient }> {
  const { url, client } = await startServer({ limits: { itemsPerList: 50 }, sessionTimeoutMinMs: 100 });
  const kv = new KvClient(client);
  await untilCommandVersion(() => kv.txn({}));
  return { url, kv, leases: new LeaseClient(client), client };
}

async function open(url: string): Promise<VeraClient> {
  const c = await connect(url, { timeoutMs: 10_000 });
  clients.push(c);
  return c;
}

describe('put', () => {
  it('sets a list to one value in one entry, keeps the newest N when asked, and compares-and-sets', async () => {
    const { kv, client, url } = await start();
    const watcher = await open(url);
    for (let i = 0; i < 3; i++) await client.push('/config/db', { old: i }, { persistent: true, watch: false });
    const seen = collectEvents(watcher);
    await watcher.watch('/config/db');
    const put = await kv.put('/config/db', { url: 'pg://a' });
    expect(put.deleted).toBe(3);
    expect(put.item).toMatchObject({ owner: null, data: { url: 'pg://a' } });
    expect((await client.get('/config/db')).items.map((i) => i.data)).toEqual([{ url: 'pg://a' }]);
    // Watchers see what it was: three deletes and a push, all of one entry.
    await expect.poll(() => seen.length).toBe(4);
    expect(seen.map((e) => e.type)).toEqual(['delete', 'delete', 'delete', 'push']);
    expect(new Set(seen.map((e) => e.index))).toEqual(new Set([put.item.index]));

    const second = await kv.put('/config/db', { url: 'pg://b' }, { keep: 2 });
    expect(second.deleted).toBe(0);
    const third = await kv.put('/config/db', { url: 'pg://c' }, { keep: 2 });
    expect(third.deleted).toBe(1);
    expect((await client.get('/config/db')).items.map((i) => i.data)).toEqual([{ url: 'pg://b' }, { url: 'pg://c' }]);

    await expect(kv.put('/config/db', { url: 'stale' }, { ifLastIndex: second.item.index })).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(`is ${third.item.index}, not ${second.item.index}`) });
    expect((await kv.put('/config/db', { url: 'pg://d' }, { ifLastIndex: third.item.index })).item.data).toEqual({ url: 'pg://d' });
    expect((await kv.put('/config/new', 1, { ifLastIndex: 0 })).item.data).toBe(1); // 0: only if the list is empty
    // A full list (itemsPerList 50 here) can still be put to: the put leaves at most `keep`.
    for (let i = 0; i < 50; i++) await client.push('/config/full', i, { persistent: true, watch: false });
    expect((await kv.put('/config/full', 'one')).deleted).toBe(50);
  });

  it('writes persistent values by default (they outlive the session) and ephemeral ones when asked', async () => {
    const { url } = await start();
    const writer = await open(url);
    const kv = new KvClient(writer);
    await kv.put('/svc/persistent', 'stays');
    await kv.put('/svc/ephemeral', 'goes', { ephemeral: true });
    await writer.close();
    const reader = await open(url);
    expect((await reader.get('/svc/persistent')).items).toHaveLength(1);
    expect((await reader.get('/svc/ephemeral')).items).toHaveLength(0);
  });
});

describe('txn', () => {
  it('applies the success branch when every compare holds, the failure branch otherwise, with a result per write', async () => {
    const { kv, client } = await start();
    const leader = await kv.txn({
      compare: [{ path: '/election/leader', target: 'exists', value: false }],
      success: [
        { op: 'put', path: '/election/leader', data: 'me', ephemeral: true },
        { op: 'push', path: '/election/log', data: 'elected', persistent: true },
      ],
      failure: [{ op: 'push', path: '/election/log', data: 'lost', persistent: true }],
    });
    expect(leader.succeeded).toBe(true);
    expect(leader.results).toMatchObject([{ op: 'put', item: { data: 'me' }, deleted: 0 }, { op: 'push', item: { data: 'elected' } }]);
    const again = await kv.txn({
      compare: [{ path: '/election/leader', target: 'exists', value: false }],
      success: [{ op: 'put', path: '/election/leader', data: 'other' }],
      failure: [{ op: 'push', path: '/election/log', data: 'lost', persistent: true }],
    });
    expect(again).toMatchObject({ succeeded: false, results: [{ op: 'push', item: { data: 'lost' } }] });
    const newest = (await client.get('/election/log')).items.at(-1)!.index;
    const comparisons = await kv.txn({
      compare: [
        { path: '/election/log', target: 'newest', value: newest },
        { path: '/election/log', target: 'length', cmp: '>', value: 1 },
        { path: '/election/log', target: 'length', cmp: '<', value: 3 },
        { path: '/election/nothing', target: 'newest', cmp: '!=', value: 5 },
      ],
      success: [{ op: 'clear', path: '/election/log' }],
    });
    expect(comparisons).toEqual({ succeeded: true, results: [{ op: 'clear', deleted: 2 }] });
    expect(await kv.txn({ compare: [{ path: '/election/leader', target: 'length', cmp: '>', value: 1 }] })).toEqual({ succeeded: false, results: [] });
  });

  it('is all or nothing: a write that is refused leaves every list as it was', async () => {
    const { kv, client, url } = await start();
    const other = await open(url);
    const theirs = await other.push('/locks/a', 'theirs', { watch: false });
    await kv.put('/counter', 1);
    await expect(
      kv.txn({
        success: [
          { op: 'put', path: '/counter', data: 2 },
          { op: 'push', path: '/audit', data: 'changed', persistent: true },
          { op: 'delete', path: '/locks/a', index: theirs.index }, // another session's item
        ],
      }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('success[2] (delete /locks/a)') });
    expect((await client.get('/counter')).items.map((i) => i.data)).toEqual([1]);
    expect((await client.get('/audit')).items).toEqual([]);
    await expect(kv.txn({ success: [{ op: 'delete', path: '/counter', index: 999_999 }] })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('refuses malformed transactions before proposing, in both encodings', async () => {
    const { url } = await start();
    for (const encoding of ['json', 'msgpack'] as const) {
      const wire = await WireClient.connect(url, encoding);
      try {
        await wire.hello({ timeoutMs: 10_000 });
        for (const bad of [
          { success: [{ op: 'put', path: '/a', data: 1 }, { op: 'push', path: '/a', data: 2 }] },
          { success: [{ op: 'frob', path: '/a' }] },
          { success: [{ op: 'put', path: 'no-slash', data: 1 }] },
          { success: [{ op: 'put', path: '/a' }] },
          { success: [{ op: 'put', path: '/a', data: 1, keep: 0 }] },
          { success: [{ op: 'put', path: '/a', data: 1, lease: 'lease-abc' }] },
          { success: [{ op: 'push', path: '/a', data: 1, lease: 'lease-aaaaaaaaaaaaaaaaaaaaaa', persistent: true }] },
          { compare: [{ path: '/a', target: 'size', value: 1 }] },
          { compare: [{ path: '/a', target: 'newest', cmp: '>=', value: 1 }] },
          { compare: [{ path: '/a', target: 'newest' }] },
          { compare: Array.from({ length: 65 }, () => ({ path: '/a', target: 'exists', value: true })) },
          { success: [], extra: 1 },
        ]) {
          const reply = await wire.request('txn', bad);
          expect(reply.error?.code, JSON.stringify(bad).slice(0, 100)).toBe('BAD_REQUEST');
        }
        expect((await wire.request('put', { path: '/a', data: 'x'.repeat(2 * 1024 * 1024) })).error?.code).toBe('TOO_LARGE');
        expect((await wire.request('txn', { success: [{ op: 'push', path: '/a', data: 'x'.repeat(2 * 1024 * 1024) }] })).error?.code).toBe('TOO_LARGE');
        expect(await wire.call('get', { path: '/a' })).toMatchObject({ items: [] });
      } finally {
        wire.terminate();
      }
    }
  });
});

describe('leases', () => {
  it('keep their items while kept alive, and delete them (with events) when they expire', async () => {
    const { kv, leases, url } = await start();
    const watcher = await open(url);
    const seen = collectEvents(watcher);
    await watcher.watch('/svc', { prefix: true });
    // 1.5 s: a keep-alive every 500 ms leaves a loaded machine a full second of slack.
    const { lease, ttlMs } = await leases.grant(1500);
    expect(ttlMs).toBe(1500);
    await kv.put('/svc/a', 'endpoint-a', { lease });
    await kv.txn({ success: [{ op: 'push', path: '/svc/b', data: 'endpoint-b', lease }] });
    const kept = leases.keepAlive(lease, ttlMs);
    // Three TTLs: alive only through the keep-alives.
    const started = Date.now();
    await expect.poll(() => Date.now() - started, { timeout: 8000, interval: 250 }).toBeGreaterThan(3 * ttlMs);
    expect((await watcher.get('/svc/a')).items).toHaveLength(1);
    const shown = await leases.show(lease);
    expect(shown.remainingMs).toBeGreaterThan(0);
    expect(shown.remainingMs).toBeLessThanOrEqual(ttlMs);
    kept.stop();
    await expect.poll(async () => (await watcher.get('/svc/a')).items.length, { timeout: 8000 }).toBe(0);
    expect((await watcher.get('/svc/b')).items).toHaveLength(0);
    expect(seen.filter((e) => e.type === 'delete').map((e) => e.path).sort()).toEqual(['/svc/a', '/svc/b']);
    await expect(leases.keepAliveOnce(lease)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(kv.put('/svc/c', 'late', { lease })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('are independent of the connection that granted them, revoked at once on request, and cannot be resumed as sessions', async () => {
    const { url } = await start();
    const granter = await open(url);
    const { lease } = await new LeaseClient(granter).grant(60_000);
    await new KvClient(granter).put('/jobs/worker-1', 'busy', { lease });
    await granter.close(); // the lease is not the connection's session
    const other = await open(url);
    expect((await other.get('/jobs/worker-1')).items).toHaveLength(1);
    await new LeaseClient(other).revoke(lease);
    expect((await other.get('/jobs/worker-1')).items).toHaveLength(0);
    const wire = await WireClient.connect(url, 'json');
    try {
      const { lease: another } = await new LeaseClient(other).grant(60_000);
      const reply = await wire.request('hello', { session: another });
      expect(reply.ok).toBe(false);
      expect(reply.error?.code).toBe('UNAUTHORIZED');
    } finally {
      wire.terminate();
    }
    await expect(new LeaseClient(other).grant(10)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(new LeaseClient(other).revoke('not-a-lease')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe('the command line', () => {
  it('puts, runs a txn, grants and revokes a lease, and takes binary DATA with --bytes', async () => {
    const { url, client } = await start();
    const run = async (argv: string[], stdin?: string) => {
      const io = captureIO(stdin === undefined ? {} : { stdin });
      const code = await main([...argv, '--server', url], io);
      return { code, out: io.out(), err: io.err() };
    };
    expect(await run(['put', '/cli/a', '{"v":1}'])).toMatchObject({ code: 0, out: expect.stringMatching(/^put \/cli\/a #\d+ persistent \{"v":1\}\n$/) });
    expect(await run(['put', '/cli/a', '{"v":2}', '--keep', '2', '--json'])).toMatchObject({ code: 0, out: expect.stringContaining('"deleted":0') });
    expect(await run(['put', '/cli/a', '3', '--if-last-index', '1'])).toMatchObject({ code: 1, err: expect.stringContaining('CONFLICT') });
    expect((await client.get('/cli/a')).items.map((i) => i.data)).toEqual([{ v: 1 }, { v: 2 }]);

    const spec = JSON.stringify({ compare: [{ path: '/cli/lock', target: 'exists', value: false }], success: [{ op: 'put', path: '/cli/lock', data: 'me' }] });
    expect(await run(['txn', '-'], spec)).toMatchObject({ code: 0, out: expect.stringContaining('compares held: ran success') });
    expect(await run(['txn', spec])).toMatchObject({ code: 0, out: expect.stringContaining('a compare failed: ran failure') });
    expect(await run(['txn', '[1]'])).toMatchObject({ code: 2, err: expect.stringContaining('SPEC must be a JSON object') });

    const granted = await run(['lease', 'grant', '1m']);
    expect(granted.code).toBe(0);
    const lease = granted.out.trim();
    expect(lease).toMatch(/^lease-/);
    expect(await run(['put', '/cli/leased', '"x"', '--lease', lease])).toMatchObject({ code: 0 });
    expect(await run(['lease', 'show', lease, '--json'])).toMatchObject({ code: 0, out: expect.stringContaining('"ttlMs":60000') });
    expect(await run(['lease', 'keep-alive', lease])).toMatchObject({ code: 0, out: `${lease} kept alive for 60000 ms\n` });
    expect((await client.get('/cli/leased')).items).toHaveLength(1);
    expect(await run(['lease', 'revoke', lease])).toMatchObject({ code: 0, out: `revoked ${lease}\n` });
    expect((await client.get('/cli/leased')).items).toHaveLength(0);
    expect(await run(['lease', 'revoke', 'nope'])).toMatchObject({ code: 2 });
    expect(await run(['put', '/cli/x', '1', '--lease', lease, '--ephemeral'])).toMatchObject({ code: 2 });

    expect(await run(['put', '/cli/bin', '-', '--bytes'], 'raw\u0000bytes')).toMatchObject({ code: 0 });
    expect((await client.get('/cli/bin')).items[0]!.data).toEqual(Buffer.from('raw\u0000bytes'));
    expect(await run(['get', '/cli/bin', '--json'])).toMatchObject({ code: 0, out: expect.stringContaining(`{"$binary":"${Buffer.from('raw\u0000bytes').toString('base64')}"}`) });
  });
});

describe('bounds of put and clear', () => {
  it('a put never leaves a list longer than --items-per-list', async () => {
    const { kv, client } = await start(); // 50 items a list
    for (let i = 0; i < 50; i++) await client.push('/full', i, { persistent: true, watch: false });
    await expect(kv.put('/full', 'one more', { keep: 51 })).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    expect((await kv.put('/full', 'replaces one', { keep: 50 })).deleted).toBe(1);
    expect((await client.get('/full')).items).toHaveLength(50);
  });

  it('one put or clear removes at most MAX_REMOVED items: more is refused and changes nothing', async () => {
    const { url, client } = await startServer({ limits: { itemsPerList: MAX_REMOVED + 10 }, sessionTimeoutMinMs: 100 });
    const kv = new KvClient(client);
    await untilCommandVersion(() => kv.txn({}));
    const writer = await open(url);
    for (let i = 0; i < MAX_REMOVED + 10; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, MAX_REMOVED + 10 - i) }, (_, j) => writer.push('/long', i + j, { persistent: true, watch: false })));
    }
    await expect(kv.put('/long', 'alone')).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    await expect(kv.txn({ success: [{ op: 'clear', path: '/long' }] })).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    // Nothing went: keeping 10 of them (and the new one) removes exactly the bound.
    expect((await kv.put('/long', 'with the newest 10', { keep: 11 })).deleted).toBe(MAX_REMOVED);
    expect((await kv.txn({ success: [{ op: 'clear', path: '/long' }] })).results).toEqual([{ op: 'clear', deleted: 11 }]);
  }, 60_000);
});
