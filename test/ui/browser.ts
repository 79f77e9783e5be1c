// A real headless browser for tests: Debian's chromium (apt-get install chromium;
// .ci/run installs it) driven by playwright-core, whose own browser download is
// not used. Everything here closes what it opened, whatever happens, and every
// wait has a bound, so a test stops by itself.
//
//   const browser = useBrowser();                       // in a describe: one chromium per file
//   await withPage(browser(), `${vp.httpUrl}/ui/`, async (page) => { ... });
//
// In a page, run code given as a string (page.evaluate(`...`)): the test runner
// rewrites functions' dynamic imports, which would then not work in the page.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

/** How long any one page action or wait may take. */
export const PAGE_TIMEOUT_MS = 15_000;
const LAUNCH_TIMEOUT_MS = 30_000;

/** The chromium to drive: $CHROMIUM_PATH, else the first of chromium, chromium-browser, google-chrome on the PATH. */
export function chromiumPath(): string {
  const given = process.env.CHROMIUM_PATH;
  if (given !== undefined && given !== '') {
    if (!existsSync(given)) throw new Error(`CHROMIUM_PATH=${given} does not exist`);
    return given;
  }
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      const path = execFileSync('which', [name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (path !== '') return path;
    } catch {
      // not this one
    }
  }
  throw new Error('the browser tests need chromium: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH');
}

/** Starts headless chromium. Close it with `browser.close()` (useBrowser and withBrowser do). */
export function launchBrowser(): Promise<Browser> {
  const root = process.getuid?.() === 0;
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    timeout: LAUNCH_TIMEOUT_MS,
    // As root chromium refuses to start with its sandbox; /dev/shm is small in containers.
    args: [...(root ? ['--no-sandbox'] : []), '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--disable-extensions'],
  });
}

/** One chromium for the test file: started before its tests, closed after them. Call at the top of a describe (or file). */
export function useBrowser(): () => Browser {
  let browser: Browser | null = null;
  beforeAll(async () => {
    browser = await launchBrowser();
  }, LAUNCH_TIMEOUT_MS + 5_000);
  afterAll(async () => {
    await browser?.close();
    browser = null;
  });
  return () => {
    if (browser === null) throw new Error('the browser is not running (useBrowser starts it in beforeAll)');
    return browser;
  };
}

/** Runs `fn` with a browser of its own, closed afterwards whatever happens. */
export async function withBrowser<T>(fn: (browser: Browser) => Promise<T>): Promise<T> {
  const browser = await launchBrowser();
  try {
    return await fn(browser);
  } finally {
    await browser.close();
  }
}

/** What a page reported while a test used it: uncaught errors and console errors. */
export interface PageProblems {
  readonly errors: string[];
  readonly console: string[];
}

export interface PageOptions {
  /** Runs before the page is opened: routes, listeners. */
  readonly setup?: (page: Page) => Promise<void>;
}

/** Setup that answers the dashboard's script with an empty module: /ui/ is then the bare page, with no socket of its own. */
export async function withoutDashboard(page: Page): Promise<void> {
  await page.route(/\/ui\/app\.js(\?.*)?$/, (route) => route.fulfill({ status: 200, contentType: 'text/javascript', body: '' }));
}

/**
 * Opens `url` in a fresh context (no cookies or storage shared with other tests), runs
 * `fn`, and closes the context whatever happens. A failure carries what the page
 * reported (its uncaught errors and console errors), which is often the reason.
 */
export async function withPage<T>(browser: Browser, url: string, fn: (page: Page, problems: PageProblems) => Promise<T>, options: PageOptions = {}): Promise<T> {
  // Tests run code given as strings in the page (see above), which the dashboard page's Content-Security-Policy
  // forbids (no eval): these pages are hosts for such code, so the policy is set aside here. test/ui/dashboard.test.ts
  // opens its pages without this and checks the policy.
  const context: BrowserContext = await browser.newContext({ bypassCSP: true });
  const problems: PageProblems = { errors: [], console: [] };
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    page.setDefaultNavigationTimeout(PAGE_TIMEOUT_MS);
    page.on('pageerror', (error) => problems.errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.console.push(message.text());
    });
    await options.setup?.(page);
    const response = await page.goto(url, { waitUntil: 'load' });
    if (response === null || !response.ok()) throw new Error(`${url} answered ${response?.status() ?? 'nothing'}`);
    return await fn(page, problems);
  } catch (error) {
    const said = [...problems.errors.map((e) => `page error: ${e}`), ...problems.console.map((c) => `console: ${c}`)];
    if (said.length > 0 && error instanceof Error) error.message += `\nthe page said:\n  ${said.slice(0, 20).join('\n  ')}`;
    throw error;
  } finally {
    await context.close();
  }
}
