// The dashboard's actions and what it says about them, in a real headless browser
// against real servers: a failed action is said in the page (never an alert()),
// a list's value is edited as pretty JSON and put back, every chart names its
// unit, opening a service in the Assignment view writes nothing (no audit record
// either), and on a cluster without authentication (as `vera dev` runs) the
// leadership transfer the page cannot do is explained instead of offered.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { AssignClient } from '../../src/families/assign/client.js';
import { AuditClient } from '../../src/families/audit/client.js';
import { CounterClient } from '../../src/families/counter/client.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { JournalClient } from '../../src/families/journal/client.js';
import { untilCommandVersion } from '../server/fixture.js';
import { Cluster } from '../failover/cluster.js';
import { securedServer } from '../security/secured.js';
import { startLeader } from '../server/fixture.js';
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

/** Alerts, confirms and prompts the page opened: the dashboard should open none. */
const dialogs = new WeakMap<Page, string[]>();

/** A page of the dashboard at `httpUrl`, logged in as `user` when given, with read-only mode off. */
async function dashboard(httpUrl: string, user?: { name: string; password: string }): Promise<Page> {
  const page = await browser().newPage();
  page.setDefaultTimeout(15_000);
  const opened: string[] = [];
  dialogs.set(page, opened);
  page.on('dialog', (d) => {
    opened.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(`${httpUrl}/ui/`);
  if (user !== undefined) {
    await page.locator('[data-testid=login] input[name=user]').fill(user.name);
    await page.locator('[data-testid=login] input[name=password]').fill(user.password);
    await page.locator('[data-testid=login] button[type=submit]').click();
    await expect.poll(() => page.locator('[data-testid=user]').textContent()).toBe(`user ${user.name}`);
  }
  await page.locator('[data-testid=data-panel]').waitFor();
  await page.locator('[data-testid=read-only]').uncheck();
  return page;
}

async function select(page: Page, path: string): Promise<void> {
  await page.locator('[data-testid=search]').fill(path);
  await page.locator('[data-testid=search]').press('Enter');
  await expect.poll(() => page.locator('[data-testid=selected]').textContent()).toBe(path);
}

describe('the dashboard’s actions', () => {
  it('says a failed action in the page, not in an alert', async () => {
    vp = await securedServer();
    const root = await open(vp.url, { user: 'root', password: 'root-pw' });
    await root.push('/app/x', 'kept', { persistent: true, watch: false });
    // alice reads /app but may not write it: deleting its subtree is confirmed, then refused.
    const page = await dashboard(vp.httpUrl, { name: 'alice', password: 'alice-pw' });
    await select(page, '/app/x');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    await page.getByRole('button', { name: 'delete subtree…' }).click();
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => page.locator('[data-testid=action-error]').textContent()).toMatch(/Delete everything under \/app\/x failed: FORBIDDEN: user alice may not write \/app\/x/);
    expect(dialogs.get(page)).toEqual([]);
    expect((await root.get('/app/x')).items).toHaveLength(1);
    // Dismissed, it goes.
    await page.locator('[data-testid=action-error] button').click();
    expect(await page.locator('[data-testid=action-error]').count()).toBe(0);
    await page.close();
  });

  it('asks for a login without knocking first: opening the page records no failed authentication', async () => {
    vp = await securedServer();
    const page = await dashboard(vp.httpUrl, { name: 'root', password: 'root-pw' });
    const root = await open(vp.url, { user: 'root', password: 'root-pw' });
    // An admin act after the page's: once its record is written, a failure the page caused would be too.
    await new AssignClient(root).service('marker-2');
    const audit = new AuditClient(root);
    const records = async (): Promise<Array<{ kind: string; what: string }>> => {
      const out: Array<{ kind: string; what: string }> = [];
      await audit.each((rs) => out.push(...rs.map((r) => ({ kind: r.kind, what: r.what }))));
      return out;
    };
    await expect.poll(async () => (await records()).some((r) => r.what.includes('marker-2')), { timeout: 15_000 }).toBe(true);
    expect((await records()).filter((r) => r.kind === 'auth-failed')).toEqual([]);
    await page.close();
  });

  it('edits a value as pretty-printed JSON and puts it back as the list’s value; refuses what is not JSON', async () => {
    vp = await startLeader();
    const writer = await open(vp.url);
    await writer.push('/cfg/app', { name: 'web', limits: { cpu: 2 } }, { persistent: true, watch: false });
    const page = await dashboard(vp.httpUrl);
    await select(page, '/cfg/app');
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('1 items');
    await page.locator('[data-testid=edit]').first().click();
    expect(await page.locator('[data-testid=push-value]').inputValue()).toBe('{\n  "name": "web",\n  "limits": {\n    "cpu": 2\n  }\n}');
    await page.locator('[data-testid=push-value]').fill('{"name": "web", "limits": {"cpu": 4}}');
    await page.locator('[data-testid=format]').click();
    expect(await page.locator('[data-testid=push-value]').inputValue()).toBe('{\n  "name": "web",\n  "limits": {\n    "cpu": 4\n  }\n}');
    await page.locator('[data-testid=put]').click();
    await expect.poll(async () => (await writer.get('/cfg/app')).items.map((i) => i.data)).toEqual([{ name: 'web', limits: { cpu: 4 } }]);
    // Not JSON: said, and nothing written.
    const before = (await writer.get('/cfg/app')).items;
    await page.locator('[data-testid=push-value]').fill('{name: web}');
    await page.locator('[data-testid=push]').click();
    await expect.poll(() => page.locator('[data-testid=data-panel] .error').textContent()).toMatch(/The value is not JSON .*Nothing was written/);
    await page.locator('[data-testid=put]').click();
    expect((await writer.get('/cfg/app')).items).toEqual(before);
    // A put over several items asks first, saying how many it replaces.
    await writer.push('/cfg/app', { name: 'second' }, { persistent: true, watch: false });
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('2 items');
    await page.locator('[data-testid=push-value]').fill('"one"');
    await page.locator('[data-testid=put]').click();
    await expect.poll(() => page.getByRole('dialog').textContent()).toMatch(/2 items are replaced by one item/);
    // The complaint about the earlier text is gone once the value is JSON.
    expect(await page.locator('[data-testid=data-panel] .error').count()).toBe(0);
    // Changed by another client while the page asked: the put is refused (compare-and-set on the newest index shown).
    await writer.push('/cfg/app', { name: 'third' }, { persistent: true, watch: false });
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => page.locator('[data-testid=action-error]').textContent()).toMatch(/CONFLICT: .*the list changed after it was shown/);
    expect((await writer.get('/cfg/app')).items).toHaveLength(3);
    await expect.poll(() => page.locator('[data-testid=item-count]').textContent()).toBe('3 items');
    await page.locator('[data-testid=put]').click();
    await expect.poll(() => page.getByRole('dialog').textContent()).toMatch(/3 items are replaced by one item/);
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(async () => (await writer.get('/cfg/app')).items.map((i) => i.data)).toEqual(['one']);
    expect(dialogs.get(page)).toEqual([]);
    await page.close();
  });

  it('renders a burst of events in a few batches, not once per event', async () => {
    vp = await startLeader();
    const writer = await open(vp.url);
    const page = await dashboard(vp.httpUrl);
    await page.locator('[data-testid=tab-Events]').click();
    await page.locator('[data-testid=events-panel]').waitFor();
    // Count the page's renders of the events table while 1,000 pushes arrive.
    await page.evaluate(`(() => {
      window.renders = 0;
      new MutationObserver(() => { window.renders++; }).observe(document.querySelector('[data-testid=events-panel]'), { childList: true, subtree: true, characterData: true });
    })()`);
    const started = Date.now();
    for (let start = 0; start < 1000; start += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, i) => writer.push(`/burst/${(start + i) % 10}`, { i: start + i }, { persistent: true, watch: false })));
    }
    await expect.poll(() => page.locator('[data-testid=events-panel] .row .muted').last().textContent(), { timeout: 20_000 }).toBe('500 of the last 500');
    const tookMs = Date.now() - started;
    const renders = Number(await page.evaluate('window.renders'));
    // One render a flush (every 250 ms at most) while events come, and a few for the tail.
    expect(renders).toBeLessThanOrEqual(Math.ceil(tookMs / 250) + 5);
    await page.close();
  });

  it('finds a journal job by key with its history, retries it from flagged, deletes it, and pauses its journal', async () => {
    vp = await startLeader();
    const journals = new JournalClient(await open(vp.url));
    await untilCommandVersion(() => journals.create('mail', { timeoutMs: 60_000 }));
    await journals.add('mail', [{ key: 'user-42', data: { template: 'welcome' } }]);
    const claim = await journals.claim('mail', { max: 1 });
    await journals.release('mail', 'user-42', claim.lease, undefined, { error: 'mailbox full', unrecoverable: true });
    const page = await dashboard(vp.httpUrl);
    await page.locator('[data-testid=tab-Journal]').click();
    await page.locator('[data-testid=job-journal]').selectOption('mail');
    await page.locator('[data-testid=job-key]').fill('user-42');
    await page.locator('[data-testid=job-find]').click();
    await expect.poll(() => page.locator('[data-testid=job-status]').textContent()).toBe('flagged');
    expect(await page.locator('[data-testid=job-last-error]').textContent()).toBe('mailbox full');
    expect(await page.locator('[data-testid=job-history] td:nth-child(2)').allTextContents()).toEqual(['added', 'claimed', 'flagged']);
    await page.screenshot({ path: join(tmpdir(), 'vera-journal-panel.png'), fullPage: true });
    // Retry: confirmed, then the job waits again.
    await page.getByRole('button', { name: 'retry' }).click();
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => page.locator('[data-testid=job-status]').textContent()).toBe('waiting');
    expect((await journals.get('mail', 'user-42')).status).toBe('waiting');
    // Delete: confirmed, then it is gone (the finder says so).
    await page.getByRole('button', { name: 'delete' }).click();
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => page.locator('[data-testid=job-error]').textContent()).toMatch(/NOT_FOUND/);
    expect((await journals.items('mail', 'waiting')).items).toEqual([]);
    // Pause the journal from its row, and resume it.
    await page.locator('[data-testid=journal-panel] tbody tr', { hasText: 'mail' }).getByRole('button', { name: 'pause' }).click();
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => page.locator('[data-testid=paused-mail]').count()).toBe(1);
    expect((await journals.show('mail')).paused).toBe(true);
    await page.locator('[data-testid=journal-panel] tbody tr', { hasText: 'mail' }).getByRole('button', { name: 'resume' }).click();
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => journals.show('mail').then((j) => j.paused)).toBe(false);
    expect(dialogs.get(page)).toEqual([]);
    await page.close();
  });

  it('names the unit of every chart', async () => {
    vp = await startLeader();
    const page = await dashboard(vp.httpUrl);
    await page.locator('[data-testid=tab-Metrics]').click();
    await page.locator('[data-testid=metrics-panel] .chart').first().waitFor();
    const units = await page.locator('[data-testid=metrics-panel] .chart').evaluateAll((charts) => charts.map((c) => c.getAttribute('data-unit')));
    expect(units).toEqual(['per second', 'milliseconds', 'notifications', 'sessions']);
    await page.close();
  });

  it('says no thaw yet rather than a latency of 0 ms, then the latency of the thaws it saw', async () => {
    vp = await startLeader();
    const writer = await open(vp.url);
    await writer.push('/arch/x', { rows: 1 }, { persistent: true, watch: false });
    await new HibernateClient(writer).freeze('/arch');
    const page = await dashboard(vp.httpUrl);
    await page.locator('[data-testid=tab-Hibernation]').click();
    await expect.poll(() => page.locator('[data-testid=thaw-latency]').textContent()).toBe('no thaw yet');
    expect((await writer.get('/arch/x')).items).toHaveLength(1); // meets the Frozen unit: thawed
    await expect.poll(() => page.locator('[data-testid=thaw-latency]').textContent(), { timeout: 15_000 }).toMatch(/^\d+\.\d ms \/ \d+\.\d ms \(last 1 thaws\)$/);
    await page.close();
  });

  it('opens a service in the Assignment view without writing anything, not even an audit record', async () => {
    vp = await securedServer();
    const root = await open(vp.url, { user: 'root', password: 'root-pw' });
    const assign = new AssignClient(root);
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://a', { capacity: 10 });
    await assign.user('sync-1.5', 'u@example.com', { generation: 1, keysChangedAt: 1, clientState: 'aa' });
    const page = await dashboard(vp.httpUrl, { name: 'root', password: 'root-pw' });
    await page.locator('[data-testid=tab-Assignment]').click();
    await page.getByText('sync-1.5', { exact: true }).click();
    await expect.poll(() => page.locator('[data-testid=awaiting-purge]').textContent()).toMatch(/Records awaiting purge .*: 0$/);
    // An admin act after the page's reads: once its record is written, any the page caused would be too (written in order).
    await assign.service('marker-1');
    const audit = new AuditClient(root);
    const acts = async (): Promise<string[]> => {
      const out: string[] = [];
      await audit.each((records) => out.push(...records.filter((r) => r.kind === 'admin').map((r) => r.what)));
      return out;
    };
    await expect.poll(async () => (await acts()).some((w) => w.includes('marker-1')), { timeout: 15_000 }).toBe(true);
    expect((await acts()).filter((w) => w.includes('assign.purge'))).toEqual([]);
    await page.close();
  });

  it('on a cluster without authentication, explains the leadership transfer it cannot do instead of offering it', async () => {
    cluster = await Cluster.start(3);
    const leader = await cluster.leader();
    const page = await dashboard(`http://127.0.0.1:${leader.clientPort}`);
    await page.locator('[data-testid=tab-Cluster]').click();
    await expect.poll(() => page.locator('[data-testid=operator-note]').textContent()).toMatch(/vera leader transfer n\d.*\.\/vera-data\/dev\/cluster-secret/);
    expect(await page.getByRole('button', { name: 'make leader' }).count()).toBe(0);
    await page.close();
  });

  // A family's tab comes from its folder (src/families/counter/panel.tsx), found by the build:
  // nothing in src/ui names it.
  it("shows a family's own panel as a tab: the counter family's looks up, adds and removes (asked first)", async () => {
    vp = await startLeader();
    const writer = await open(vp.url);
    await new CounterClient(writer).add('jobs', 41);
    const page = await dashboard(vp.httpUrl);
    await page.locator('[data-testid=tab-Counters]').click();
    await page.locator('[data-testid=counter-name]').fill('jobs');
    await page.getByRole('button', { name: 'look up' }).click();
    await expect.poll(() => page.locator('[data-testid=counter-value]').textContent()).toBe('41');
    await page.locator('[data-testid=counter-add]').click();
    await expect.poll(() => page.locator('[data-testid=counter-value]').textContent()).toBe('42');
    expect((await new CounterClient(writer).get('jobs')).value).toBe(42);
    await page.getByRole('button', { name: 'remove' }).click();
    await page.locator('[data-testid=confirm]').click();
    await expect.poll(() => page.locator('[data-testid=counter-value]').textContent()).toBe('0 (absent)');
    expect((await new CounterClient(writer).get('jobs')).exists).toBe(false);
    expect(dialogs.get(page)).toEqual([]);
    await page.close();
  });
});
