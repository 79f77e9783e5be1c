// `vera start` writes readable log lines when its stdout is a terminal (pino-pretty),
// and one JSON object per line otherwise (what every other test reads).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Runs `vera start` under a pseudo-terminal (util-linux `script`) until it logs `started`; returns what it printed. */
function startInTerminal(): Promise<string> {
  const data = mkdtempSync(join(tmpdir(), 'vera-tty-'));
  dirs.push(data);
  const command = `${process.execPath} ${join(ROOT, 'bin/vera.js')} start --data ${data} --client 127.0.0.1:0 --peer 127.0.0.1:0`;
  const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`no 'started' line within 20 s:\n${out}`));
    }, 20_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (/started/.test(out)) {
        clearTimeout(timer);
        child.once('exit', () => resolve(out));
        process.kill(-child.pid!, 'SIGTERM');
      }
    });
  });
}

describe('the log of vera start', () => {
  it('is readable in a terminal', async () => {
    const out = await startInTerminal();
    expect(out).toMatch(/INFO.*data directory opened/);
    expect(out).toMatch(/event.*"node-opened"/);
    expect(out).not.toMatch(/^\{"level":/m);
  });
});
