// A guard process that outlives the suite: it learns every server's process
// group and every temp dir, and when the suite's process goes away by any
// means (SIGKILL included, which runs no exit handler: tsx force-kills its
// child on a second Ctrl-C), its stdin closes and it kills those groups and
// removes those dirs. It runs in its own session, so a Ctrl-C at the terminal
// does not reach it, and it does not keep the suite alive.
import { spawn, type ChildProcess } from 'node:child_process';

const REAPER_SOURCE = `
const { rmSync } = require('node:fs');
const groups = new Set();
const dirs = new Set();
let pending = '';
process.on('SIGINT', () => {});
process.on('SIGHUP', () => {});
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const arg = line.slice(1);
    if (line[0] === '+') groups.add(Number(arg));
    else if (line[0] === '-') groups.delete(Number(arg));
    else if (line[0] === 'd') dirs.add(arg);
    else if (line[0] === 'r') dirs.delete(arg);
  }
});
let reaped = false;
const reap = () => {
  if (reaped) return;
  reaped = true;
  for (const g of groups) { try { process.kill(-g, 'SIGKILL'); } catch {} }
  // Give the kernel a moment to take the processes down before their files go.
  setTimeout(() => {
    for (const d of dirs) { try { rmSync(d, { recursive: true, force: true }); } catch {} }
    process.exit(0);
  }, groups.size > 0 ? 500 : 0);
};
process.stdin.on('end', reap);
process.stdin.on('close', reap);
`;

let reaper: ChildProcess | null = null;

function send(line: string): void {
  if (reaper === null) {
    reaper = spawn(process.execPath, ['-e', REAPER_SOURCE], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    reaper.unref();
    // The pipe must not keep this process alive either.
    (reaper.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    reaper.stdin?.on('error', () => undefined);
  }
  reaper.stdin?.write(`${line}\n`);
}

export const reaperGuard = {
  addGroup: (pid: number): void => send(`+${pid}`),
  removeGroup: (pid: number): void => send(`-${pid}`),
  addDir: (dir: string): void => send(`d${dir}`),
  removeDir: (dir: string): void => send(`r${dir}`),
};
