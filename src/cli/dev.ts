// `vera dev`: a local cluster for trying Vera out. Starts N `vera start` child
// processes on 127.0.0.1 with consecutive ports and a generated secret, streams
// their logs labelled by member id, and stops them all on Ctrl-C / SIGTERM.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { stringFlag, type FlagSpecs, type ParsedArgs } from './args.js';
import { SECRET_ENV } from './config.js';
import { DEV_DEFAULT_DATA, DEV_SECRET_FILE } from './dev-secret.js';
import { EXIT, UsageError } from './errors.js';
import type { CliIO } from './io.js';
import { parsePort } from './units.js';

export const DEV_FLAGS: FlagSpecs = {
  nodes: { kind: 'string' },
  data: { kind: 'string' },
  'client-port': { kind: 'string' },
  'peer-port': { kind: 'string' },
  fresh: { kind: 'boolean' },
  help: { kind: 'boolean', short: 'h' },
};

export const DEV_DEFAULTS = { nodes: 3, data: DEV_DEFAULT_DATA, clientPort: 1919, peerPort: 2919 } as const;
export const MAX_DEV_NODES = 7;
const HOST = '127.0.0.1';
/** How long a member gets to shut down cleanly before it is killed. */
const STOP_GRACE_MS = 10_000;

// bin/vera.js, from src/cli (tsx) as from dist/cli (compiled): two levels up.
const VERA_BIN = fileURLToPath(new URL('../../bin/vera.js', import.meta.url));

export interface DevOptions {
  readonly nodes: number;
  /** Absolute base directory; member nK keeps its data in <dataDir>/nK. */
  readonly dataDir: string;
  readonly clientPortBase: number;
  readonly peerPortBase: number;
  /** --fresh: remove the data of an earlier dev cluster first. */
  readonly fresh?: boolean;
}

export interface DevMember {
  readonly id: string;
  readonly dataDir: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly url: string;
}

export function parseDevOptions(args: ParsedArgs, cwd: string): DevOptions {
  if (args.positionals.length > 0) throw new UsageError(`'vera dev' takes no arguments, got ${args.positionals.join(' ')}`);
  const nodesText = stringFlag(args, 'nodes');
  const nodes = nodesText === undefined ? DEV_DEFAULTS.nodes : /^\d+$/.test(nodesText) ? Number(nodesText) : NaN;
  if (!(nodes >= 1 && nodes <= MAX_DEV_NODES)) {
    throw new UsageError(`--nodes must be a whole number from 1 to ${MAX_DEV_NODES}, got ${JSON.stringify(nodesText)}`);
  }
  const base = (flag: string, fallback: number): number => {
    const text = stringFlag(args, flag);
    const port = text === undefined ? fallback : parsePort(text, `--${flag}`, { allowPortZero: false });
    if (port + nodes - 1 > 65535) throw new UsageError(`--${flag} ${port} leaves no room for ${nodes} consecutive ports`);
    return port;
  };
  const clientPortBase = base('client-port', DEV_DEFAULTS.clientPort);
  const peerPortBase = base('peer-port', DEV_DEFAULTS.peerPort);
  if (clientPortBase < peerPortBase + nodes && peerPortBase < clientPortBase + nodes) {
    throw new UsageError(`client ports ${clientPortBase}-${clientPortBase + nodes - 1} and peer ports ${peerPortBase}-${peerPortBase + nodes - 1} overlap`);
  }
  const options: DevOptions = { nodes, dataDir: resolve(cwd, stringFlag(args, 'data') ?? DEV_DEFAULTS.data), clientPortBase, peerPortBase };
  return args.flags.get('fresh') === true ? { ...options, fresh: true } : options;
}

