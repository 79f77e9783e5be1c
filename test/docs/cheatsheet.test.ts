// docs/cheatsheet.md sets etcd's and ZooKeeper's commands beside Vera's. Each `vera ...`
// in it must name a real command: its verb and subcommand words (up to the first
// argument: a path, a placeholder in capitals, a flag, a value) must be accepted by
// `vera ... --help`, which exits 2 for a verb or subcommand the CLI does not have.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const PAGE = 'docs/cheatsheet.md';

/** The command words of each `vera ...` code span of the page ("lease grant" from `vera lease grant 30s`). */
function commandWords(markdown: string): string[] {
  // `vera VERB --help` (a placeholder for any verb) names no command.
  const spans = [...markdown.matchAll(/`vera ([^`]*)`/g)].map((m) => m[1]!).filter((span) => !/^[A-Z]+\b/.test(span));
  const words = spans.map((span) => {
    const taken: string[] = [];
    for (const word of span.split(/\s+/)) {
      if (!/^[a-z][a-z-]*$/.test(word)) break;
      taken.push(word);
    }
    return taken.join(' ');
  });
  return [...new Set(words)];
}

function helpExit(words: string): Promise<number | null> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/vera.js'), ...words.split(' '), '--help'], { stdio: 'ignore' });
    child.on('exit', (code) => resolvePromise(code));
  });
}

describe(PAGE, () => {
  it('names only verbs and subcommands the vera CLI has', { timeout: 120_000 }, async () => {
    const commands = commandWords(readFileSync(join(ROOT, PAGE), 'utf8'));
    expect(commands.length).toBeGreaterThanOrEqual(25);
    expect(commands).not.toContain('');
    const exits = await Promise.all(commands.map(async (words) => [words, await helpExit(words)] as const));
    expect(exits.filter(([, code]) => code !== 0).map(([words, code]) => `vera ${words} --help exited ${code}`)).toStrictEqual([]);
  });

  it('would catch a verb or subcommand the CLI does not have', async () => {
    expect(commandWords('`vera lease renew LEASE`, `vera get /k` and `vera VERB --help`')).toStrictEqual(['lease renew', 'get']);
    expect(await helpExit('lease renew')).toBe(2);
    expect(await helpExit('renew')).toBe(2);
  });
});
