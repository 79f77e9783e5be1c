// `npm start`'s prestart: runs `npm run build` only when dist/ is missing or older
// than what it is built from, so a second `npm start` serves at once instead of
// compiling everything again. Plain JavaScript, so it costs no compiler to start.
//
//   node scripts/build-if-stale.mjs              build if stale
//   node scripts/build-if-stale.mjs --dry-run    only say whether it would (tests)
//   --root DIR                                   another project directory (tests)
//
// Stale means: one of the built files the server and CLI run (OUTPUTS) is missing,
// or a source (src/, the build script, the tsconfigs, package.json) changed after
// the oldest of them was written. tsc and esbuild rewrite every output on each
// build, so the oldest output tells when the last build ran.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const OUTPUTS = ['dist/cli/main.js', 'dist/server/index.js', 'dist/client/index.js', 'dist/ui/index.html', 'dist/ui/vera-client.js'];
const INPUT_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.ui.json', 'scripts/build-ui.ts', 'scripts/family-parts.ts', 'scripts/build-client-package.mjs'];
const INPUT_DIRS = ['src'];

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return null;
  }
}

/** The newest file under `dir` (0 when there is none), with its path. */
function newestUnder(dir) {
  let newest = { path: null, mtime: 0 };
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return newest;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    const candidate = e.isDirectory() ? newestUnder(path) : { path, mtime: mtimeOf(path) ?? 0 };
    if (candidate.mtime > newest.mtime) newest = candidate;
  }
  return newest;
}

/** Why `root` needs a build, or null when dist/ is up to date. */
export function staleReason(root) {
  let oldest = Infinity;
  for (const output of OUTPUTS) {
    const mtime = mtimeOf(join(root, output));
    if (mtime === null) return `${output} is missing`;
    oldest = Math.min(oldest, mtime);
  }
  const inputs = [...INPUT_FILES.map((f) => ({ path: join(root, f), mtime: mtimeOf(join(root, f)) ?? 0 })), ...INPUT_DIRS.map((d) => newestUnder(join(root, d)))];
  const newest = inputs.reduce((a, b) => (b.mtime > a.mtime ? b : a));
  return newest.mtime > oldest ? `${newest.path.slice(root.length + 1)} changed since the last build` : null;
}

const args = process.argv.slice(2);
const rootAt = args.indexOf('--root');
const root = resolve(rootAt >= 0 ? args[rootAt + 1] : join(dirname(fileURLToPath(import.meta.url)), '..'));
const reason = staleReason(root);
if (reason === null) {
  console.log('dist/ is up to date; not building (npm run build forces it)');
} else if (args.includes('--dry-run')) {
  console.log(`would build: ${reason}`);
} else {
  console.log(`building: ${reason}`);
  const built = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  process.exitCode = built.status ?? 1;
}
