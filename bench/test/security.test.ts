// `npm run bench -- --security-only` (issue 16): its options, the ratios against
// plain, the target at 256 in flight, CPU per write, the profile's buckets and
// the report.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { machineCpuPct, readMachineJiffies } from '../lib/cpu.js';
import type { CpuProfile } from '../lib/cpu-profile.js';
import { machineInfo } from '../lib/machine.js';
import { parseBenchArgs } from '../lib/options.js';
import type { SystemResult } from '../report/results.js';
import { FULL_SCALE } from '../scenarios/context.js';
import { securityProfile } from '../security/profile.js';
import type { LoadFigures } from '../report/results.js';
import {
  automaticNotes,
  combineRepeats,
  CONFIGS,
  cpuPerOp,
  inFlightOf,
  judgedByTarget,
  renderSecurity,
  securityRatios,
  TARGET,
  targetVerdict,
  targetVerdicts,
  type ConfigId,
  type ConfigurationResult,
  type SecurityResult,
} from '../security/report.js';

const PLAIN = JSON.parse(readFileSync(resolve(import.meta.dirname, '../results/2026-11-22-vera.json'), 'utf8')) as SystemResult;

type Load = { opsPerSec: number; latencyMs: Record<string, number>; cpu?: { loadGeneratorPct: number; membersPct: Record<string, number> } };

/**
 * The plain result's S1, S2 and S6 with throughput × `factor` and latency ÷ it; at 256 in flight
 * `at256` instead, when given. CPU stays as it was (so CPU per write grows as throughput falls).
 */
function configuration(id: ConfigId, factor: number, at256 = factor): ConfigurationResult {
  const copy = JSON.parse(JSON.stringify({ s1: PLAIN.scenarios.s1, s2: PLAIN.scenarios.s2, s6: PLAIN.scenarios.s6 })) as {
    s1: { data: Load };
    s2: { data: { levels: Array<Load & { inFlight: number }> } };
    s6: { data: Array<{ inFlight: number; load: Load | null }> };
  };
  const scale = (l: Load | null, f: number): void => {
    if (l === null) return;
    l.opsPerSec *= f;
    for (const k of Object.keys(l.latencyMs)) l.latencyMs[k]! /= f;
  };
  scale(copy.s1.data, factor);
  for (const level of copy.s2.data.levels) scale(level, level.inFlight === 256 ? at256 : factor);
  for (const read of copy.s6.data) scale(read.load, read.inFlight === 256 ? at256 : factor);
  const c = CONFIGS.find((x) => x.id === id)!;
  return { id, label: c.label, tls: c.tls, auth: c.auth, settings: {}, scenarios: copy as unknown as ConfigurationResult['scenarios'], errors: [], profile: null, repeats: {} };
}

describe('bench --security-only: options', () => {
  it('measures Vera alone, nothing else, into docs/performance-security.md', () => {
    expect(parseBenchArgs(['--security-only'], '/repo')).toMatchObject({ security: true, systems: ['vera'], tls: false, journal: 'no', assign: 'no', hibernate: 'no', docsFile: '/repo/docs/performance-security.md', outDir: '/repo/bench/results' });
    expect(parseBenchArgs(['--security-only', '--systems', 'vera', '--quick'], '/repo')).toMatchObject({ security: true, systems: ['vera'], quick: true });
    expect(parseBenchArgs(['--security-only', '--docs', 'x.md', '--no-profile'], '/repo')).toMatchObject({ security: true, docsFile: '/repo/x.md', profile: false });
    expect(parseBenchArgs([], '/repo')).toMatchObject({ security: false });
    expect(parseBenchArgs(['--tls'], '/repo')).toMatchObject({ security: false, tls: true });
  });

  it('refuses what it cannot do alongside', () => {
    expect(() => parseBenchArgs(['--security-only', '--systems', 'etcd'], '/repo')).toThrow(/Vera alone/);
    expect(() => parseBenchArgs(['--security-only', '--systems', 'vera,etcd'], '/repo')).toThrow(/Vera alone/);
    expect(() => parseBenchArgs(['--security-only', '--scale'], '/repo')).toThrow(/do not go together/);
    expect(() => parseBenchArgs(['--security-only', '--tls'], '/repo')).toThrow(/leave out --tls/);
    expect(() => parseBenchArgs(['--security-only', '--journal-only'], '/repo')).toThrow(/do not go together/);
  });
});

