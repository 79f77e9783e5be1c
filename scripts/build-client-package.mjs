// Fills packages/vera-client/dist from the main build: the client library, the
// family clients, the recipes and the browser build, and nothing else. Run by
// `npm run build` after tsc and the UI build.
//
// What goes in is found, not listed: starting from the package's entry points,
// every relative import of each compiled file (.js and .d.ts, so type-only
// imports count too) is followed. A bare import other than the client's runtime
// dependencies (ws, msgpackr) or Node's built-ins fails the build, so a client
// module that starts to reach into the server is caught here rather than in a
// user's install.
//
//   node scripts/build-client-package.mjs             fill packages/vera-client/dist
//   node scripts/build-client-package.mjs --root DIR  the same for another project directory
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// --root DIR: another project directory (the tests give one with a made-up dist/).
const rootFlag = process.argv.indexOf('--root');
const ROOT = rootFlag > 0 ? resolve(process.argv[rootFlag + 1]) : resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const PACKAGE = join(ROOT, 'packages/vera-client');
const OUT = join(PACKAGE, 'dist');

/** The runtime dependencies the client may import; package.json's `dependencies` must list exactly these. */
const MANIFEST = JSON.parse(readFileSync(join(PACKAGE, 'package.json'), 'utf8'));
const ALLOWED = new Set(Object.keys(MANIFEST.dependencies ?? {}));
const BUILTIN = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** The compiled files the package's `exports` name (as the root package's do); a `*` stands for every family folder that has the file. */
function entries() {
  const out = [];
  for (const target of Object.values(MANIFEST.exports)) {
    if (typeof target !== 'object') continue;
    for (const file of [target.types, target.default]) {
      if (!file.startsWith('./dist/') || file.startsWith('./dist/ui/')) continue;
      const path = join(DIST, file.slice('./dist/'.length));
      if (!path.includes('*')) out.push(path);
      else out.push(...expand(path));
    }
  }
  return out;
}

/** dist/families/x/client.js for every x whose file exists, for the pattern dist/families/x/client.js with x = *. */
function expand(pattern) {
  const [before, after] = pattern.split('*');
  if (!existsSync(before)) return [];
  return readdirSync(before)
    .map((name) => `${before}${name}${after}`)
    .filter((path) => existsSync(path));
}

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

/** The module a relative specifier names, as compiled (.js for code, .d.ts for types). */
function resolveRelative(from, spec) {
  const target = resolve(dirname(from), spec);
  if (from.endsWith('.d.ts')) return target.replace(/\.js$/, '.d.ts');
  return target;
}

/** The package a bare specifier names: 'ws', 'ws/lib/x.js' -> 'ws'; '@scope/name/x' -> '@scope/name'. */
function packageOf(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function collect() {
  const seen = new Set();
  const stack = entries();
  const problems = [];
  while (stack.length > 0) {
    const file = stack.pop();
    if (seen.has(file)) continue;
    if (!existsSync(file)) {
      problems.push(`${relative(ROOT, file)} is missing (run the build first)`);
      continue;
    }
    seen.add(file);
    // A module's types come with it.
    if (file.endsWith('.js')) stack.push(file.replace(/\.js$/, '.d.ts'));
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(SPECIFIER)) {
      const spec = match[1];
      if (spec.startsWith('.')) stack.push(resolveRelative(file, spec));
      else if (!BUILTIN.has(spec) && !ALLOWED.has(packageOf(spec))) problems.push(`${relative(ROOT, file)} imports ${spec}, which is not a dependency of vera-client`);
    }
  }
  if (problems.length > 0) throw new Error(`vera-client cannot be built:\n  ${problems.join('\n  ')}`);
  return [...seen].sort();
}

const files = collect();
rmSync(OUT, { recursive: true, force: true });
for (const file of files) {
  const to = join(OUT, relative(DIST, file));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(file, to);
}
// The browser build: one ES module, as the root package's `vera/browser`.
mkdirSync(join(OUT, 'ui'), { recursive: true });
copyFileSync(join(DIST, 'ui/vera-client.js'), join(OUT, 'ui/vera-client.js'));
console.log(`packages/vera-client/dist: ${files.length + 1} files`);
