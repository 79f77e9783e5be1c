// The browser half of `npm run build` (after tsc): bundles with esbuild into dist/ui,
// which every member serves at /ui (src/server/http/ui-files.ts).
//
//   dist/ui/vera-client.js   the client library and every family's client.ts as one ES module,
//                            with its types as dist/client/browser.d.ts (scripts/family-parts.ts)
//   dist/ui/app.js, app.css  the dashboard (src/ui/main.tsx, Preact) with every family's panel.tsx,
//                            when src/ui/main.tsx exists
//   dist/ui/index.html       src/ui/index.html, or a placeholder page until the dashboard exists
//   dist/ui/*.css            the other stylesheets of src/ui, copied
//
// Browser modules: a project module `x.ts` with a sibling `x.browser.ts` is
// replaced by that sibling (src/protocol/platform.browser.ts,
// src/client/transport.browser.ts), which is how the bundle gets the browser's
// WebSocket and leaves Node's Buffer and `ws` out. tsconfig.ui.json reads the
// sources the same way (moduleSuffixes), and test/architecture/browser-bundle.test.ts
// checks that nothing of Node's is bundled.
//
// Run: tsx scripts/build-ui.ts (npm run build does).
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { browserClientSource, browserClientTypes, familyParts, familyPanelsSource } from './family-parts.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const OUT_DIR = join(ROOT, 'dist/ui');
/** Generated from the family folders (family-parts.ts), so it is a module name, not a file. */
export const CLIENT_ENTRY = 'vera:browser-client';
export const APP_ENTRY = join(ROOT, 'src/ui/main.tsx');
const UI_SOURCES = join(ROOT, 'src/ui');
/** The types of vera-client.js, beside what tsc wrote for src/client (the package's `vera/browser` names them). */
export const CLIENT_TYPES = join(ROOT, 'dist/client/browser.d.ts');

/** The modules written from the family folders: the browser client's entry and the dashboard's family tabs. */
export const generatedModules: Plugin = {
  name: 'vera-generated-modules',
  setup(b) {
    const sources: Record<string, () => string> = {
      'vera:browser-client': () => browserClientSource(familyParts(ROOT)),
      'vera:family-panels': () => familyPanelsSource(familyParts(ROOT)),
    };
    b.onResolve({ filter: /^vera:/ }, (args) => (args.path in sources ? { path: args.path, namespace: 'vera-generated' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'vera-generated' }, (args) => ({ contents: sources[args.path]!(), loader: 'ts', resolveDir: ROOT }));
  },
};

/** Resolves a relative import of a project module to its `.browser.ts` sibling when there is one. */
export const browserModules: Plugin = {
  name: 'vera-browser-modules',
  setup(b) {
    const src = join(ROOT, 'src');
    b.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (!args.importer.startsWith(src)) return undefined;
      const target = resolve(args.resolveDir, args.path).replace(/\.(js|ts)$/, '');
      const sibling = `${target}.browser.ts`;
      return existsSync(sibling) ? { path: sibling } : undefined;
    });
  },
};

/** esbuild's options for one browser bundle (shared with the architecture test, which builds without writing). */
export function browserBundle(entry: string, outfile: string): BuildOptions & { metafile: true } {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    // Evergreen browsers: everything the sources use is native there (no down-levelling).
    target: ['es2022', 'chrome100', 'firefox100', 'safari16'],
    minify: true,
    sourcemap: 'linked',
    // Relative to the served file, so a browser's devtools show src/... paths.
    sourceRoot: '',
    legalComments: 'linked',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    loader: { '.woff2': 'file', '.svg': 'file', '.png': 'file' },
    metafile: true,
    logLevel: 'silent',
    plugins: [generatedModules, browserModules],
    absWorkingDir: ROOT,
  };
}

export interface BuiltFile {
  readonly file: string;
  readonly bytes: number;
  readonly gzipBytes: number;
}

export interface UiBuild {
  readonly files: BuiltFile[];
  /** Bundles that failed (the others are still written): their entry and the error. */
  readonly failures: Array<{ readonly entry: string; readonly error: string }>;
}

/**
 * Builds dist/ui. Every file is written beside its old self and renamed over it, and files
 * of an earlier build are removed last, so a member serving dist/ui meanwhile never reads
 * a missing or half-written file. Never throws for a bundle that fails: see `failures`
 * (the other files are still written).
 */
