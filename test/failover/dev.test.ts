// `vera dev` (src/cli/dev.ts): option parsing and log formatting in process, then
// the real command: it starts a 3-node cluster that elects a leader and serves
// reads and writes, reports a node that dies, and on SIGTERM stops every node
// and exits 0.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArgs } from '../../src/cli/args.js';
import { claimDataDir, DEV_FLAGS, DEV_MARKER, DEV_SECRET_FILE, devMembers, formatLogLine, parseDevOptions, removeDevData } from '../../src/cli/dev.js';
import { main } from '../../src/cli/main.js';
import { connect } from '../../src/client/index.js';
import { captureIO } from '../client/cli-io.js';
import { pollUntil } from '../support/poll.js';
import { fetchStatus } from './cluster.js';

const BIN = resolve(import.meta.dirname, '../../bin/vera.js');

const options = (...argv: string[]) => parseDevOptions(parseArgs(argv, DEV_FLAGS, 'vera dev'), '/home/me');

describe('vera dev options', () => {
  it('defaults to 3 nodes from ports 1919/2919 with data under ./vera-data/dev', () => {
    expect(options()).toStrictEqual({ nodes: 3, dataDir: '/home/me/vera-data/dev', clientPortBase: 1919, peerPortBase: 2919 });
    expect(devMembers(options())).toStrictEqual([
      { id: 'n1', dataDir: '/home/me/vera-data/dev/n1', clientPort: 1919, peerPort: 2919, url: 'ws://127.0.0.1:1919' },
      { id: 'n2', dataDir: '/home/me/vera-data/dev/n2', clientPort: 1920, peerPort: 2920, url: 'ws://127.0.0.1:1920' },
      { id: 'n3', dataDir: '/home/me/vera-data/dev/n3', clientPort: 1921, peerPort: 2921, url: 'ws://127.0.0.1:1921' },
    ]);
  });

  it('takes the node count, data directory and port bases from flags', () => {
    expect(options('--nodes', '7', '--data', 'x/y', '--client-port', '4000', '--peer-port', '5000')).toStrictEqual({
      nodes: 7,
      dataDir: '/home/me/x/y',
      clientPortBase: 4000,
      peerPortBase: 5000,
    });
    expect(options('--nodes', '1').nodes).toBe(1);
    expect(options('--fresh').fresh).toBe(true);
  });

  it.each([
    [['--nodes', '0'], /--nodes must be a whole number from 1 to 7, got "0"/],
    [['--nodes', '8'], /--nodes must be a whole number from 1 to 7, got "8"/],
    [['--nodes', 'three'], /--nodes must be a whole number from 1 to 7/],
    [['--nodes', '2.5'], /--nodes must be a whole number from 1 to 7/],
    [['--client-port', '70000'], /--client-port has an invalid port/],
    [['--peer-port', '65535'], /--peer-port 65535 leaves no room for 3 consecutive ports/],
    [['--client-port', '3000', '--peer-port', '3002'], /client ports 3000-3002 and peer ports 3002-3004 overlap/],
    [['extra'], /takes no arguments/],
  ])('rejects %j', (argv, message) => {
    expect(() => options(...argv)).toThrow(message);
  });

  it('reports bad flags with exit code 2, and has help', async () => {
    const bad = captureIO();
    expect(await main(['dev', '--nodes', '9'], bad)).toBe(2);
    expect(bad.err()).toMatch(/^vera dev: --nodes must be a whole number from 1 to 7, got "9"\nRun 'vera dev --help' for usage\.\n$/);
    const help = captureIO();
    expect(await main(['dev', '--help'], help)).toBe(0);
    expect(help.out()).toMatch(/^Usage: vera dev \[flags\]/);
    const all = captureIO();
    expect(await main(['--help'], all)).toBe(0);
    expect(all.out()).toMatch(/\n {2}dev {7}run a local cluster/);
  });
});

describe('vera dev data directory', () => {
  it('remembers its node count, and refuses to reuse the data of a cluster of another size', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vera-dev-'));
    dirs.push(dataDir);
    const base = { dataDir: join(dataDir, 'dev'), clientPortBase: 1919, peerPortBase: 2919 };
    expect(claimDataDir({ ...base, nodes: 3 })).toBeNull();
    expect(JSON.parse(readFileSync(join(base.dataDir, DEV_MARKER), 'utf8'))).toStrictEqual({ nodes: 3 });
    expect(claimDataDir({ ...base, nodes: 3 })).toBeNull();

    const io = captureIO({ cwd: dataDir });
    expect(await main(['dev', '--nodes', '5', '--data', 'dev'], io)).toBe(2);
    expect(io.err()).toBe(`vera dev: ${base.dataDir} holds a dev cluster of 3 node(s), not 5: run with --nodes 3, remove that directory, or pass another --data\n`);
    expect(io.out()).toBe('');
  });
});

