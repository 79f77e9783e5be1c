// The client library in a real browser (headless chromium, test/ui/browser.ts):
// a page served by a member imports /ui/vera-client.js, connects over the
// browser's own WebSocket (same origin, so the member's Origin check lets it
// in), pushes, watches a list and sees a push made by a Node client arrive,
// with MessagePack (binary frames) and with JSON (text frames). A page of
// another origin loads the module and connects only if the member allows that
// origin (--allowed-origins). The dashboard's own script is held back (it has
// its own tests), so the page runs only the code under test.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { startLeader } from '../server/fixture.js';
import { freePort, type VeraProcess } from '../support/vera-process.js';
import { PAGE_TIMEOUT_MS, useBrowser, withoutDashboard, withPage } from './browser.js';

let vp: VeraProcess;
let node: VeraClient;
/** The member's port, also reachable as http://localhost:PORT: a second origin for the same member. */
let port: number;

beforeAll(async () => {
  port = await freePort();
  vp = await startLeader({ clientPort: port, args: ['--allowed-origins', `http://localhost:${port}`] });
  node = await connect(vp.url);
});
afterAll(async () => {
  await node?.close();
  await vp?.stop();
});

const browser = useBrowser();

/** Records whether the page's WebSocket frames were binary or text, each way. */
function frameKinds(page: Page): { sent: Set<string>; received: Set<string> } {
  const kinds = { sent: new Set<string>(), received: new Set<string>() };
  page.on('websocket', (ws) => {
    ws.on('framesent', ({ payload }) => kinds.sent.add(typeof payload === 'string' ? 'text' : 'binary'));
    ws.on('framereceived', ({ payload }) => kinds.received.add(typeof payload === 'string' ? 'text' : 'binary'));
  });
  return kinds;
}

interface InPage {
  readonly session: string;
  readonly serverUrl: string;
  readonly item: { readonly index: number; readonly owner: string | null; readonly data: unknown };
  readonly watched: { readonly items: readonly unknown[] };
}

/** In the page: import the client from the member, connect with `encoding`, watch `watch`, push onto `pushTo`. */
function connectInPage(page: Page, encoding: 'msgpack' | 'json', watch: string, pushTo: string): Promise<InPage> {
  return page.evaluate(`(async () => {
    const vera = await import('/ui/vera-client.js');
    globalThis.vera = vera;
    const client = await vera.connect(location.origin, { encoding: ${JSON.stringify(encoding)}, connectTimeoutMs: 10000 });
    globalThis.client = client;
    globalThis.events = [];
    client.on('event', (e) => globalThis.events.push(e));
    const watched = await client.watch(${JSON.stringify(watch)});
    const item = await client.push(${JSON.stringify(pushTo)}, { from: 'the browser', encoding: ${JSON.stringify(encoding)}, text: 'ünïcødé ✓' });
    return { session: client.session, serverUrl: client.serverUrl, item, watched };
  })()`) as Promise<InPage>;
}

/** Waits in the page until the client has heard an event on `path`, and returns the events heard there. */
async function eventsOn(page: Page, path: string): Promise<Array<{ type: string; path: string; item: { index: number; data: unknown } }>> {
  await page.waitForFunction(`globalThis.events.some((e) => e.path === ${JSON.stringify(path)})`, undefined, { timeout: PAGE_TIMEOUT_MS });
  return (await page.evaluate(`globalThis.events.filter((e) => e.path === ${JSON.stringify(path)})`)) as Array<{ type: string; path: string; item: { index: number; data: unknown } }>;
}

