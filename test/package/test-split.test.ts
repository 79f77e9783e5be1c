// `npm test` is the quick run and `npm run test:all` (what .ci/run runs) adds the long
// tests that vitest.config.ts lists. A renamed or moved long test must not fall out of
// that list unnoticed (it would slow the quick run), and CI must keep running everything.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONG_TESTS } from '../../vitest.config.js';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** The test files under `dir`, at any depth. */
function testFilesUnder(dir: string): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts'));
}

describe('the quick run and the whole run', () => {
  it('every entry of the long list names an existing test file, or a folder (dir/**/*.test.ts) that holds some', () => {
    expect(LONG_TESTS.length).toBeGreaterThan(0);
    for (const pattern of LONG_TESTS) {
      const folder = /^(.+)\/\*\*\/\*\.test\.ts$/.exec(pattern);
      if (folder) expect(testFilesUnder(folder[1]!), pattern).not.toStrictEqual([]);
      else expect(pattern.endsWith('.test.ts') && existsSync(join(ROOT, pattern)), pattern).toBe(true);
    }
  });

  it('npm test lints, typechecks and runs the default project, npm run test:all every project, and CI runs test:all', () => {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.test).toBe('npm run lint && npm run typecheck && vitest run --project default');
    expect(scripts['test:all']).toBe('npm run lint && npm run typecheck && vitest run');
    const ci = read('.ci/run').trimEnd().split('\n');
    expect(ci.at(-1)).toBe('npm run test:all');
    expect(read('README.md')).toContain('`npm run test:all`');
  });
});
