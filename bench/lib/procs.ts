// Every server process the bench starts runs in its own process group, so a
// kill reaches whatever it forked (the JVM behind a wrapper, for instance).
// The registry kills every live group on exit (an uncaught error included),
// and, once installSignalHandlers() is called, on Ctrl-C/SIGTERM/SIGHUP; the
// reaper (reaper.ts) does it even when this process is killed outright, so an
// aborted run leaves nothing behind.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { reaperGuard } from './reaper.js';

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  /** Resolves when the process has exited (code or signal). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  isAlive(): boolean;
  /** Resolves with the first stdout/stderr line that matches; rejects on exit or after timeoutMs. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number): Promise<string>;
  /** The last lines of output, for error messages. */
  tail(lines?: number): string;
  /** SIGKILL to the whole group, then wait for the exit. */
  kill9(): Promise<void>;
  /** SIGTERM to the group, SIGKILL after graceMs, then wait for the exit. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnManagedOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Also append all output here. */
  readonly logFile?: string;
}

const live = new Map<number, ChildProcess>();
let handlersInstalled = false;

/** Starts `command` in a new process group and tracks it until it exits. */
export function spawnManaged(name: string, command: string, args: readonly string[], options: SpawnManagedOptions = {}): ManagedProcess {
  installExitHandlers();
  const spawnOptions: SpawnOptions = { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true };
  const child = spawn(command, args, spawnOptions);
  if (child.pid === undefined) throw new Error(`could not start ${name}: ${command} ${args.join(' ')}`);
  const pid = child.pid;
  live.set(pid, child);
  reaperGuard.addGroup(pid);
  const log: WriteStream | null = options.logFile === undefined ? null : createWriteStream(options.logFile, { flags: 'a' });
  const recent: string[] = [];
  let waiters: Array<{ match: (line: string) => boolean; done: (line: string) => void }> = [];
  let exitedFlag = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // Once the process is gone its pid may be reused by anyone: the reaper must forget it.
    child.on('exit', (code, signal) => {
      exitedFlag = true;
      live.delete(pid);
      reaperGuard.removeGroup(pid);
      resolve({ code, signal });
    });
    child.on('error', () => {
      exitedFlag = true;
      live.delete(pid);
      reaperGuard.removeGroup(pid);
      resolve({ code: null, signal: null });
    });
  });
  exited.then(() => log?.end(), () => undefined);
  const onText = (carry: { text: string }) => (chunk: Buffer) => {
    log?.write(chunk);
    carry.text += chunk.toString('utf8');
    let nl: number;
    while ((nl = carry.text.indexOf('\n')) >= 0) {
      const line = carry.text.slice(0, nl);
      carry.text = carry.text.slice(nl + 1);
      recent.push(line);
      if (recent.length > 200) recent.shift();
      if (waiters.length > 0) waiters = waiters.filter((w) => (w.match(line) ? (w.done(line), false) : true));
    }
  };
  child.stdout?.on('data', onText({ text: '' }));
  child.stderr?.on('data', onText({ text: '' }));

  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  const self: ManagedProcess = {
    name,
    pid,
    exited,
    isAlive: () => !exitedFlag,
    waitForLine(match, timeoutMs) {
      const seen = recent.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`${name}: no matching output within ${timeoutMs} ms; last lines:\n${self.tail(15)}`)), timeoutMs);
        const finish = (result: string | Error): void => {
          clearTimeout(timer);
          waiters = waiters.filter((w) => w.done !== done);
          if (typeof result === 'string') resolve(result);
          else reject(result);
        };
        const done = (line: string): void => finish(line);
        waiters.push({ match, done });
        exited.then(({ code, signal }) => finish(new Error(`${name} exited (code ${code}, signal ${signal}) before the expected output; last lines:\n${self.tail(15)}`)), () => undefined);
      });
    },
    tail: (lines = 20) => recent.slice(-lines).join('\n'),
    async kill9() {
      signalGroup('SIGKILL');
      await exited;
    },
    async stop(graceMs = 5_000) {
      if (exitedFlag) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // Children of the group leader may outlive it; make sure none does.
      signalGroup('SIGKILL');
    },
  };
  return self;
}

/** Synchronously SIGKILLs every process group still running (safe inside an 'exit' handler). */
export function killAllSync(): void {
  for (const pid of live.keys()) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  live.clear();
}

/** How many managed processes are still running. */
export function liveCount(): number {
  return live.size;
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', killAllSync);
}

/** For the suite's main process: Ctrl-C, SIGTERM and SIGHUP kill every group before exiting. */
export function installSignalHandlers(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\nbench: ${signal}: stopping every server it started\n`);
      killAllSync();
      process.exit(130);
    });
  }
}
