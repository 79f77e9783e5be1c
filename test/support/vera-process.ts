// Runs real `vera start` processes on 127.0.0.1 for tests, reading their JSON log
// lines to learn when they serve and on which port. Every process is killed when
// the test's cleanup runs, and every wait is bounded.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const BIN = resolve(import.meta.dirname, '../../bin/vera.js');

export interface LogLine {
  readonly event?: string;
  readonly msg?: string;
  readonly [key: string]: unknown;
}

export interface VeraProcessOptions {
  readonly id?: string;
  readonly dataDir?: string;
  /** Client port; 0 lets the process pick one (read back from its 'started' log line). */
  readonly clientPort?: number;
  readonly peerPort?: number;
  /** `--peers` value for a cluster member. */
  readonly peers?: string;
  readonly secret?: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** How long to wait for the 'started' line. */
  readonly startTimeoutMs?: number;
  /** Runs the process under `ulimit -n` of this many open files. */
  readonly openFileLimit?: number;
}

export class VeraProcess {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  private waiters: Array<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }> = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  clientPort = 0;

  private constructor(
    readonly proc: ChildProcess,
    readonly dataDir: string,
  ) {
    let buffered = '';
    proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const text = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        let line: LogLine;
        try {
          line = JSON.parse(text) as LogLine;
        } catch {
          line = { msg: text };
        }
        this.logs.push(line);
        this.waiters = this.waiters.filter((w) => (w.match(line) ? (w.resolve(line), false) : true));
      }
    });
    proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.stderr.push(chunk));
    this.exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
  }

  static async start(opts: VeraProcessOptions = {}): Promise<VeraProcess> {
    const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'vera-test-'));
    const args = [BIN, 'start', '--id', opts.id ?? 'n1', '--data', dataDir, '--client', `127.0.0.1:${opts.clientPort ?? 0}`];
    if (opts.peerPort !== undefined) args.push('--peer', `127.0.0.1:${opts.peerPort}`);
    if (opts.peers !== undefined) args.push('--peers', opts.peers);
    if (opts.secret !== undefined) args.push('--secret', opts.secret);
    args.push(...(opts.args ?? []));
    const env = { ...process.env, ...opts.env };
    // Through sh only to lower the limit; exec keeps the pid the node process's own.
    const proc =
      opts.openFileLimit === undefined
        ? spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn('/bin/sh', ['-c', `ulimit -n ${opts.openFileLimit} && exec "$0" "$@"`, process.execPath, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const vp = new VeraProcess(proc, dataDir);
    live.add(vp);
    const started = vp.waitForLog((l) => l.event === 'started', opts.startTimeoutMs ?? 20_000);
    const result = await Promise.race([started.then((l) => ({ ok: true as const, l })), vp.exited.then((e) => ({ ok: false as const, e }))]);
    if (!result.ok) {
      throw new Error(`vera exited before serving (code ${result.e.code}, signal ${result.e.signal}): ${vp.stderr.join('')}${vp.logs.map((l) => JSON.stringify(l)).join('\n')}`);
    }
    const client = String(result.l.client ?? '');
    vp.clientPort = Number(client.slice(client.lastIndexOf(':') + 1));
    return vp;
  }

  get url(): string {
    return `ws://127.0.0.1:${this.clientPort}`;
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.clientPort}`;
  }

  /** Resolves with the first log line (already seen or future) that matches; rejects after `timeoutMs`. */
  waitForLog(match: (l: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    const seen = this.logs.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`no matching log line within ${timeoutMs} ms; last lines:\n${this.logs.slice(-10).map((l) => JSON.stringify(l)).join('\n')}`));
      }, timeoutMs);
      const done = (l: LogLine): void => {
        clearTimeout(timer);
        resolvePromise(l);
      };
      this.waiters.push({ match, resolve: done });
    });
  }

  /** kill -9: no clean shutdown. */
  async kill9(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
    await this.exited;
    live.delete(this);
  }

  /** SIGTERM and wait for the clean exit; returns the exit code. */
  async stop(): Promise<number | null> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    const { code } = await this.exited;
    clearTimeout(timer);
    live.delete(this);
    return code;
  }

  removeData(): void {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

const live = new Set<VeraProcess>();

/** Kill whatever a test left running (call from afterEach/afterAll). */
export async function killAll(): Promise<void> {
  await Promise.all([...live].map((p) => p.kill9()));
}

/**
 * A port that was free a moment ago (for peer ports, which must be known before start).
 * Taken below the kernel's ephemeral range (32768 and up here), so no outgoing
 * connection can take it between this check and the server's bind (a port from
 * listen(0) is an ephemeral one, and tests that open many sockets once took one);
 * each vitest worker has its own slice, and a worker hands out its ports in turn.
 */
export async function freePort(): Promise<number> {
  const worker = Number(process.env.VITEST_POOL_ID ?? '1');
  const base = PORT_RANGE_START + ((Math.max(1, worker) - 1) % PORT_SLICES) * PORT_SLICE;
  for (let tries = 0; tries < PORT_SLICE; tries++) {
    const port = base + (nextPortOffset++ % PORT_SLICE);
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port in ${base}..${base + PORT_SLICE - 1}`);
}

const PORT_RANGE_START = 20_000;
const PORT_SLICES = 8;
const PORT_SLICE = 1_500; // 8 slices end at 31,999, below the ephemeral range
let nextPortOffset = Math.floor(Math.random() * PORT_SLICE);

function canBind(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}