export function devMembers(options: DevOptions): DevMember[] {
  return Array.from({ length: options.nodes }, (_, i) => {
    const id = `n${i + 1}`;
    const clientPort = options.clientPortBase + i;
    return { id, dataDir: join(options.dataDir, id), clientPort, peerPort: options.peerPortBase + i, url: `ws://${HOST}:${clientPort}` };
  });
}

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/**
 * One log line of member `id` made readable: `[n2] role is now leader`, with the
 * level when it is above info and the error when there is one. Lines that are
 * not JSON pass through with the label.
 */
export function formatLogLine(id: string, line: string): string {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return `[${id}] ${line}`;
  }
  if (typeof record !== 'object' || record === null || typeof (record as { msg?: unknown }).msg !== 'string') return `[${id}] ${line}`;
  const { msg, level, err } = record as { msg: string; level?: unknown; err?: unknown };
  const levelName = typeof level === 'number' && level > 30 ? `${LEVELS[level] ?? `LEVEL ${level}`} ` : '';
  const error = err === undefined ? '' : `: ${typeof err === 'string' ? err : JSON.stringify(err)}`;
  return `[${id}] ${levelName}${msg}${error}`;
}

interface RunningMember {
  readonly member: DevMember;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  started: boolean;
  running: boolean;
}

export { DEV_SECRET_FILE };

/** The file in the base data directory that remembers how many nodes its cluster has. */
export const DEV_MARKER = 'dev-cluster.json';

/**
 * A member keeps the membership it was created with (later --peers lists are
 * ignored for an existing store), so a dev cluster re-run over the same data
 * with another --nodes would be a muddle of old and new members. Refuse it.
 * Returns a problem to report, or null after recording the node count.
 */
export function claimDataDir(options: DevOptions): string | null {
  const marker = join(options.dataDir, DEV_MARKER);
  let recorded: unknown;
  try {
    recorded = (JSON.parse(readFileSync(marker, 'utf8')) as { nodes?: unknown }).nodes;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return `cannot read ${marker}: ${(error as Error).message}`;
    mkdirSync(options.dataDir, { recursive: true });
    writeFileSync(marker, `${JSON.stringify({ nodes: options.nodes })}\n`);
    return null;
  }
  if (recorded === options.nodes) return null;
  return `${options.dataDir} holds a dev cluster of ${String(recorded)} node(s), not ${options.nodes}: run with --nodes ${String(recorded)}, remove that directory, or pass another --data`;
}

/** Whether something already listens on `port` of the dev cluster's host. */
function portTaken(port: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const probe = createServer();
    probe.once('error', () => resolvePromise(true));
    probe.listen({ port, host: HOST, exclusive: true }, () => probe.close(() => resolvePromise(false)));
  });
}

/**
 * Every port the cluster would listen on, tried before any member starts: a port in the way
 * (usually a server still running from an earlier `npm start` or `vera dev`) is named in one
 * line with the flag that moves it, rather than in one member's log among forty lines.
 */
export async function portProblem(members: readonly DevMember[]): Promise<string | null> {
  const wanted = members.flatMap((m) => [
    { port: m.clientPort, what: `client port ${m.clientPort} (${m.id})`, flag: '--client-port' },
    { port: m.peerPort, what: `peer port ${m.peerPort} (${m.id})`, flag: '--peer-port' },
  ]);
  const taken = await Promise.all(wanted.map((w) => portTaken(w.port)));
  const busy = wanted.filter((_, i) => taken[i]);
  if (busy.length === 0) return null;
  const flags = [...new Set(busy.map((b) => `${b.flag} N`))].join(' and ');
  return `${busy.map((b) => b.what).join(', ')} on ${HOST} ${busy.length === 1 ? 'is' : 'are'} already in use (another Vera still running?); stop it, or move the cluster with ${flags}`;
}

/**
 * --fresh: the earlier dev cluster's data goes, said first. Only a directory `vera dev` made (it
 * holds DEV_MARKER) is removed, so a mistyped --data never wipes anything else.
 */
