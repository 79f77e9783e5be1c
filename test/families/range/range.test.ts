// Ranges (issue 17) on a real server in this process: the paths below a prefix,
// recursively and page by page, and a list's items page by page, each page with
// the index it reflects; checked against what was written.
import { afterEach, describe, expect, it } from 'vitest';
import { RangeClient } from '../../../src/families/range/client.js';
import { startServer as startMember, stopServer } from '../../support/member.js';

async function startServer() {
  const started = await startMember();
  return { ...started, range: new RangeClient(started.client) };
}
import { WireClient } from '../../server/wire-client.js';
import { main } from '../../../src/cli/main.js';
import { captureIO } from '../../client/cli-io.js';

afterEach(stopServer);

describe('ranges', () => {
  it('list every non-empty list at or below a prefix, in order, page by page, and nothing beside it', async () => {
    const { client, range } = await startServer();
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

  it('keep a page of long paths within the reply budget, the rest on later pages', async () => {
    const started = await startMember({ limits: { frameBytes: 16 * 1024 } }); // replies of at most 8 KiB
    const range = new RangeClient(started.client);
    const long = (i: number): string => `/long/${String(i).padStart(3, '0')}-${'x'.repeat(900)}`;
    for (let i = 0; i < 30; i++) await started.client.push(long(i), i, { persistent: true, watch: false });
    const seen: string[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await range.paths('/long', { limit: 1000, ...(after === undefined ? {} : { after }) });
      pages++;
      expect(page.paths.reduce((n, p) => n + p.path.length, 0)).toBeLessThanOrEqual(8 * 1024 + 1000);
      seen.push(...page.paths.map((p) => p.path));
      if (page.next === undefined) break;
      after = page.next;
    }
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => long(i)));
    expect(pages).toBeGreaterThan(3);
  });

  it("page through a list's items after an index, within the reply budget, as a get would read them", async () => {
    const { client, range } = await startServer();
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

  it('vera paths prints every list below a prefix, across pages', async () => {
    const { url, client } = await startServer();
    for (const path of ['/cfg/a', '/cfg/b/c', '/cfg/d', '/other']) await client.push(path, 1, { persistent: true, watch: false });
    const io = captureIO();
    expect(await main(['paths', '/cfg', '--limit', '1', '--server', url], io)).toBe(0);
    expect(io.out().split('\n').filter((l) => l !== '').map((l) => l.split(' ')[0])).toEqual(['/cfg/a', '/cfg/b/c', '/cfg/d']);
    const json = captureIO();
    expect(await main(['paths', '/', '--json', '--server', url], json)).toBe(0);
    expect(json.out().trim().split('\n').map((l) => (JSON.parse(l) as { path: string }).path)).toEqual(['/cfg/a', '/cfg/b/c', '/cfg/d', '/other']);
  });

  it('refuse bad requests before reading anything', async () => {
    const { url } = await startServer();
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
