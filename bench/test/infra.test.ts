import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect as tcpConnect, createServer, type Server, type Socket } from 'node:net';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseProcStat, readProcCpuSeconds, startCpuMeter } from '../lib/cpu.js';
import { moduleOf, summarizeProfile, type CpuProfile } from '../lib/cpu-profile.js';
import { CuttableProxy, freePorts, pollUntil, StopPolling } from '../lib/net.js';
import { BenchUsageError, parseBenchArgs } from '../lib/options.js';
import { liveCount, spawnManaged } from '../lib/procs.js';
import { parseProcStatus, readProcMemory } from '../lib/rss.js';

describe('options', () => {
  it('defaults to every system and the repository paths', () => {
    const o = parseBenchArgs([], '/repo');
    expect(o).toEqual({ systems: ['vera', 'etcd', 'zookeeper'], quick: false, scale: false, outDir: '/repo/bench/results', docsFile: '/repo/docs/performance.md', profile: true, journal: 'after', assign: 'after', hibernate: 'after', tls: false, security: false, compare: [], rounds: 2, workloads: null });
  });

  it('sends a --scale run to its own report, and refuses it with --quick', () => {
    expect(parseBenchArgs(['--scale'], '/repo')).toMatchObject({ scale: true, docsFile: '/repo/docs/performance-scale.md', journal: 'no' });
    expect(parseBenchArgs(['--journal-only'], '/repo')).toMatchObject({ journal: 'only', docsFile: '/repo/docs/performance-journal.md' });
    expect(parseBenchArgs(['--no-journal', '--quick'], '/repo')).toMatchObject({ journal: 'no', quick: true, docsFile: '/repo/docs/performance.md' });
    expect(() => parseBenchArgs(['--journal-only', '--no-journal'], '/repo')).toThrow(/do not go together/);
    expect(parseBenchArgs(['--assign-only'], '/repo')).toMatchObject({ assign: 'only', journal: 'no', docsFile: '/repo/docs/performance-assign.md' });
    expect(parseBenchArgs(['--journal-only'], '/repo')).toMatchObject({ journal: 'only', assign: 'no' });
    expect(parseBenchArgs(['--journal-only', '--assign-only'], '/repo')).toMatchObject({ journal: 'only', assign: 'only' });
    expect(parseBenchArgs(['--no-assign'], '/repo')).toMatchObject({ assign: 'no', journal: 'after' });
    expect(parseBenchArgs(['--hibernate-only'], '/repo')).toMatchObject({ hibernate: 'only', journal: 'no', assign: 'no', docsFile: '/repo/docs/performance-hibernation.md' });
    expect(parseBenchArgs(['--no-hibernate'], '/repo')).toMatchObject({ hibernate: 'no', assign: 'after' });
    expect(parseBenchArgs(['--scale'], '/repo')).toMatchObject({ assign: 'no' });
    expect(() => parseBenchArgs(['--assign-only', '--no-assign'], '/repo')).toThrow(/do not go together/);
    expect(parseBenchArgs(['--scale', '--docs', 'x.md'], '/repo')).toMatchObject({ scale: true, docsFile: '/repo/x.md' });
    expect(() => parseBenchArgs(['--scale', '--quick'], '/repo')).toThrow(/--quick and --scale do not go together/);
  });

  it('reads --systems in any order, --quick, --out and --no-profile', () => {
    const o = parseBenchArgs(['--systems', 'zookeeper,vera', '--quick', '--out=x', '--no-profile'], '/repo');
    expect(o).toMatchObject({ systems: ['vera', 'zookeeper'], quick: true, outDir: '/repo/x', profile: false });
    expect(parseBenchArgs(['--help'], '/repo')).toBe('help');
  });

  it('rejects unknown systems and options with a clear message', () => {
    expect(() => parseBenchArgs(['--systems', 'vera,consul'], '/r')).toThrow(BenchUsageError);
    expect(() => parseBenchArgs(['--systems', 'vera,consul'], '/r')).toThrow(/unknown system "consul"/);
    expect(() => parseBenchArgs(['--fast'], '/r')).toThrow(/unknown option "--fast"/);
    expect(() => parseBenchArgs(['--out'], '/r')).toThrow(/--out needs a value/);
  });
});

