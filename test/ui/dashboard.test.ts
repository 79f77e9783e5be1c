// The dashboard in a real headless browser (Debian's chromium driven by
// playwright-core) against real servers: it logs in with Vera's own users,
// shows another client's push in the live tree without a reload, loses a
// session's ephemeral item when the session is killed, pages through a list of
// 10,000 items, is refused what its user's role forbids, and keeps working
// across a kill -9 of the leader.
import type { Page } from 'playwright-core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { Cluster } from '../failover/cluster.js';
import { securedServer } from '../security/secured.js';
import { WireClient } from '../server/wire-client.js';
import { killAll, type VeraProcess } from '../support/vera-process.js';
import { useBrowser } from './browser.js';

const browser = useBrowser();
let vp: VeraProcess | null = null;
let cluster: Cluster | null = null;
const clients: VeraClient[] = [];

afterAll(async () => {
  await killAll();
  cluster?.removeData();
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  await vp?.stop();
  vp?.removeData();
  vp = null;
});

async function open(url: string, options: Parameters<typeof connect>[1] = {}): Promise<VeraClient> {
  const c = await connect(url, { timeoutMs: 30_000, ...options });
  clients.push(c);
  return c;
}

/** What the browser refused a page under its Content-Security-Policy (it says so on the console). */
const violations = new WeakMap<Page, string[]>();
const cspViolations = (page: Page): string[] => violations.get(page) ?? [];

/** A page of the dashboard served by the member at `httpUrl`, logged in as `user` when given. */
async function dashboard(httpUrl: string, user?: { name: string; password: string }): Promise<Page> {
  const page = await browser().newPage();
  page.setDefaultTimeout(15_000);
  const refused: string[] = [];
  violations.set(page, refused);
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) refused.push(m.text());
  });
  await page.goto(`${httpUrl}/ui/`);
  if (user !== undefined) {
    await page.locator('[data-testid=login] input[name=user]').fill(user.name);
    await page.locator('[data-testid=login] input[name=password]').fill(user.password);
    await page.locator('[data-testid=login] button[type=submit]').click();
    await expect.poll(() => page.locator('[data-testid=user]').textContent()).toBe(`user ${user.name}`);
  }
  await page.locator('[data-testid=data-panel]').waitFor();
  // The page's watch of everything (or its refusal, for a user who may not) is settled before the test acts.
  await expect.poll(async () => /^(watching every list|not watching everything)/.test((await page.locator('[data-testid=watching]').textContent()) ?? '')).toBe(true);
  return page;
}

/** Opens `path` in the tree by the search box. */
async function select(page: Page, path: string): Promise<void> {
  await page.locator('[data-testid=search]').fill(path);
  await page.locator('[data-testid=search]').press('Enter');
  await expect.poll(() => page.locator('[data-testid=selected]').textContent()).toBe(path);
}

const root = { name: 'root', password: 'root-pw' };