describe('the client library in a browser', () => {
  for (const encoding of ['msgpack', 'json'] as const) {
    it(`a page served by the member imports /ui/vera-client.js, connects with ${encoding}, pushes, and hears a push made by a Node client`, async () => {
      let frames = { sent: new Set<string>(), received: new Set<string>() };
      await withPage(browser(), `${vp.httpUrl}/ui/`, async (page, problems) => {
        const shared = `/browser-test/${encoding}/shared`;
        const own = `/browser-test/${encoding}/from-page`;
        const inPage = await connectInPage(page, encoding, shared, own);
        expect(inPage.session).toMatch(/.+/);
        expect(inPage.serverUrl).toBe(`ws://127.0.0.1:${port}/v1/connect`);
        expect(inPage.watched.items).toEqual([]);

        // The page's push is there for everyone, owned by the page's session (ephemeral).
        const read = await node.get(own);
        expect(read.items.map((i) => i.data)).toEqual([{ from: 'the browser', encoding, text: 'ünïcødé ✓' }]);
        expect(read.items[0]!.owner).toBe(inPage.session);
        expect(inPage.item.index).toBe(read.items[0]!.index);

        // A Node client's push reaches the page as a notification, without anything else happening in the page.
        const pushed = await node.push(shared, { from: 'node', list: [1, 2, 3], nested: { deep: true } });
        const heard = await eventsOn(page, shared);
        expect(heard).toEqual([expect.objectContaining({ type: 'push', path: shared, item: expect.objectContaining({ index: pushed.index, data: { from: 'node', list: [1, 2, 3], nested: { deep: true } } }) })]);

        // And a delete, too.
        await node.delete(shared, pushed.index);
        await page.waitForFunction(`globalThis.events.some((e) => e.type === 'delete' && e.path === ${JSON.stringify(shared)})`);

        // Reads answered in the page: get and ls.
        const pageRead = (await page.evaluate(`globalThis.client.get(${JSON.stringify(own)})`)) as { items: Array<{ data: unknown }> };
        expect(pageRead.items).toHaveLength(1);
        const listed = (await page.evaluate(`globalThis.client.ls('/browser-test/${encoding}')`)) as { children: string[] };
        expect(listed.children).toContain('from-page'); // (the shared list is empty again, so it is not listed)

        // The frames really were of the encoding asked for, both ways.
        const kind = encoding === 'msgpack' ? 'binary' : 'text';
        expect([...frames.sent]).toEqual([kind]);
        expect([...frames.received]).toEqual([kind]);

        // Closing the client ends the session: its ephemeral item goes.
        await page.evaluate('globalThis.client.close()');
        expect((await node.get(own)).items).toEqual([]);
        expect(problems.errors).toEqual([]);
      }, { setup: async (page) => {
        await withoutDashboard(page);
        frames = frameKinds(page);
      } });
    });
  }

  it('exports the family clients, which work in the page', async () => {
    await withPage(browser(), `${vp.httpUrl}/ui/`, async (page) => {
      const result = (await page.evaluate(`(async () => {
        const vera = await import('/ui/vera-client.js');
        const names = ['connect', 'VeraClient', 'VeraError', 'JournalClient', 'AssignClient', 'HibernateClient', 'AuthClient', 'AuditClient', 'ObserveClient'];
        const missing = names.filter((n) => typeof vera[n] !== 'function');
        const client = await vera.connect(location.origin);
        try {
          const cluster = await new vera.ObserveClient(client).cluster();
          const journal = new vera.JournalClient(client);
          await journal.create('browser-jobs', {});
          await journal.add('browser-jobs', [{ key: 'k1', data: { n: 1 } }]);
          const info = await journal.show('browser-jobs');
          let refused = null;
          try { await client.push('no-leading-slash', 1); } catch (e) { refused = { name: e.name, code: e.code, isVeraError: e instanceof vera.VeraError }; }
          return { missing, members: cluster.members.length, waiting: info.counts.waiting, refused };
        } finally {
          await client.close();
        }
      })()`)) as { missing: string[]; members: number; waiting: number; refused: { code: string; isVeraError: boolean } | null };
      expect(result.missing).toEqual([]);
      expect(result.members).toBe(1);
      expect(result.waiting).toBe(1);
      expect(result.refused).toMatchObject({ code: 'BAD_REQUEST', isVeraError: true });
    }, { setup: withoutDashboard });
  });

  it('a page of an allowed origin loads the module and connects; a page of another origin is refused both', async () => {
    // http://localhost:PORT is another origin than http://127.0.0.1:PORT (the member allows it: --allowed-origins),
    // and so is http://other.localhost:PORT (chromium resolves *.localhost to loopback), which it does not allow.
    type Outcome = { across: boolean; session: string | null; refused: string | null };
    const tryFrom = (origin: string): Promise<Outcome> =>
      withPage(browser(), `${origin}/ui/`, (page) =>
        page.evaluate(`(async () => {
          let vera;
          let across = true;
          try { vera = await import('http://127.0.0.1:${port}/ui/vera-client.js'); }
          catch { across = false; vera = await import('/ui/vera-client.js'); } // the same file, from the page's own origin
          try {
            const c = await vera.connect('ws://127.0.0.1:${port}', { connectTimeoutMs: 1500 });
            const session = c.session;
            await c.close();
            return { across, session, refused: null };
          } catch (e) { return { across, session: null, refused: e.code + ': ' + e.message }; }
        })()`) as Promise<Outcome>,
      { setup: withoutDashboard },
      );
    const allowed = await tryFrom(`http://localhost:${port}`);
    expect(allowed.across).toBe(true); // CORS: the member lets other origins load its files
    expect(allowed.refused).toBeNull();
    expect(allowed.session).toMatch(/.+/);

    const other = await tryFrom(`http://other.localhost:${port}`);
    expect(other.across).toBe(false); // the member refuses any request of a page of that origin
    expect(other.session).toBeNull();
    expect(other.refused).toMatch(/^UNAVAILABLE: .*(cannot|could not) connect/);
    // The member said why: the module's request and the socket, refused for their origin.
    expect(vp.logs.some((l) => l.event === 'origin-refused' && l.origin === `http://other.localhost:${port}`)).toBe(true);
    expect(vp.logs.some((l) => l.event === 'origin-refused' && l.origin === `http://localhost:${port}`)).toBe(false);
  });
});