describe('memory', () => {
  it('parses VmRSS and VmHWM', () => {
    expect(parseProcStatus('Name:\tx\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n')).toEqual({ rssBytes: 1024 * 1024, peakBytes: 2048 * 1024 });
    expect(parseProcStatus('Name:\tkthread\n')).toBeNull();
  });

  it('reads this process and nothing for a missing one', () => {
    const mine = readProcMemory(process.pid);
    expect(mine?.rssBytes).toBeGreaterThan(1024 * 1024);
    expect(mine!.peakBytes).toBeGreaterThanOrEqual(mine!.rssBytes);
    expect(readProcMemory(2 ** 30)).toBeNull();
  });
});

describe('CPU time', () => {
  it('reads utime + stime after a command name with spaces and parentheses', () => {
    const stat = '1234 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0';
    expect(parseProcStat(stat)).toBe(3);
    expect(parseProcStat('garbage')).toBeNull();
  });

  it('agrees with process.cpuUsage for this process', () => {
    expect(readProcCpuSeconds(process.pid)).toBeGreaterThan(0);
    const stop = startCpuMeter([{ id: 'self', pid: process.pid, alive: true }]);
    // Burn 200 ms of CPU (however long that takes on a busy machine): the measured
    // "member" and the load generator are then the same process.
    const before = process.cpuUsage();
    const wallLimit = performance.now() + 5_000;
    while (performance.now() < wallLimit) {
      const used = process.cpuUsage(before);
      if (used.user + used.system >= 200_000) break;
    }
    const share = stop();
    expect(share.loadGeneratorPct).toBeGreaterThan(0);
    // /proc counts in 10 ms ticks; allow a few ticks of difference.
    expect(Math.abs((share.membersPct.self ?? -100) - share.loadGeneratorPct)).toBeLessThan(15);
  });
});

describe('CPU profile summary', () => {
  it('adds self time per function and module and leaves idle out of the busy share', () => {
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9, columnNumber: 0 });
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', '') },
        { id: 2, callFrame: frame('(idle)', '') },
        { id: 3, callFrame: frame('encode', 'file:///w/node_modules/msgpackr/pack.js') },
        { id: 4, callFrame: frame('step', 'file:///w/dist/raft/core.js') },
      ],
      startTime: 0,
      endTime: 4000,
      samples: [2, 3, 3, 4],
      timeDeltas: [0, 1000, 1000, 1000],
    };
    const s = summarizeProfile(profile);
    expect(s.idleMs).toBe(1);
    expect(s.busyMs).toBe(3);
    expect(s.byModule[0]).toEqual({ name: 'msgpackr', selfMs: 2, percent: 66.7 });
    expect(s.topFunctions.map((f) => f.name)).toContain('step dist/raft/core.js:10');
  });

  it('buckets URLs into modules', () => {
    expect(moduleOf('x', 'node:internal/streams/readable')).toBe('node:internal');
    expect(moduleOf('x', 'file:///a/node_modules/@scope/pkg/i.js')).toBe('@scope/pkg');
    expect(moduleOf('x', 'file:///a/dist/server/ops.js')).toBe('dist/server');
    expect(moduleOf('(garbage collector)', '')).toBe('(garbage collector)');
  });
});