export function removeDevData(options: DevOptions, io: CliIO): string | null {
  if (!existsSync(options.dataDir)) return null;
  if (!existsSync(join(options.dataDir, DEV_MARKER))) return `--fresh: ${options.dataDir} is not a vera dev data directory (no ${DEV_MARKER}); not removing it`;
  io.stdout(`--fresh: removing ${options.dataDir} (the data of the earlier dev cluster)\n`);
  rmSync(options.dataDir, { recursive: true, force: true });
  return null;
}


/**
 * A member of a reused data directory keeps the membership its store was created with, whatever
 * --peers says now. Asks each member whom its cluster has; returns what disagrees with `members`.
 */
export async function membershipProblem(members: readonly DevMember[], dataDir: string): Promise<string | null> {
  const expected = members.map((m) => m.id).sort();
  for (const m of members) {
    let ids: string[];
    try {
      const res = await fetch(`http://${HOST}:${m.clientPort}/v1/status`, { signal: AbortSignal.timeout(5000) });
      const status = (await res.json()) as { members?: Array<{ id?: unknown }> };
      ids = (status.members ?? []).map((x) => String(x.id)).sort();
    } catch {
      continue; // a member that does not answer is reported by its own exit or log
    }
    if (ids.join(',') !== expected.join(',')) {
      return (
        `the data in ${dataDir} comes from an earlier run: ${m.id}'s cluster has member(s) ${ids.join(', ') || 'none'}, not ${expected.join(', ')}, ` +
        `so not every node running is a member. Run 'vera dev --fresh' to start over (it removes ${dataDir})`
      );
    }
  }
  return null;
}

/** Runs the cluster until the stop signal; resolves with the exit code. */
export async function runDev(options: DevOptions, io: CliIO): Promise<number> {
  const members = devMembers(options);
  const ports = await portProblem(members);
  if (ports !== null) {
    io.stderr(`vera dev: ${ports}\n`);
    return EXIT.serverError;
  }
  const cannotRemove = options.fresh === true ? removeDevData(options, io) : null;
  if (cannotRemove !== null) {
    io.stderr(`vera dev: ${cannotRemove}\n`);
    return EXIT.usage;
  }
  const reused = existsSync(join(options.dataDir, DEV_MARKER));
  const problem = claimDataDir(options);
  if (problem !== null) {
    io.stderr(`vera dev: ${problem}\n`);
    return EXIT.usage;
  }
  const peers = members.map((m) => `${m.id}=${HOST}:${m.peerPort}/${m.clientPort}`).join(',');
  // Through the environment, not argv, so it does not show in process listings.
  const secret = randomBytes(24).toString('base64url');
  // Beside the data, readable by its owner only: `vera member`, `vera leader` and the like need it.
  const secretFile = join(options.dataDir, DEV_SECRET_FILE);
  writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
  io.stdout(`Starting a Vera dev cluster of ${members.length} node(s), data in ${options.dataDir}\n`);

  let stopping = false;
  let settle: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolvePromise) => (settle = resolvePromise));
  const running: RunningMember[] = [];

  const stopAll = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const live = running.filter((r) => r.running);
    if (live.length > 0) io.stdout(`[dev] stopping ${live.map((r) => r.member.id).join(', ')}\n`);
    await Promise.all(live.map((r) => stopMember(r)));
    io.stdout('[dev] every node has stopped\n');
    settle(code);
  };

  const onExit = (r: RunningMember, code: number | null, signal: NodeJS.Signals | null): void => {
    r.running = false;
    if (stopping) return;
    io.stdout(`[dev] ${r.member.id} exited unexpectedly (${signal === null ? `exit code ${code}` : `signal ${signal}`})\n`);
    if (!running.every((x) => x.started)) {
      io.stderr(`vera dev: ${r.member.id} did not start; see its log above\n`);
      void stopAll(EXIT.serverError);
    } else if (running.every((x) => !x.running)) {
      io.stderr('vera dev: every node has exited\n');
      void stopAll(EXIT.serverError);
    }
  };

  const onStarted = (r: RunningMember): void => {
    r.started = true;
    if (stopping || !running.every((x) => x.started)) return;
    io.stdout(banner(running.map((x) => ({ member: x.member, pid: x.child.pid })), secret, peers, secretFile));
    if (reused) {
      void membershipProblem(members, options.dataDir).then((mismatch) => {
        if (mismatch !== null && !stopping) io.stderr(`vera dev: WARNING ${mismatch}\n`);
      });
    }
  };

  // A dev process that exits any other way (e.g. a second Ctrl-C) must not leave members behind.
  const killLeftovers = (): void => {
    for (const r of running) if (r.running) r.child.kill('SIGKILL');
  };
  process.on('exit', killLeftovers);

  for (const member of members) {
    const child = spawn(
      process.execPath,
      [VERA_BIN, 'start', '--id', member.id, '--data', member.dataDir, '--peers', peers],
      // Own process group: Ctrl-C reaches only this process, which then stops each member once, cleanly.
      { env: { ...io.env, [SECRET_ENV]: secret }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolvePromise) => {
      // 'close', not 'exit': by then every line the member wrote has been passed on.
      child.once('close', (code, signal) => resolvePromise({ code, signal }));
      child.once('error', (error) => {
        io.stderr(`vera dev: cannot start ${member.id}: ${error.message}\n`);
        resolvePromise({ code: null, signal: null });
      });
    });
    const r: RunningMember = { member, child, exited, started: false, running: true };
    running.push(r);
    void exited.then(({ code, signal }) => onExit(r, code, signal));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      io.stdout(`${formatLogLine(member.id, line)}\n`);
      if (!r.started && isStartedLine(line)) onStarted(r);
    });
    createInterface({ input: child.stderr! }).on('line', (line) => io.stderr(`[${member.id}] ${line}\n`));
  }

  const onStop = (): void => void stopAll(EXIT.ok);
  if (io.stop.aborted) onStop();
  else io.stop.addEventListener('abort', onStop, { once: true });
  try {
    return await finished;
  } finally {
    io.stop.removeEventListener('abort', onStop);
    process.off('exit', killLeftovers);
  }
}