describe('the dashboard', () => {
  it('logs in, and shows pushes by another client live, without a reload', async () => {
    vp = await securedServer();
    const page = await dashboard(vp.httpUrl, root);
    const other = await open(vp.url, { user: 'root', password: 'root-pw' });
    await other.push('/live/x', { n: 1 }, { persistent: true, watch: false });
    await page.locator('[data-path="/live"]').waitFor();
    await page.locator('[data-path="/live"]').click();
    await page.locator('[data-path="/live/x"]').click();
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    await other.push('/live/x', { n: 2 }, { persistent: true, watch: false });
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('2 items');
    await expect.poll(() => page.locator('[data-testid=items] tbody tr').count()).toBe(2);
    await page.close();
  });

  it("drops a session's ephemeral item when the session is killed", async () => {
    vp = await securedServer();
    const page = await dashboard(vp.httpUrl, root);
    const doomed = await WireClient.connect(vp.url, 'json');
    await doomed.hello({ timeoutMs: 500, user: 'root', password: 'root-pw' });
    await doomed.call('push', { path: '/eph/a', data: 'mine while I live', watch: false });
    await select(page, '/eph/a');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    doomed.terminate(); // killed: no bye; the session expires after its 500 ms
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent(), { timeout: 10_000 }).toBe('0 items');
    await page.close();
  });

  it('pages through a list of 10,000 items', async () => {
    vp = await securedServer();
    const writer = await open(vp.url, { user: 'root', password: 'root-pw' });
    for (let start = 0; start < 10_000; start += 1000) {
      const batch: Array<Promise<unknown>> = [];
      for (let i = start; i < start + 1000; i++) batch.push(writer.push('/big', { i }, { persistent: true, watch: false }));
      await Promise.all(batch);
    }
    // Pipelined pushes may commit in another order than sent: the list's own order is the reference.
    const list = (await writer.get('/big')).items;
    const at = (n: number): string => JSON.stringify(list[n]!.data);
    const page = await dashboard(vp.httpUrl, root);
    await select(page, '/big');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent(), { timeout: 20_000 }).toBe('10,000 items');
    await expect.poll(() => page.locator('[data-testid=page]').textContent()).toBe('page 1 of 100');
    const firstOf = async (): Promise<string | null> => page.locator('[data-testid=items] tbody tr').first().locator('td.value').textContent();
    expect(await firstOf()).toBe(at(0));
    await page.locator('[data-testid=next]').click();
    await expect.poll(() => page.locator('[data-testid=page]').textContent()).toBe('page 2 of 100');
    expect(await firstOf()).toBe(at(100));
    for (let i = 0; i < 98; i++) await page.locator('[data-testid=next]').click();
    await expect.poll(() => page.locator('[data-testid=page]').textContent()).toBe('page 100 of 100');
    expect(await firstOf()).toBe(at(9900));
    expect(await page.locator('[data-testid=next]').isDisabled()).toBe(true);
    await page.close();
  });

  it("is refused what its user's role forbids", async () => {
    vp = await securedServer();
    const writer = await open(vp.url, { user: 'root', password: 'root-pw' });
    await writer.push('/app/secret/k', 'hidden', { persistent: true, watch: false });
    await writer.push('/app/x', 'visible', { persistent: true, watch: false });
    const page = await dashboard(vp.httpUrl, { name: 'alice', password: 'alice-pw' });
    await select(page, '/app/x');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    await select(page, '/app/secret/k');
    await expect.poll(() => page.locator('.error').first().textContent()).toMatch(/FORBIDDEN: user alice may not read \/app\/secret\/k/);
    // Writing is refused too, once read-only mode is off.
    await select(page, '/app/x');
    await page.locator('[data-testid=read-only]').uncheck();
    await page.locator('[data-testid=push-value]').fill('"from the dashboard"');
    await page.locator('[data-testid=push]').click();
    await expect.poll(() => page.locator('.error').first().textContent()).toMatch(/FORBIDDEN: user alice may not write \/app\/x/);
    expect((await writer.get('/app/x')).items).toHaveLength(1);
    await page.locator('[data-testid=tab-Audit]').click();
    await expect.poll(() => page.locator('[data-testid=audit-panel] .error').textContent()).toMatch(/FORBIDDEN/);
    await page.close();
  });

  it('keeps working across a kill -9 of the leader', async () => {
    cluster = await Cluster.start(3);
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m.id !== leader.id)!;
    const page = await dashboard(`http://127.0.0.1:${follower.clientPort}`);
    expect(await page.locator('[data-testid=watching]').textContent()).toBe('watching every list');
    await leader.process.kill9();
    const next = await cluster.leader({ not: leader.id, timeoutMs: 20_000 });
    const writer = await open(next.url);
    await writer.push('/after/kill', 'still live', { persistent: true, watch: false });
    const logged: string[] = [];
    page.on('console', (m) => logged.push(m.text()));
    await page.locator('[data-path="/after"]').waitFor({ timeout: 30_000 }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\nconnection: ${await page.locator('[data-testid=connection]').textContent()}\nwatching: ${await page.locator('header').textContent()}\nconsole: ${logged.join('\n')}\ntree: ${await page.locator('[data-testid=tree]').textContent()}`);
    });
    await select(page, '/after/kill');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    // Following the leader to another member is within the page's policy (connect-src names the members).
    expect(cspViolations(page)).toEqual([]);
    await page.close();
  });

  it('runs under its Content-Security-Policy, and logging out revokes its token on the server', async () => {
    vp = await securedServer();
    const page = await dashboard(vp.httpUrl, root);
    const other = await open(vp.url, { user: 'root', password: 'root-pw' });
    await other.push('/csp/x', { n: 1 }, { persistent: true, watch: false });
    await select(page, '/csp/x');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    expect(cspViolations(page)).toEqual([]);
    const token = String(await page.evaluate(`sessionStorage.getItem('vera-dashboard-token')`));
    const audit = (): Promise<number> => fetch(`${vp!.httpUrl}/v1/audit`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    expect(await audit()).toBe(200);
    await page.getByRole('button', { name: 'log out' }).click();
    await page.locator('[data-testid=login]').waitFor();
    // A copy of the token taken from the tab is good for nothing now.
    expect(await audit()).toBe(401);
    expect(cspViolations(page)).toEqual([]);
    await page.close();
  });
});