describe('vera dev --fresh', () => {
  it('says so and removes the data of an earlier dev cluster, and only a directory vera dev made', () => {
    const parent = mkdtempSync(join(tmpdir(), 'vera-dev-'));
    dirs.push(parent);
    const dev = { dataDir: join(parent, 'dev'), nodes: 3, clientPortBase: 1919, peerPortBase: 2919, fresh: true };
    const none = captureIO();
    expect(removeDevData(dev, none)).toBeNull(); // nothing there yet: nothing to say
    expect(none.out()).toBe('');

    expect(claimDataDir(dev)).toBeNull();
    mkdirSync(join(dev.dataDir, 'n1'));
    const io = captureIO();
    expect(removeDevData(dev, io)).toBeNull();
    expect(io.out()).toBe(`--fresh: removing ${dev.dataDir} (the data of the earlier dev cluster)\n`);
    expect(existsSync(dev.dataDir)).toBe(false);

    const other = { ...dev, dataDir: join(parent, 'precious') };
    mkdirSync(other.dataDir);
    writeFileSync(join(other.dataDir, 'keep.txt'), 'mine');
    expect(removeDevData(other, captureIO())).toBe(`--fresh: ${other.dataDir} is not a vera dev data directory (no ${DEV_MARKER}); not removing it`);
    expect(readFileSync(join(other.dataDir, 'keep.txt'), 'utf8')).toBe('mine');
  });
});

describe('vera dev log lines', () => {
  it('labels each line with the node id and keeps it readable', () => {
    expect(formatLogLine('n2', JSON.stringify({ level: 30, time: 1, node: 'n2', event: 'role-changed', role: 'leader', msg: 'role is now leader' }))).toBe(
      '[n2] role is now leader',
    );
    expect(formatLogLine('n1', JSON.stringify({ level: 40, msg: 'cannot reach peer n3; retrying', err: 'ECONNREFUSED' }))).toBe(
      '[n1] WARN cannot reach peer n3; retrying: ECONNREFUSED',
    );
    expect(formatLogLine('n3', JSON.stringify({ level: 60, msg: 'storage failed', err: { code: 'EIO' } }))).toBe('[n3] FATAL storage failed: {"code":"EIO"}');
    expect(formatLogLine('n1', 'not json at all')).toBe('[n1] not json at all');
    expect(formatLogLine('n1', '{"no":"msg"}')).toBe('[n1] {"no":"msg"}');
  });
});

/** A spawned `vera dev` with its output collected, and waits on it. */
class DevProcess {
  out = '';
  err = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<{ pattern: RegExp; resolve: (match: RegExpMatchArray) => void }> = [];

  constructor(readonly proc: ChildProcess) {
    proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.out += chunk;
      this.waiters = this.waiters.filter((w) => {
        const match = this.out.match(w.pattern);
        if (match === null) return true;
        w.resolve(match);
        return false;
      });
    });
    proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.err += chunk));
    this.exited = new Promise((res) => proc.on('exit', (code, signal) => res({ code, signal })));
  }

  /** Resolves with how the process exited; rejects (showing its output) after `timeoutMs`. */
  exitStatus(timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return new Promise((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`vera dev did not exit within ${timeoutMs} ms:\n${this.out}\n${this.err}`)), timeoutMs);
      void this.exited.then((e) => {
        clearTimeout(timer);
        res(e);
      });
    });
  }

  /** Resolves with the first match of `pattern` in stdout (so far or later); rejects after `timeoutMs`. */
  waitForOutput(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
    const match = this.out.match(pattern);
    if (match !== null) return Promise.resolve(match);
    return new Promise((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`no ${pattern} in vera dev output within ${timeoutMs} ms:\n${this.out}\n${this.err}`)), timeoutMs);
      this.waiters.push({
        pattern,
        resolve: (m) => {
          clearTimeout(timer);
          res(m);
        },
      });
    });
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const server = createServer();
    server.once('error', () => res(false));
    server.listen(port, '127.0.0.1', () => server.close(() => res(true)));
  });
}

