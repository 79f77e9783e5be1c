// The pages a user reads speak the user's language: no words from how Vera was
// built ("seed 002", "issue 15") and no benchmark history (that is in
// CHANGELOG.md). The design and reference pages (architecture, protocol, raft,
// storage, performance) may name their sources.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const USER_PAGES = [
  'README.md',
  'docs/getting-started.md',
  'docs/cheatsheet.md',
  'docs/client.md',
  'docs/kv.md',
  'docs/journal.md',
  'docs/assignment.md',
  'docs/hibernation.md',
  'docs/dashboard.md',
  'docs/operations.md',
  'docs/security.md',
];
const INTERNAL = /\bseeds? \d{3}\b|\bthe seed\b|\bissues? \d+\b|\bin an earlier run\b|\bruns of that day\b/gi;

/** "file:line: word" for each internal word of a page. */
function internalWords(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) => [...line.matchAll(INTERNAL)].map((m) => `${file}:${i + 1}: ${m[0]}`));
}

describe('the user pages', () => {
  it('carry no words from how Vera was built, nor benchmark history', () => {
    expect(USER_PAGES.flatMap((f) => internalWords(f, readFileSync(join(ROOT, f), 'utf8')))).toStrictEqual([]);
  });

  it('would name such a word by its line', () => {
    expect(internalWords('p.md', 'built from seed 002\nas issue 15 says, 1.53x in an earlier run')).toStrictEqual(['p.md:1: seed 002', 'p.md:2: issue 15', 'p.md:2: in an earlier run']);
  });

  it('start from the README: getting started, the cheat sheet and the changelog are linked', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const page of ['docs/getting-started.md', 'docs/cheatsheet.md', 'CHANGELOG.md']) expect(readme).toContain(page);
  });
});
