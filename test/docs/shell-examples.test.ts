// Every shell example of README.md and docs/*.md (fenced blocks tagged sh, bash, shell
// or console) runs as written against a real member started for this test, page by
// page in the order of the page, so a page's examples may build on each other (create
// a journal, then add to it). A block that cannot run here (it starts a long-running
// server, needs a cluster or other machines, installs packages, destroys data) says
// why in a marker right before it: <!-- not-run: reason --> (shell-blocks.ts).
//
// How a block runs: bash -e -o pipefail, in a fresh directory that is also $HOME,
// with `vera` (and `npx vera`) running this checkout's bin/vera.js and the documented
// default address (127.0.0.1:1919, localhost:1919) pointed at the member; `curl`
// fails on an HTTP error status (--fail-with-body). A ```console block runs each
// `$ command` and checks that every output line the page shows appears in its output.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, VeraProcess } from '../support/vera-process.js';
import { waitForLeadership } from '../server/fixture.js';
import { consoleSteps, scanPage, type ShellBlock } from './shell-blocks.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
/** Fewer runnable blocks than this means the extraction broke (or the docs lost their examples). */
const MIN_RUNNABLE = 6;
const BLOCK_TIMEOUT_MS = 60_000;

const work = mkdtempSync(join(tmpdir(), 'vera-doc-shell-'));
afterAll(async () => {
  await killAll();
  rmSync(work, { recursive: true, force: true });
});

const scans = PAGES.map((page) => scanPage(page, readFileSync(join(ROOT, page), 'utf8')));
const blocks = scans.flatMap((s) => s.blocks);

/** A directory for PATH with `vera` (this checkout's) and an `npx` that runs it for `npx vera`. */
function shims(): string {
  const dir = join(work, 'bin');
  mkdirSync(dir, { recursive: true });
  const realNpx = spawnSync('sh', ['-c', 'command -v npx'], { encoding: 'utf8' }).stdout.trim();
  const vera = `exec "${process.execPath}" "${join(ROOT, 'bin/vera.js')}" "$@"`;
  writeFileSync(join(dir, 'vera'), `#!/bin/sh\n${vera}\n`);
  writeFileSync(join(dir, 'npx'), `#!/bin/sh\nif [ "$1" = vera ]; then shift; ${vera}; fi\nexec "${realNpx}" "$@"\n`);
  for (const f of ['vera', 'npx']) chmodSync(join(dir, f), 0o755);
  return dir;
}

function environment(binDir: string, home: string, vp: VeraProcess): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VERA_')) env[k] = v;
  return { ...env, PATH: `${binDir}:${process.env.PATH ?? ''}`, HOME: home, VERA_SERVER: vp.url, NO_COLOR: '1' };
}

const pointedAt = (code: string, vp: VeraProcess): string => code.replace(/\b(127\.0\.0\.1|localhost):1919\b/g, `127.0.0.1:${vp.clientPort}`);

/** Runs one block; returns what went wrong, or null. */
function run(block: ShellBlock, vp: VeraProcess, env: NodeJS.ProcessEnv, cwd: string): string | null {
  const where = `${block.file}:${block.line}`;
  const bash = (script: string) => spawnSync('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, env, encoding: 'utf8', timeout: BLOCK_TIMEOUT_MS });
  if (block.tag !== 'console') {
    const r = bash(`curl() { command curl --silent --show-error --fail-with-body "$@"; }\n${pointedAt(block.code, vp)}`);
    if (r.status === 0) return null;
    return `${where}: exited ${r.status ?? r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
  }
  for (const step of consoleSteps(block.code)) {
    const r = bash(pointedAt(step.command, vp));
    const output = `${r.stdout}\n${r.stderr}`.split('\n').map((l) => l.replace(/\r$/, '').trim());
    const missing = step.shown.filter((l) => !output.includes(l));
    if (missing.length > 0) return `${where}: \`${step.command}\` did not print:\n${missing.join('\n')}\n--- it printed\n${output.join('\n')}`;
    if (step.shown.length === 0 && r.status !== 0) return `${where}: \`${step.command}\` exited ${r.status ?? r.signal}\n${output.join('\n')}`;
  }
  return null;
}

describe('the shell examples of README.md and docs/*.md', () => {
  it('are tagged as shell, and every not-run marker stands before one and gives its reason', () => {
    expect(scans.flatMap((s) => s.mistakes)).toStrictEqual([]);
    const notRun = blocks.filter((b) => b.notRun !== null);
    console.log(`shell examples: ${blocks.length - notRun.length} run, ${notRun.length} marked not-run:\n${notRun.map((b) => `  ${b.file}:${b.line}: ${b.notRun}`).join('\n')}`);
    expect(blocks.length - notRun.length).toBeGreaterThanOrEqual(MIN_RUNNABLE);
  });

  it('run as written against a member', { timeout: 600_000 }, async () => {
    const vp = await VeraProcess.start();
    await waitForLeadership(vp);
    const binDir = shims();
    const failures: string[] = [];
    for (const page of PAGES) {
      const runnable = blocks.filter((b) => b.file === page && b.notRun === null);
      if (runnable.length === 0) continue;
      const cwd = join(work, page.replaceAll('/', '_'));
      mkdirSync(cwd);
      const env = environment(binDir, cwd, vp);
      for (const block of runnable) {
        const failure = run(block, vp, env, cwd);
        if (failure !== null) failures.push(failure);
      }
    }
    expect(failures.join('\n\n')).toBe('');
  });
});

describe('the shell-block scanner', () => {
  it('finds tagged blocks with their markers, and names a marker without a reason or a block, and untagged commands', () => {
    const page = [
      '<!-- not-run: starts a server -->',
      '```sh',
      'vera start',
      '```',
      '',
      '```console',
      '$ vera get /a \\',
      '  --json',
      '{"items":[]}',
      '```',
      '<!-- not-run -->',
      '',
      '```bash',
      'vera ls /',
      '```',
      '<!-- not-run: nothing follows -->',
      'text',
      '```',
      'vera push /x 1',
      '```',
      '',
      '    npx vera get /x',
    ].join('\n');
    const { blocks: found, mistakes } = scanPage('p.md', page);
    expect(found.map((b) => [b.line, b.tag, b.notRun])).toStrictEqual([[2, 'sh', 'starts a server'], [6, 'console', null], [13, 'bash', '']]);
    expect(consoleSteps(found[1]!.code)).toStrictEqual([{ command: 'vera get /a \\\n  --json', shown: ['{"items":[]}'] }]);
    expect(mistakes).toStrictEqual([
      'p.md:11: a not-run marker without a reason (write <!-- not-run: why -->)',
      'p.md:16: a not-run marker before no shell block',
      'p.md:18: a block of commands without a tag: write ```sh (or ```console for commands with their output)',
      'p.md:22: an indented block of commands: fence it as ```sh so the doc test runs it (or marks it not-run)',
    ]);
  });
});