describe('loopback helpers', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });

  it('finds distinct free ports below the ephemeral range', async () => {
    const ports = await freePorts(5);
    expect(new Set(ports).size).toBe(5);
    for (const p of ports) expect(p >= 20_000 && p < 32_000).toBe(true);
  });

  it('stops polling at once on StopPolling and times out otherwise', async () => {
    await expect(pollUntil('x', 5_000, async () => { throw new StopPolling('gone'); })).rejects.toThrow('gone');
    await expect(pollUntil('never', 60, async () => undefined, 10)).rejects.toThrow(/timed out after 60 ms waiting for never/);
  });

  it('forwards through the proxy, records the client\'s last bytes, and cuts both sides', async () => {
    const serverSide: Socket[] = [];
    const echo = createServer((s) => {
      serverSide.push(s);
      s.on('data', (d) => s.write(d));
    });
    servers.push(echo);
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    const port = (echo.address() as { port: number }).port;
    const proxy = new CuttableProxy(port);
    await proxy.start();
    const client = tcpConnect({ host: '127.0.0.1', port: proxy.port });
    const echoed = new Promise<string>((r) => client.once('data', (d) => r(d.toString())));
    client.write('ping');
    expect(await echoed).toBe('ping');
    const lastBytes = proxy.lastClientBytesAt;
    expect(Number.isFinite(lastBytes)).toBe(true);
    const serverClosed = new Promise<void>((r) => serverSide[0]!.once('close', () => r()));
    const clientClosed = new Promise<void>((r) => client.once('close', () => r()));
    const cutAt = proxy.cut();
    expect(cutAt).toBeGreaterThanOrEqual(lastBytes);
    await Promise.all([serverClosed, clientClosed]);
    // New connections are refused after the cut.
    const refused = await new Promise<string>((r) => {
      const again = tcpConnect({ host: '127.0.0.1', port: proxy.port });
      again.once('error', (e: NodeJS.ErrnoException) => r(e.code ?? 'error'));
      again.once('connect', () => r('connected'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});

describe('managed processes', () => {
  it('kills the whole process group, children included', async () => {
    const before = liveCount();
    // A shell that starts a grandchild and reports its pid.
    const p = spawnManaged('sleeper', 'sh', ['-c', 'sleep 30 & echo child $!; wait']);
    const line = await p.waitForLine((l) => l.startsWith('child '), 5_000);
    const child = Number(line.split(' ')[1]);
    expect(liveCount()).toBe(before + 1);
    await p.kill9();
    expect(p.isAlive()).toBe(false);
    await pollUntil('the grandchild to die', 5_000, async () => {
      try {
        process.kill(child, 0);
        return undefined;
      } catch {
        return true;
      }
    });
    expect(liveCount()).toBe(before);
  });

  it('rejects a wait when the process exits first', async () => {
    const p = spawnManaged('quick', 'sh', ['-c', 'echo hello; exit 3']);
    await expect(p.waitForLine((l) => l === 'never', 5_000)).rejects.toThrow(/exited \(code 3/);
    expect(p.tail()).toContain('hello');
  });
});

describe('reaper', () => {
  it('kills the servers and removes the temp dirs of a suite killed with SIGKILL', async () => {
    const child = fork(resolve(import.meta.dirname, 'fixtures/hold-a-server.ts'), [], { execArgv: ['--import', import.meta.resolve('tsx')], stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    const ready = await new Promise<string>((resolveLine, reject) => {
      let text = '';
      child.stdout!.on('data', (d: Buffer) => {
        text += d.toString();
        const line = text.split('\n').find((l) => l.startsWith('ready '));
        if (line !== undefined) resolveLine(line);
      });
      child.once('exit', () => reject(new Error(`the fixture exited early: ${text}`)));
    });
    const [, pidText, dir] = ready.split(' ');
    const pid = Number(pidText);
    expect(existsSync(dir!)).toBe(true);
    process.kill(pid, 0); // the server runs
    child.kill('SIGKILL');
    await pollUntil('the reaper to kill the server and remove the dir', 10_000, async () => {
      try {
        process.kill(pid, 0);
        return undefined;
      } catch {
        return existsSync(dir!) ? undefined : true;
      }
    });
  });
});
