// What a starting member loads (issue 32, rejoin time): every module is CPU on the
// way to serving, so the server's module tree leaves out what it does not need
// before then: the CLI's client verbs with the client library under them, and
// prom-client's default process metrics with @opentelemetry/api (loaded once the
// member serves, or at the first scrape).
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** Every module URL resolved while `vera start`'s code is imported (not run), in a fresh process. */
function modulesLoadedByStart(): string[] {
  // A resolve hook records ESM URLs; require.cache lists what CommonJS loaded.
  const hook = `data:text/javascript,${encodeURIComponent(`
    export async function resolve(specifier, context, next) {
      const r = await next(specifier, context);
      process.stdout.write('esm ' + r.url + '\\n');
      return r;
    }`)}`;
  const script = `
    import { register, createRequire } from 'node:module';
    register(${JSON.stringify(hook)});
    await import(${JSON.stringify(`${ROOT}/dist/cli/main.js`)});
    await import(${JSON.stringify(`${ROOT}/dist/cli/start.js`)});
    for (const f of Object.keys(createRequire(import.meta.url).cache)) process.stdout.write('cjs ' + f + '\\n');
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  return out.split('\n').filter((l) => l !== '');
}

describe('a starting member', () => {
  it('loads neither the client verbs and client library nor the default process metrics', () => {
    const loaded = modulesLoadedByStart();
    // The server itself is there (the probe works)...
    expect(loaded.some((l) => l.endsWith('/dist/server/index.js'))).toBe(true);
    expect(loaded.some((l) => l.includes('prom-client/lib/histogram'))).toBe(true);
    // ...and what it does not need before it serves is not.
    const unneeded = loaded.filter((l) => /\/dist\/cli\/(client-commands|status|family-verbs)\.js$|\/dist\/client\/|@opentelemetry|prom-client\/lib\/defaultMetrics/.test(l));
    expect(unneeded).toEqual([]);
  });
});
