// What `--compare REF` measures: this checkout and, for each REF, another build of
// Vera. A REF that names a directory holding a built checkout (dist/cli/main.js)
// is used as it is; any other REF is a commit, checked out with `git worktree add`
// in a temporary directory, given this checkout's node_modules, built with its own
// `npm run build`, and removed afterwards.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface CompareTarget {
  /** How reports name it: `this` or the REF as given. */
  readonly label: string;
  /** The checkout whose bin/vera.js runs. */
  readonly checkout: string;
  /** Short commit, with `+changes` when the work tree differs from it. */
  readonly commit: string;
  /** A worktree made for this run (removed by cleanup). */
  readonly temporary: boolean;
}

function git(cwd: string, args: readonly string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

export function describeCheckout(dir: string): string {
  try {
    const commit = git(dir, ['rev-parse', '--short', 'HEAD']);
    const dirty = git(dir, ['status', '--porcelain', '--untracked-files=no']) !== '';
    return dirty ? `${commit}+changes` : commit;
  } catch {
    return 'unknown';
  }
}

/** Dependencies `checkout` declares that the shared node_modules lacks (an old commit may need others). */
export function missingDependencies(checkout: string, nodeModules: string): string[] {
  const pkg = JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const names = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})];
  return names.filter((n) => !existsSync(join(nodeModules, n, 'package.json')));
}

/** Resolves (and for a commit, checks out and builds) every REF; `root` is this checkout, already built. */
export function prepareTargets(root: string, refs: readonly string[], log: (m: string) => void): CompareTarget[] {
  const targets: CompareTarget[] = [{ label: 'this', checkout: root, commit: describeCheckout(root), temporary: false }];
  const nodeModules = realpathSync(join(root, 'node_modules'));
  try {
    for (const ref of refs) {
      const asDir = resolve(root, ref);
      if (existsSync(join(asDir, 'dist/cli/main.js'))) {
        const commit = describeCheckout(asDir);
        // A directory is named by its commit (unique within the run), which reads better in the report's columns.
        const label = targets.some((t) => t.label === commit) ? `${commit}#${targets.length}` : commit;
        targets.push({ label, checkout: asDir, commit, temporary: false });
        continue;
      }
      const commit = git(root, ['rev-parse', '--short', `${ref}^{commit}`]);
      const dir = mkdtempSync(join(tmpdir(), `vera-compare-${commit}-`));
      rmSync(dir, { recursive: true });
      log(`checking out ${ref} (${commit}) in ${dir}`);
      git(root, ['worktree', 'add', '--detach', dir, commit]);
      targets.push({ label: ref, checkout: dir, commit, temporary: true });
      const missing = missingDependencies(dir, nodeModules);
      if (missing.length > 0) throw new Error(`${ref} needs packages this checkout's node_modules lacks (${missing.join(', ')}): run npm ci in a checkout of it and pass that directory as REF`);
      symlinkSync(nodeModules, join(dir, 'node_modules'));
      log(`building ${ref}`);
      execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    }
  } catch (error) {
    cleanupTargets(root, targets);
    throw error;
  }
  return targets;
}

export function cleanupTargets(root: string, targets: readonly CompareTarget[]): void {
  for (const t of targets) {
    if (!t.temporary) continue;
    try {
      git(root, ['worktree', 'remove', '--force', t.checkout]);
    } catch {
      rmSync(t.checkout, { recursive: true, force: true });
      try {
        git(root, ['worktree', 'prune']);
      } catch {
        // Nothing more to do: the directory is gone.
      }
    }
  }
}
