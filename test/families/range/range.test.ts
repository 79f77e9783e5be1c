// Ranges (issue 17) on a real server in this process: the paths below a prefix,
// recursively and page by page, and a list's items page by page, each page with
// the index it reflects; checked against what was written.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../../src/client/client.js';
import { RangeClient } from '../../../src/families/range/client.js';
import type { ServerConfig } from '../../../src/server/config.js';
import { startServer, type RunningServer } from '../../../src/server/index.js';
import { WireClient } from '../../server/wire-client.js';

let server: RunningServer | null = null;
let client: VeraClient | null = null;
let dir = '';
afterEach(async () => {
  await client?.close();
  client = null;
  await server?.close();
  server = null;
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<{ url: string; client: VeraClient; range: RangeClient }> {
  dir = mkdtempSync(join(tmpdir(), 'vera-range-'));
  const config: ServerConfig = {
    id: 'n1',
    dataDir: dir,
    client: { host: '127.0.0.1', port: 0 },
    peer: { host: '127.0.0.1', port: 0 },
    peers: [{ id: 'n1', host: '127.0.0.1', peerPort: 0, clientPort: 0 }],
    join: false,
    secret: null,
    logLevel: 'silent',
    sessionTimeout: { min: 1000, max: 60_000, default: 10_000 },
    limits: {
      dataBytes: 1024 * 1024,
      frameBytes: 16 * 1024 * 1024,
      pathBytes: 1024,
      sessionsMax: 100,
      sessionsPerAddress: 100,
      watchesPerSession: 100,
      itemsPerSession: 1000,
      bytesPerSession: 1024 * 1024,
      itemsPerList: 1000,
      diskReserveBytes: 1024 * 1024,
      inflightPerConnection: 64,
      connectionsMax: 100,
      connectionsPerAddress: 100,
      helloTimeoutMs: 10_000,
    },
    compaction: { everyEntries: 10_000, keepEntries: 1000 },
  };
  server = await startServer(config, { logger: pino({ level: 'silent' }) });
  const url = `ws://127.0.0.1:${server.clientPort}`;
  client = await connect(url, { timeoutMs: 10_000 });
  return { url, client, range: new RangeClient(client) };
}

describe('ranges', () => {
  it('list every non-empty list at or below a prefix, in order, page by page, and nothing beside it', async () => {
    const { client, range } = await start();
    const written = ['/app', '/app/a', '/app/a/x', '/app/b', '/app/b/c/d', '/app-other', '/apple', '/zzz'];
    const newest = new Map<string, number>();
    for (const path of written) {
      await client.push(path, 1, { persistent: true, watch: false });
      newest.set(path, (await client.push(path, 2, { persistent: true, watch: false })).index);
    }
    const below = ['/app', '/app/a', '/app/a/x', '/app/b', '/app/b/c/d'];
    const seen: Array<{ path: string; newest: number }> = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await range.paths('/app', { limit: 2, ...(after === undefined ? {} : { after }) });
      expect(page.index).toBeGreaterThanOrEqual(newest.get('/zzz')!);
      seen.push(...page.paths);
      pages++;
      if (page.next === undefined) break;
      after = page.next;
    }
    expect(seen).toEqual(below.map((path) => ({ path, newest: newest.get(path)! })));
    expect(pages).toBe(3);
    const all: string[] = [];
    for await (const p of range.allPaths('/')) all.push(p.path);
    expect(all).toEqual([...written].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect((await range.paths('/app/b/c')).paths.map((p) => p.path)).toEqual(['/app/b/c/d']);
    expect(await range.paths('/nothing')).toMatchObject({ paths: [] });
    // An emptied list is gone from the listing.
    for (const item of (await client.get('/app/a')).items) await client.delete('/app/a', item.index);
    expect((await range.paths('/app')).paths.map((p) => p.path)).toEqual(['/app', '/app/a/x', '/app/b', '/app/b/c/d']);
  });

  it("page through a list's items after an index, within the reply budget, as a get would read them", async () => {
    const { client, range } = await start();
    for (let i = 0; i < 25; i++) await client.push('/log', { n: i }, { persistent: true, watch: false });
    const { items: whole } = await client.get('/log');
    const paged = [];
    let after = 0;
    for (;;) {
      const page = await range.items('/log', { after, limit: 10 });
      paged.push(...page.items);
      if (page.next === undefined) break;
      after = page.next;
    }
    expect(paged).toEqual(whole);
    const fromMiddle = await range.items('/log', { after: whole[19]!.index });
    expect(fromMiddle.items.map((i) => (i.data as { n: number }).n)).toEqual([20, 21, 22, 23, 24]);
    expect(fromMiddle.next).toBeUndefined();
    const all = [];
    for await (const item of range.allItems('/log', { limit: 7, stale: true })) all.push(item);
    expect(all).toEqual(whole);
    expect(await range.items('/empty')).toMatchObject({ items: [] });
  });

  it('refuse bad requests before reading anything', async () => {
    const { url } = await start();
    const wire = await WireClient.connect(url, 'json');
    try {
      await wire.hello({ timeoutMs: 10_000 });
      for (const [op, bad] of [
        ['range.paths', { prefix: 'app' }],
        ['range.paths', { prefix: '/app', after: '/other' }],
        ['range.paths', { prefix: '/app', limit: 0 }],
        ['range.paths', { prefix: '/app', limit: 1001 }],
        ['range.paths', { prefix: '/app', consistency: 'sometimes' }],
        ['range.items', { path: '/' }],
        ['range.items', { path: '/a', after: -1 }],
        ['range.items', { path: '/a', extra: true }],
      ] as const) {
        expect((await wire.request(op, bad)).error?.code, `${op} ${JSON.stringify(bad)}`).toBe('BAD_REQUEST');
      }
    } finally {
      wire.terminate();
    }
  });
});
