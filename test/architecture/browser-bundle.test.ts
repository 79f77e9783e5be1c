// The browser bundles hold nothing of Node's: esbuild's metafile lists every
// module it bundled and every import each one makes, so a `node:` built-in, the
// `ws` package, or a Node-only global in project code reached from the browser
// entries fails here (the real browser run is test/ui/client-in-browser.test.ts).
// Also: each Node module the bundle swaps has a browser twin with the same exports.
import { build, type Metafile } from 'esbuild';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { pathToFileURL } from 'node:url';
import { APP_ENTRY, browserBundle, CLIENT_ENTRY, generatedModules, ROOT } from '../../scripts/build-ui.js';
import { familyParts } from '../../scripts/family-parts.js';
import type * as NodePlatform from '../../src/protocol/platform.js';
import type * as BrowserPlatform from '../../src/protocol/platform.browser.js';
import type * as NodeTransport from '../../src/client/transport.js';
import type * as BrowserTransport from '../../src/client/transport.browser.js';

async function metafileOf(entry: string): Promise<Metafile> {
  const result = await build({ ...browserBundle(entry, join(ROOT, 'dist/ui/check.js')), write: false });
  return result.metafile;
}

/** Node's part in a bundle: inputs and imports that are Node built-ins or `ws`, and project code using Node-only globals. */
function nodeParts(meta: Metafile): string[] {
  const found: string[] = [];
  for (const [input, info] of Object.entries(meta.inputs)) {
    if (input.startsWith('node:') || /(^|\/)node_modules\/ws\//.test(input)) found.push(`bundled ${input}`);
    for (const imp of info.imports) {
      if (imp.path.startsWith('node:') || imp.path === 'ws' || imp.external === true) found.push(`${input} imports ${imp.path}${imp.external === true ? ' (left external)' : ''}`);
    }
    if (input.startsWith('src/')) {
      const code = stripComments(readFileSync(join(ROOT, input), 'utf8'));
      for (const m of code.matchAll(NODE_ONLY)) found.push(`${input} uses ${m[0]}`);
    }
  }
  return found;
}

// Globals a browser does not have, and the method only Node's timers have.
const NODE_ONLY = /(?<![.\w$])(?:Buffer\s*[.(]|process\s*\.|global\s*\.|__dirname|__filename|setImmediate\s*\(|require\s*\(|NodeJS\.)|\.unref\(\)/g;

function stripComments(code: string): string {
  return code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('the browser bundle of the client library (dist/ui/vera-client.js)', () => {
  it('bundles no Node built-in, no ws and no Node-only global', async () => {
    const meta = await metafileOf(CLIENT_ENTRY);
    expect(nodeParts(meta)).toEqual([]);
  });

  it('holds the client, the protocol, the browser modules, the family clients and msgpackr, and nothing of the server', async () => {
    const inputs = Object.keys((await metafileOf(CLIENT_ENTRY)).inputs);
    expect(inputs).toContain('src/client/transport.browser.ts');
    expect(inputs).toContain('src/protocol/platform.browser.ts');
    expect(inputs).not.toContain('src/client/transport.ts');
    expect(inputs).not.toContain('src/protocol/platform.ts');
    const clients = familyParts(ROOT).flatMap((p) => (p.client === null ? [] : [p.client]));
    expect(clients).toEqual(expect.arrayContaining(['src/families/journal/client.ts', 'src/families/counter/client.ts']));
    for (const client of clients) expect(inputs).toContain(client);
    const unexpected = inputs.filter((f) => !(f === `vera-generated:${CLIENT_ENTRY}` || f.startsWith('src/client/') || f.startsWith('src/protocol/') || /^src\/families\/[a-z]+\/(client(-[a-z-]+)?|wire)\.ts$/.test(f) || /(^|\/)node_modules\/msgpackr\//.test(f)));
    expect(unexpected).toEqual([]);
  });

  // The entry is `export *` of every family client: a name two of them export would be left out
  // of the bundle silently (an ambiguous star export), so every name must come out.
  it("exports every name of the client library and of each family's client, none of them twice", async () => {
    const result = await build({ ...browserBundle(CLIENT_ENTRY, join(ROOT, 'dist/ui/check.js')), write: false });
    const output = Object.entries(result.metafile.outputs).find(([file]) => file.endsWith('check.js'))![1];
    const modules = ['dist/client/index.js', ...familyParts(ROOT).flatMap((p) => (p.client === null ? [] : [`dist/families/${p.name}/client.js`]))];
    const owner = new Map<string, string>();
    const twice: string[] = [];
    for (const module of modules) {
      for (const name of Object.keys(await import(pathToFileURL(join(ROOT, module)).href))) {
        if (owner.has(name)) twice.push(`${name}: ${owner.get(name)} and ${module}`);
        owner.set(name, module);
      }
    }
    expect(twice).toEqual([]);
    expect(owner.has('JournalClient') && owner.has('connect')).toBe(true);
    expect([...output.exports].sort()).toEqual([...owner.keys()].sort());
  });

  it('is read correctly: the Node build of the same entry is seen to bundle ws and node: built-ins', async () => {
    // Guards the check above: with the Node modules in place of their browser twins (the entry still generated), it must find them.
    const result = await build({ ...browserBundle(CLIENT_ENTRY, join(ROOT, 'dist/ui/check.js')), plugins: [generatedModules], platform: 'node', write: false });
    const found = nodeParts(result.metafile);
    expect(found.some((f) => /^src\/protocol\/platform\.ts imports (node:)?buffer/.test(f))).toBe(true);
    expect(found.some((f) => /node_modules\/ws\//.test(f))).toBe(true);
    expect(found.some((f) => /^src\/protocol\/platform\.ts uses Buffer/.test(f))).toBe(true);
  });
});

describe.runIf(existsSync(APP_ENTRY))('the browser bundle of the dashboard (dist/ui/app.js)', () => {
  it('bundles no Node built-in, no ws and no Node-only global', async () => {
    const meta = await metafileOf(APP_ENTRY);
    expect(nodeParts(meta)).toEqual([]);
  });
});

describe('the modules the browser bundle swaps', () => {
  it('export the same names as their Node twins', () => {
    // Checked by the typecheck (npm test runs it first): the keys of each module's exports agree.
    expectTypeOf<keyof typeof BrowserPlatform>().toEqualTypeOf<keyof typeof NodePlatform>();
    expectTypeOf<keyof typeof BrowserTransport>().toEqualTypeOf<keyof typeof NodeTransport>();
    // Both transports are typed OpenSocket (src/client/socket.ts), so their one export agrees too.
    expectTypeOf<typeof BrowserTransport.openSocket>().toEqualTypeOf<typeof NodeTransport.openSocket>();
  });
});
