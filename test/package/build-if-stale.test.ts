// `npm start` builds only when dist/ is missing or older than its sources
// (scripts/build-if-stale.mjs, the prestart script), so a second start serves at
// once; the README's quick start stays the two commands it was.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SCRIPT = join(ROOT, 'scripts/build-if-stale.mjs');
const OUTPUTS = ['dist/cli/main.js', 'dist/server/index.js', 'dist/client/index.js', 'dist/ui/index.html', 'dist/ui/vera-client.js'];
const INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.ui.json', 'scripts/build-ui.ts', 'src/server/index.ts', 'src/ui/app.tsx'];

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A project with every input written at t=1000 s and every output at t=2000 s. */
function project(): string {
  const root = mkdtempSync(join(tmpdir(), 'vera-stale-'));
  dirs.push(root);
  const write = (file: string, seconds: number): void => {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), 'x');
    utimesSync(join(root, file), seconds, seconds);
  };
  for (const f of INPUTS) write(f, 1000);
  for (const f of OUTPUTS) write(f, 2000);
  return root;
}

function check(root: string): string {
  const r = spawnSync(process.execPath, [SCRIPT, '--root', root, '--dry-run'], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim();
}

describe('npm start builds only when dist/ is stale', () => {
  it('leaves an up-to-date dist/ alone', () => {
    expect(check(project())).toBe('dist/ is up to date; not building (npm run build forces it)');
  });

  it('builds when dist/ or one of its files is missing', () => {
    const root = project();
    rmSync(join(root, 'dist/ui/index.html'));
    expect(check(root)).toBe('would build: dist/ui/index.html is missing');
    rmSync(join(root, 'dist'), { recursive: true });
    expect(check(root)).toBe('would build: dist/cli/main.js is missing');
  });

  it('builds when a source, the build script or a config changed after the oldest output', () => {
    for (const input of ['src/server/index.ts', 'src/ui/app.tsx', 'scripts/build-ui.ts', 'tsconfig.build.json', 'package.json']) {
      const root = project();
      utimesSync(join(root, input), 3000, 3000);
      expect(check(root), input).toBe(`would build: ${input} changed since the last build`);
    }
    const halfBuilt = project();
    utimesSync(join(halfBuilt, 'dist/ui/vera-client.js'), 500, 500); // the UI half of an interrupted build
    expect(check(halfBuilt)).toMatch(/^would build: .* changed since the last build$/);
  });

  it('is what npm start runs first, and the quick start is still the two commands', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.prestart).toBe('node scripts/build-if-stale.mjs');
    expect(pkg.scripts.start).toBe('node bin/vera.js start');
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('\n```sh\nnpm ci && npm start\n```\n');
    expect(readme).toContain('\n```sh\nnpm ci && npm test\n```\n');
  });
});