describe('bench --security-only: ratios and the target', () => {
  const configurations = [configuration('plain', 1), configuration('tls', 0.95, 0.8), configuration('auth', 0.99, 0.9), configuration('plain-again', 1.02)];
  const ratios = securityRatios(configurations);

  it('divides every S1, S2 and S6 figure of each configuration by plain', () => {
    expect(Object.keys(ratios).sort()).toEqual(['auth', 'plain-again', 'tls']);
    const tls = ratios.tls!;
    expect(new Set(tls.map((r) => r.key.split('.')[0]))).toEqual(new Set(['s1', 's2', 's6']));
    const s1 = tls.find((r) => r.key === 's1.ops')!;
    expect(s1.ratio).toBeCloseTo(0.95, 4);
    expect(s1.overhead).toBeCloseTo(0.05, 4);
    const p99 = tls.find((r) => r.key === 's2.256.p99')!;
    expect(p99.ratio).toBeCloseTo(1.25, 3);
    expect(p99.overhead).toBeCloseTo(0.25, 3);
    expect(p99.plain).toBe(PLAIN.scenarios.s2?.status === 'ok' ? PLAIN.scenarios.s2.data.levels.find((l) => l.inFlight === 256)!.latencyMs.p99 : NaN);
    expect(tls.some((r) => r.key === 's6.stale.256.ops')).toBe(true);
    // Better than plain is a negative overhead.
    expect(ratios['plain-again']!.find((r) => r.key === 's1.ops')!.overhead).toBeCloseTo(-0.02, 4);
    // Without a plain configuration there is nothing to divide by.
    expect(securityRatios([configuration('tls', 0.9)])).toEqual({});
  });

  it('judges throughput, p50 and p99 at 256 in flight against 15%', () => {
    expect(inFlightOf('s2.256.ops')).toBe(256);
    expect(inFlightOf('s6.linearizable.256.p99')).toBe(256);
    expect(inFlightOf('s6.stale.1.p50')).toBe(1);
    expect(inFlightOf('s1.ops')).toBeNull();
    expect(judgedByTarget({ key: 's2.1024.ops' })).toBe(false);
    expect(TARGET).toEqual({ inFlight: 256, maxOverhead: 0.15 });

    const verdicts = targetVerdicts(ratios);
    // S2 and S6 linearizable and stale at 256: three loads, three figures each.
    expect(verdicts.auth).toMatchObject({ met: true, judged: 9, misses: [] });
    expect(verdicts.auth!.worst!.overhead).toBeCloseTo(1 / 0.9 - 1, 3);
    expect(verdicts.tls!.met).toBe(false);
    // 20% less throughput is 20% overhead; latency ÷ 0.8 is 25% overhead: every judged figure misses.
    expect(verdicts.tls!.misses.map((m) => m.key).sort()).toEqual(['s2.256.ops', 's2.256.p50', 's2.256.p99', 's6.linearizable.256.ops', 's6.linearizable.256.p50', 's6.linearizable.256.p99', 's6.stale.256.ops', 's6.stale.256.p50', 's6.stale.256.p99']);
    // S1's 5% and the other levels' 5% are not judged.
    expect(verdicts.tls!.misses.every((m) => judgedByTarget(m))).toBe(true);
    // Exactly 15% misses: the target is "under".
    const edge = [{ key: 's2.256.ops', label: 'x', unit: 'ops/s', better: 'higher' as const, plain: 100, value: 85, ratio: 0.85, overhead: 0.15 }];
    expect(targetVerdict(edge).met).toBe(false);
    expect(targetVerdict([]).met).toBeNull();
  });

  it('combines repeated runs of a load into medians', () => {
    const run = (opsPerSec: number, p50: number, p99: number, members: number): LoadFigures => ({
      inFlight: 256,
      connections: 16,
      ops: opsPerSec * 4,
      errors: 1,
      firstError: null,
      opsPerSec,
      windowMs: 4000,
      latencyMs: { count: opsPerSec * 4, min: 1, mean: p50, p50, p90: p99, p99, p999: p99, max: p99 },
      latencyCdfMs: [opsPerSec],
      cpu: { loadGeneratorPct: 50, membersPct: { n1: members } },
    });
    const c = combineRepeats([run(9000, 30, 90, 100), run(7000, 35, 60, 80), run(8000, 28, 70, 90)]);
    expect(c.opsPerSec).toBe(8000);
    expect(c.latencyMs.p50).toBe(30);
    expect(c.latencyMs.p99).toBe(70);
    // The rest is the median-throughput run's, so CPU per write is one run's own.
    expect(c.cpu).toEqual({ loadGeneratorPct: 50, membersPct: { n1: 90 } });
    expect(c.latencyCdfMs).toEqual([8000]);
    expect(c.errors).toBe(3);
    expect(combineRepeats([run(1, 2, 3, 4)]).opsPerSec).toBe(1);
    expect(combineRepeats([run(1000, 10, 20, 4), run(3000, 30, 40, 4)]).opsPerSec).toBe(2000);
    expect(() => combineRepeats([])).toThrow();
  });

  it('reports CPU per write of the members and the load generator', () => {
    const rows = cpuPerOp(configurations);
    const s2 = rows.find((r) => r.key === 's2.256')!;
    const level = PLAIN.scenarios.s2?.status === 'ok' ? PLAIN.scenarios.s2.data.levels.find((l) => l.inFlight === 256)! : null;
    const members = Object.values(level!.cpu!.membersPct).reduce((a, b) => a + b, 0);
    expect(s2.values.plain!.serversUs).toBeCloseTo((members / 100 / level!.opsPerSec) * 1e6, 0);
    expect(s2.values.plain!.loadGeneratorUs).toBeCloseTo((level!.cpu!.loadGeneratorPct / 100 / level!.opsPerSec) * 1e6, 0);
    // The same CPU for 80% of the writes: 1.25 times the CPU per write.
    expect(s2.values.tls!.serversUs / s2.values.plain!.serversUs).toBeCloseTo(1.25, 2);
    expect(rows.map((r) => r.key)).toEqual(['s1', 's2.1', 's2.16', 's2.256', 's2.1024']);
  });

  it('writes notes and a report with one row per figure and the target column', () => {
    const partial = { ratios, verdicts: targetVerdicts(ratios), cpuPerOp: cpuPerOp(configurations), configurations };
    const notes = automaticNotes(partial);
    expect(notes.some((n) => n.startsWith('**Noise.**') && n.includes('−2.0%'))).toBe(true);
    const result: SecurityResult = {
      startedAt: '2026-11-25T12:00:00.000Z',
      quick: false,
      version: '0.1.0 (abc1234)',
      machine: machineInfo(),
      fsyncFloor: PLAIN.fsyncFloor,
      fsyncFloorAfter: null,
      loadAverageAtEnd: 1.5,
      scale: { warmupMs: FULL_SCALE.warmupMs, s1: FULL_SCALE.s1, s2: FULL_SCALE.s2, s6: FULL_SCALE.s6 },
      target: TARGET,
      ...partial,
      notes,
    };
    const md = renderSecurity(result, { command: 'npm run bench -- --security-only', seconds: 420, resultFile: '../bench/results/2026-11-25-security.json', analysis: 'Hand-written reading.' });
    expect(md).toContain('npm run build && npm run bench -- --security-only');
    expect(md).toContain('| figure | unit | plain | TLS | auth | under 15% at 256? | plain again |');
    const row = (label: string): string => md.split('\n').find((l) => l.startsWith(`| ${label} |`))!;
    expect(row('S2 writes, 256 in flight throughput')).toMatch(/\| 0\.80 \(\+20\.0%\) \| 0\.90 \(\+10\.0%\) \| \*\*NO\*\*: TLS \+20\.0% \| 1\.02 \(−2\.0%\) \|$/);
    expect(row('S2 writes, 16 in flight throughput')).toMatch(/\| — \| 1\.02 \(−2\.0%\) \|$/);
    expect(md).toMatch(/\| TLS \| \*\*not met\*\*: S2 writes, 256 in flight throughput \+20\.0%/);
    expect(md).toMatch(/\| auth \| \*\*met\*\* \(worst: /);
    expect(md).toContain('## CPU per write');
    expect(md).toContain('Hand-written reading.');
    expect(md).not.toContain('## Errors');
    // A miss that plain again shares says so.
    const noisy = securityRatios([configuration('plain', 1), configuration('auth', 1, 0.8), configuration('plain-again', 1, 0.82)]);
    const md2 = renderSecurity({ ...result, ratios: noisy, verdicts: targetVerdicts(noisy) }, { command: 'x', seconds: 1, resultFile: 'r.json' });
    expect(md2).toMatch(/\| auth \| \*\*not met\*\*: S2 writes, 256 in flight throughput \+20\.0% \(plain again: \+18\.0%, so this figure cannot resolve the target in this run\)/);
    expect(md).not.toContain('cannot resolve');
  });
});

describe('bench --security-only: the leader profile', () => {
  it('puts self time in the permission-check, TLS, socket-write, GC and outside-JavaScript buckets', () => {
    const frame = (id: number, functionName: string, url: string) => ({ id, callFrame: { functionName, url, lineNumber: 0, columnNumber: 0 }, hitCount: 0 });
    const profile: CpuProfile = {
      nodes: [
        frame(1, '(root)', ''),
        frame(2, '(idle)', ''),
        frame(3, 'check', 'file:///repo/dist/server/access.js'),
        frame(4, 'allows', 'file:///repo/dist/families/auth/rules.js'),
        frame(5, 'onStreamRead', 'node:_tls_wrap'),
        frame(6, '(garbage collector)', ''),
        frame(7, '(program)', ''),
        frame(8, 'apply', 'file:///repo/dist/statemachine/apply.js'),
        frame(9, 'writev', ''),
      ],
      startTime: 0,
      endTime: 10_000,
      // Ten samples of 1 ms: 2 idle, 1 each in access and rules, 1 TLS, 1 GC, 1 program, 2 apply, 1 writev.
      samples: [2, 2, 3, 4, 5, 6, 7, 8, 8, 9],
      timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
    };
    const p = securityProfile(profile, 1000, 'x.cpuprofile');
    expect(p.busyMs).toBe(8);
    expect(p.buckets.map((b) => b.percent)).toEqual([25, 12.5, 0, 12.5, 12.5, 12.5, 25]);
    // 1000 writes/s over 10 ms is 10 writes; 8 ms busy is 800 µs each.
    expect(p.busyUsPerOp).toBe(800);
    expect(p.file).toBe('x.cpuprofile');
  });
});

describe('bench --security-only: waiting for a quiet machine', () => {
  it('reads busy and total jiffies from /proc/stat', () => {
    const stat = 'cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\nintr 1\n';
    // Busy: everything but idle (1000) and iowait (20).
    expect(readMachineJiffies(stat)).toEqual({ busy: 160, total: 1180 });
    expect(readMachineJiffies('intr 1\n')).toBeNull();
  });

  it('measures the machine over a window', async () => {
    const pct = await machineCpuPct(50);
    expect(pct).toBeGreaterThanOrEqual(0);
  });
});