/** A base port such that base..base+count-1 are all free (and not in `avoid`). */
async function freeRange(count: number, avoid: readonly number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const ports = Array.from({ length: count }, (_, i) => base + i);
    if (ports.some((p) => avoid.includes(p))) continue;
    if ((await Promise.all(ports.map(portIsFree))).every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

/** Resolves true when a TCP connection to the port is refused. */
function refuses(port: number): Promise<boolean> {
  return new Promise((res) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      res(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => res(error.code === 'ECONNREFUSED'));
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const spawned: ChildProcess[] = [];
const childPids: number[] = [];
const dirs: string[] = [];
afterAll(() => {
  // Only if a test failed half-way: nothing may outlive the run.
  for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const pid of childPids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('vera dev --nodes 3', () => {
  it('runs a cluster that elects a leader and serves, reports a node that dies, and stops every node on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vera-dev-'));
    dirs.push(dataDir);
    const clientBase = await freeRange(3);
    const peerBase = await freeRange(3, [clientBase, clientBase + 1, clientBase + 2]);
    const dev = startDev(['--nodes', '3', '--data', dataDir, '--client-port', String(clientBase), '--peer-port', String(peerBase)]);
    const proc = dev.proc;

    await dev.waitForOutput(/Vera dev cluster is up: 3 node\(s\)/);
    const pids = new Map<string, number>();
    for (const [i, id] of ['n1', 'n2', 'n3'].entries()) {
      const url = `ws://127.0.0.1:${clientBase + i}`;
      const [, pid] = await dev.waitForOutput(new RegExp(`  ${id}  ${url.replaceAll('.', '\\.')}  \\(pid (\\d+), data ${join(dataDir, id).replaceAll('.', '\\.')}\\)`));
      pids.set(id, Number(pid));
      childPids.push(Number(pid));
    }
    expect(dev.out).toContain(`Try: vera push /demo '{"hi":1}' --server ws://127.0.0.1:${clientBase}`);
    // The generated secret is shown, with how to restart one member by itself.
    const [, secret] = await dev.waitForOutput(/Cluster secret \(generated for this run\): (\S+)/);
    expect(dev.out).toContain(`VERA_CLUSTER_SECRET=${secret} vera start --id n1 --data ${join(dataDir, 'n1')} --peers n1=127.0.0.1:${peerBase}/${clientBase},`);
    // ... and how to give it to the operator commands, which find it in the environment; it is kept in a file too.
    expect(dev.out).toContain(`\n  export VERA_CLUSTER_SECRET=${secret}\n`);
    expect(readFileSync(join(dataDir, DEV_SECRET_FILE), 'utf8')).toBe(`${secret}\n`);
    expect(statSync(join(dataDir, DEV_SECRET_FILE)).mode & 0o077).toBe(0);
    const members = captureIO({ env: { VERA_CLUSTER_SECRET: secret } });
    expect(await main(['member', 'list', '--server', `ws://127.0.0.1:${clientBase}`], members), members.err()).toBe(0);
    expect(members.out()).toContain('n3');
    // Run from where a default `vera dev` keeps its data, the operator commands find the secret by themselves.
    const home = mkdtempSync(join(tmpdir(), 'vera-dev-home-'));
    dirs.push(home);
    const server = ['--server', `ws://127.0.0.1:${clientBase}`];
    const unfound = captureIO({ cwd: home });
    expect(await main(['member', 'list', ...server], unfound)).not.toBe(0);
    expect(unfound.err()).toMatch(/UNAUTHORIZED|secret/);
    mkdirSync(join(home, 'vera-data/dev'), { recursive: true });
    writeFileSync(join(home, 'vera-data/dev', DEV_SECRET_FILE), `${secret}\n`);
    const found = captureIO({ cwd: home });
    expect(await main(['member', 'list', ...server], found), found.err()).toBe(0);
    expect(found.out()).toContain('n3');

    // A leader is elected, every node agrees, and its election shows in the labelled log.
    const leader = await pollUntil('the dev cluster to elect a leader', async () => {
      const statuses = await Promise.all([0, 1, 2].map((i) => fetchStatus(clientBase + i)));
      const id = statuses[0]!.leader;
      return id !== null && statuses.every((s) => s.leader === id) ? id : undefined;
    });
    await dev.waitForOutput(new RegExp(`\\[${leader}\\] role is now leader`));

    // Push and get through one node (a follower: the client is sent on to the leader).
    const followerIndex = ['n1', 'n2', 'n3'].findIndex((id) => id !== leader);
    const client = await connect(`ws://127.0.0.1:${clientBase + followerIndex}`);
    const item = await client.push('/demo', { hi: 1 }, { persistent: true });
    expect((await client.get('/demo')).items).toStrictEqual([item]);
    await client.close();

    // A node that dies is reported, and the others carry on.
    const victim = ['n1', 'n2', 'n3'][followerIndex]!;
    process.kill(pids.get(victim)!, 'SIGKILL');
    await dev.waitForOutput(new RegExp(`\\[dev\\] ${victim} exited unexpectedly \\(signal SIGKILL\\)`));
    expect(proc.exitCode).toBeNull();

    proc.kill('SIGTERM');
    const { code, signal } = await dev.exitStatus();
    expect({ code, signal }).toStrictEqual({ code: 0, signal: null });
    expect(dev.out).toContain('[dev] every node has stopped');
    for (const pid of pids.values()) expect(isAlive(pid)).toBe(false);
    for (let i = 0; i < 3; i++) {
      expect(await refuses(clientBase + i)).toBe(true);
      expect(await refuses(peerBase + i)).toBe(true);
    }
    expect(dev.err).toBe('');
  }, 60_000);

  it('a single node stops on Ctrl-C (SIGINT) and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vera-dev-'));
    dirs.push(dataDir);
    const clientBase = await freeRange(1);
    const peerBase = await freeRange(1, [clientBase]);
    const dev = startDev(['--nodes', '1', '--data', dataDir, '--client-port', String(clientBase), '--peer-port', String(peerBase)]);
    const [, pid] = await dev.waitForOutput(/ {2}n1 {2}\S+ {2}\(pid (\d+),/);
    childPids.push(Number(pid));
    await dev.waitForOutput(/\[n1\] role is now leader/);

    dev.proc.kill('SIGINT');
    expect(await dev.exitStatus()).toStrictEqual({ code: 0, signal: null });
    expect(isAlive(Number(pid))).toBe(false);
    expect(await refuses(clientBase)).toBe(true);
  }, 60_000);

  it('when a port is taken, says which and the flag that moves it in one line, before starting anything, and exits 1', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vera-dev-'));
    dirs.push(dataDir);
    const clientBase = await freeRange(2);
    const peerBase = await freeRange(2, [clientBase, clientBase + 1]);
    // Something else already holds n2's client port.
    const squatter = createServer();
    await new Promise<void>((res) => squatter.listen(clientBase + 1, '127.0.0.1', () => res()));
    try {
      const dev = startDev(['--nodes', '2', '--data', dataDir, '--client-port', String(clientBase), '--peer-port', String(peerBase)]);
      expect(await dev.exitStatus()).toStrictEqual({ code: 1, signal: null });
      expect(dev.err).toBe(
        `vera dev: client port ${clientBase + 1} (n2) on 127.0.0.1 is already in use (another Vera still running?); stop it, or move the cluster with --client-port N\n`,
      );
      expect(dev.out).toBe(''); // nothing started, nothing to stop
      expect(existsSync(join(dataDir, 'n1'))).toBe(false);
      expect(await refuses(clientBase)).toBe(true);
      expect(await refuses(peerBase)).toBe(true);
    } finally {
      await new Promise<void>((res) => squatter.close(() => res()));
    }
  }, 60_000);

  it('over reused data whose membership is not the nodes started, says so and points at --fresh, which starts over', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vera-dev-'));
    dirs.push(dataDir);
    const clientBase = await freeRange(3);
    const peerBase = await freeRange(3, [clientBase, clientBase + 1, clientBase + 2]);
    const flags = ['--data', dataDir, '--client-port', String(clientBase), '--peer-port', String(peerBase)];
    // n1's store is made by a one-node cluster (as by a run before the node count was recorded).
    const one = startDev(['--nodes', '1', ...flags]);
    await one.waitForOutput(/\[n1\] role is now leader/);
    one.proc.kill('SIGTERM');
    expect(await one.exitStatus()).toStrictEqual({ code: 0, signal: null });
    writeFileSync(join(dataDir, DEV_MARKER), `${JSON.stringify({ nodes: 3 })}\n`);

    const three = startDev(['--nodes', '3', ...flags]);
    await three.waitForOutput(/Vera dev cluster is up: 3 node\(s\)/);
    await pollUntil('the membership warning', async () => (three.err.includes('WARNING') ? true : undefined));
    expect(three.err).toContain(
      `vera dev: WARNING the data in ${dataDir} comes from an earlier run: n1's cluster has member(s) n1, not n1, n2, n3, so not every node running is a member. Run 'vera dev --fresh' to start over (it removes ${dataDir})\n`,
    );
    three.proc.kill('SIGTERM');
    expect((await three.exitStatus()).code).toBe(0);

    const fresh = startDev(['--nodes', '3', '--fresh', ...flags]);
    await fresh.waitForOutput(/Vera dev cluster is up: 3 node\(s\)/);
    expect(fresh.out).toContain(`--fresh: removing ${dataDir} (the data of the earlier dev cluster)\n`);
    const leader = await pollUntil('the fresh cluster to elect a leader', async () => {
      const statuses = await Promise.all([0, 1, 2].map((i) => fetchStatus(clientBase + i)));
      const id = statuses[0]!.leader;
      return id !== null && statuses.every((s) => s.leader === id) ? id : undefined;
    });
    expect(['n1', 'n2', 'n3']).toContain(leader);
    fresh.proc.kill('SIGTERM');
    expect((await fresh.exitStatus()).code).toBe(0);
    expect(fresh.err).not.toContain('WARNING');
  }, 90_000);
});

function startDev(argv: readonly string[]): DevProcess {
  const proc = spawn(process.execPath, [BIN, 'dev', ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(proc);
  return new DevProcess(proc);
}
