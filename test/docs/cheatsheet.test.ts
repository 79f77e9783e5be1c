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

/** How `vera WORDS --help` ends: its exit code and what it wrote to stderr (a spawn failure rejects). */
function runHelp(words: string): Promise<{ readonly code: number | null; readonly stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/vera.js'), ...words.split(' '), '--help'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stderr }));
  });
}

describe(PAGE, () => {
  it('names only verbs and subcommands the vera CLI has', { timeout: 120_000 }, async () => {
    const commands = commandWords(readFileSync(join(ROOT, PAGE), 'utf8'));
    expect(commands.length).toBeGreaterThanOrEqual(25);
    expect(commands).not.toContain('');
    const runs = await Promise.all(commands.map(async (words) => [words, await runHelp(words)] as const));
    expect(runs.filter(([, run]) => run.code !== 0).map(([words, run]) => `vera ${words} --help exited ${run.code}: ${run.stderr.trim()}`)).toStrictEqual([]);
  });

  it('would catch a verb or subcommand the CLI does not have', async () => {
    expect(commandWords('`vera lease renew LEASE`, `vera get /k` and `vera VERB --help`')).toStrictEqual(['lease renew', 'get']);
    // Refused for the reason the check relies on: the CLI does not know the words.
    expect(await runHelp('lease renew')).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown lease subcommand "renew"') });
    expect(await runHelp('renew')).toMatchObject({ code: 2, stderr: expect.stringContaining('unknown command "renew"') });
    expect(await runHelp('lease grant')).toMatchObject({ code: 0, stderr: '' });
  });
});