/** SIGTERM, then SIGKILL if the member has not stopped within the grace period. */
async function stopMember(r: RunningMember): Promise<void> {
  r.child.kill('SIGTERM');
  const timer = setTimeout(() => r.child.kill('SIGKILL'), STOP_GRACE_MS);
  await r.exited;
  clearTimeout(timer);
}

function isStartedLine(line: string): boolean {
  try {
    return (JSON.parse(line) as { event?: unknown }).event === 'started';
  } catch {
    return false;
  }
}

function banner(members: ReadonlyArray<{ member: DevMember; pid: number | undefined }>, secret: string, peers: string, secretFile: string): string {
  const first = members[0]!.member;
  return [
    '',
    `Vera dev cluster is up: ${members.length} node(s)`,
    ...members.map(({ member, pid }) => `  ${member.id}  ${member.url}  (pid ${pid ?? '?'}, data ${member.dataDir})`),
    '',
    `Cluster secret (generated for this run): ${secret}`,
    `For 'vera member', 'vera leader' and other operator commands, in your shell (the secret is also in ${secretFile}):`,
    `  export VERA_CLUSTER_SECRET=${secret}`,
    `To restart one member alone, after stopping it (kill its pid; the others keep running):`,
    `  VERA_CLUSTER_SECRET=${secret} vera start --id ${first.id} --data ${first.dataDir} --peers ${peers}`,
    '',
    `Try: vera push /demo '{"hi":1}' --server ${first.url}`,
    `     vera watch /demo --server ${members.map((m) => m.member.url).join(',')}`,
    'Ctrl-C stops every node.',
    '',
    '',
  ].join('\n');
}