export async function buildUi(): Promise<UiBuild> {
  const out = new Map<string, Uint8Array | string>();
  const failures: Array<{ entry: string; error: string }> = [];
  const bundle = async (entry: string, name: string): Promise<boolean> => {
    try {
      const result = await build({ ...browserBundle(entry, join(OUT_DIR, name)), write: false });
      for (const file of result.outputFiles) out.set(relative(OUT_DIR, file.path), file.contents);
      return true;
    } catch (error) {
      failures.push({ entry: relative(ROOT, entry), error: describe(error) });
      return false;
    }
  };

  if (await bundle(CLIENT_ENTRY, 'vera-client.js')) writeAtomically(CLIENT_TYPES, browserClientTypes(familyParts(ROOT)));
  if (existsSync(APP_ENTRY)) await bundle(APP_ENTRY, 'app.js');

  // The stylesheets the app's modules import (uPlot's) come out as app.css; src/ui/app.css follows them, so it wins.
  const ownCss = join(UI_SOURCES, 'app.css');
  if (existsSync(ownCss)) {
    const imported = out.get('app.css');
    const importedText = imported === undefined ? '' : new TextDecoder().decode(imported as Uint8Array).replace(/\/\*# sourceMappingURL=.*?\*\/\s*$/, '');
    out.set('app.css', importedText === '' ? readFileSync(ownCss, 'utf8') : `${importedText}\n${readFileSync(ownCss, 'utf8')}`);
    out.delete('app.css.map'); // it mapped the imported part alone
  }
  if (existsSync(UI_SOURCES)) {
    for (const name of readdirSync(UI_SOURCES)) {
      if (name.endsWith('.css') && name !== 'app.css') out.set(name, readFileSync(join(UI_SOURCES, name)));
    }
  }
  const html = join(UI_SOURCES, 'index.html');
  out.set('index.html', existsSync(html) ? readFileSync(html) : PLACEHOLDER_PAGE);

  publish(out);
  const files = [...out.keys()]
    .filter((name) => !name.endsWith('.map'))
    .sort()
    .map((name) => {
      const body = out.get(name)!;
      const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
      return { file: `dist/ui/${name}`, bytes, gzipBytes: gzipSync(body).length };
    });
  return { files, failures };
}

/** Writes `files` into OUT_DIR (each through a temporary file and a rename) and removes every other file there. */
function publish(files: ReadonlyMap<string, Uint8Array | string>): void {
  mkdirSync(OUT_DIR, { recursive: true });
  for (const [name, body] of files) writeAtomically(join(OUT_DIR, name), body);
  for (const name of readdirSync(OUT_DIR, { recursive: true, encoding: 'utf8' })) {
    const path = join(OUT_DIR, name);
    if (!files.has(name.split(sep).join('/')) && statSync(path).isFile()) rmSync(path, { force: true });
  }
}

/** Writes a file through a temporary file and a rename, so a reader never sees it half-written. */
function writeAtomically(target: string, body: Uint8Array | string): void {
  mkdirSync(dirname(target), { recursive: true });
  const staging = `${target}.${process.pid}.tmp`;
  writeFileSync(staging, body);
  renameSync(staging, target);
}

function describe(error: unknown): string {
  const errors = (error as { errors?: Array<{ text: string; location?: { file: string; line: number; column: number } | null }> }).errors;
  if (Array.isArray(errors) && errors.length > 0) {
    return errors
      .slice(0, 10)
      .map((e) => (e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ${e.text}` : e.text))
      .join('\n');
  }
  return error instanceof Error ? error.message : String(error);
}

/** The page /ui/ serves until the dashboard (src/ui) exists: it loads the client library and says so. */
const PLACEHOLDER_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Vera</title>
  </head>
  <body>
    <h1>Vera</h1>
    <p id="status">Loading the client library...</p>
    <p>The dashboard is not built yet. The client library is <a href="/ui/vera-client.js">/ui/vera-client.js</a>:
      <code>import { connect } from '/ui/vera-client.js'</code> (docs/client.md).</p>
    <script type="module">
      import * as vera from '/ui/vera-client.js';
      globalThis.vera = vera;
      document.getElementById('status').textContent = 'The client library is loaded (globalThis.vera).';
    </script>
  </body>
</html>
`;

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const started = performance.now();
  const result = await buildUi();
  for (const f of result.files) console.log(`  ${f.file.padEnd(26)} ${kib(f.bytes).padStart(10)}  (gzip ${kib(f.gzipBytes)})`);
  for (const f of result.failures) console.error(`build-ui: ${f.entry} did not build:\n${f.error}`);
  console.log(`build-ui: dist/ui in ${Math.round(performance.now() - started)} ms`);
  if (result.failures.length > 0) process.exitCode = 1;
}
