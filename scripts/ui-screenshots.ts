// Screenshots of every dashboard panel for docs/dashboard.md: starts a member
// with some of everything (lists, sessions, a journal with a flagged job, a
// service with nodes, a frozen unit, users and the audit log), opens each tab
// in Debian's chromium and saves docs/dashboard/<panel>.png.
//
// Run: npm run build && npx tsx scripts/ui-screenshots.ts
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect } from '../src/client/index.js';
import { AssignClient } from '../src/families/assign/client.js';
import { AuthClient } from '../src/families/auth/client.js';
import { HibernateClient } from '../src/families/hibernate/client.js';
import { JournalClient } from '../src/families/journal/client.js';
import { CounterClient } from '../src/families/counter/client.js';
import { launchBrowser } from '../test/ui/browser.js';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = join(ROOT, 'docs/dashboard');
const PORT = 19_719;

async function main(): Promise<void> {
  const data = mkdtempSync(join(tmpdir(), 'vera-shots-'));
  const server = spawn(process.execPath, [join(ROOT, 'bin/vera.js'), 'start', '--data', data, '--client', `127.0.0.1:${PORT}`, '--peer', `127.0.0.1:${PORT + 1}`], { stdio: 'ignore' });
  const url = `ws://127.0.0.1:${PORT}`;
  try {
    let client = await connect(url, { connectTimeoutMs: 20_000 });
    // Users first (the auth ops need the cluster's newest command version, reached a moment after it leads).
    const auth = new AuthClient(client);
    for (let tries = 0; ; tries++) {
      try {
        await auth.addUser('root', 'root-pw');
        break;
      } catch (err) {
        if (tries > 100 || !/command version/.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    await auth.grantRole('root', 'root');
    await auth.addRole('reader');
    await auth.grantPermission('reader', '/services', ['read', 'watch']);
    await auth.addUser('alice', 'alice-pw');
    await auth.grantRole('alice', 'reader');
    await auth.enable();
    await client.close().catch(() => undefined);
    client = await connect(url, { user: 'root', password: 'root-pw' });

    for (const [svc, addr] of [['api', '10.0.0.5:8080'], ['api', '10.0.0.6:8080'], ['billing', '10.0.0.7:9000']] as const) await client.push(`/services/${svc}`, { addr, version: '2.3.1' }, { persistent: true, watch: false });
    await client.push('/config/feature-flags', { newCheckout: true, darkMode: false, rollout: 0.25 }, { persistent: true, watch: false });
    await client.push('/config/big', { blob: 'x'.repeat(2000) }, { persistent: true, watch: false });
    const worker = await connect(url, { user: 'alice', password: 'alice-pw' });
    await worker.watch('/services', { prefix: true });

    const journal = new JournalClient(client);
    await journal.create('emails', { maxTimeouts: 0, timeoutMs: 200 });
    await journal.add('emails', Array.from({ length: 12 }, (_, i) => ({ key: `welcome-${i}`, data: { to: `user${i}@example.com` }, priority: i % 3 === 0 ? 10 : 100 })));
    await journal.claim('emails', { max: 1 }); // left to time out: flagged
    await journal.claim('emails', { max: 2 });

    const assign = new AssignClient(client);
    await assign.service('sync-1.5');
    await assign.addNode('sync-1.5', 'https://sync-1.example.com', { capacity: 100 });
    await assign.addNode('sync-1.5', 'https://sync-2.example.com', { capacity: 50 });
    for (let i = 0; i < 30; i++) await assign.user('sync-1.5', `user${i}@example.com`);

    await new CounterClient(client).add('deploys', 41);
    await client.push('/archive/2024/q1', { rows: 1200 }, { persistent: true, watch: false });
    await new HibernateClient(client).freeze('/archive/2024');
    await new Promise((r) => setTimeout(r, 1500)); // the flagged job times out; the audit log is written

    mkdirSync(OUT, { recursive: true });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(`http://127.0.0.1:${PORT}/ui/`);
      await page.fill('[data-testid=login] input[name=user]', 'root');
      await page.fill('[data-testid=login] input[name=password]', 'root-pw');
      await page.click('[data-testid=login] button[type=submit]');
      await page.waitForSelector('[data-testid=user]');
      await page.fill('[data-testid=search]', '/services/api');
      await page.press('[data-testid=search]', 'Enter');
      await page.waitForSelector('[data-testid=items] tbody tr');
      for (const [i] of Array.from({ length: 5 }).entries()) await client.push('/services/api', { addr: `10.0.0.${20 + i}:8080` }, { persistent: true, watch: false });
      await page.locator('[data-testid=item-count]', { hasText: '7 items' }).waitFor();
      // With read-only off, an item's value loaded into the editor, pretty-printed.
      await page.uncheck('[data-testid=read-only]');
      await page.locator('[data-testid=edit]').first().click();
      await page.screenshot({ path: join(OUT, 'data.png'), fullPage: true });
      await page.check('[data-testid=read-only]');
      // Some traffic for the charts and the event stream.
      let load = true;
      const loader = (async () => {
        for (let i = 0; load; i++) await client.push(`/services/load/w${i % 20}`, { i }, { persistent: true, watch: false });
      })().catch(() => undefined); // ends with the member if a step below fails: that step's error is the one to see
      for (const tab of ['Cluster', 'Sessions', 'Events', 'Metrics', 'Journal', 'Assignment', 'Hibernation', 'Audit', 'Counters']) {
        await page.click(`[data-testid=tab-${tab}]`);
        if (tab === 'Journal') await page.click('text=emails');
        if (tab === 'Assignment') await page.click('text=sync-1.5');
        if (tab === 'Sessions') await page.click('[data-session]');
        if (tab === 'Counters') {
          await page.fill('[data-testid=counter-name]', 'deploys');
          await page.click('text=look up');
        }
        await page.waitForTimeout(tab === 'Metrics' ? 30_000 : 1200); // fifteen scrapes for the charts; the others one poll
        await page.screenshot({ path: join(OUT, `${tab.toLowerCase()}.png`) });
      }
      load = false;
      await loader;
    } finally {
      await browser.close();
    }
    await worker.close();
    await client.close();
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(data, { recursive: true, force: true });
  }
}

await main();
