import { describe, expect, it } from 'vitest';
import { buildFigures, ratio } from '../report/figures.js';
import { renderReport } from '../report/markdown.js';
import { buildPlots } from '../report/plots.js';
import { resultFileName, runFilePrefix, type LoadFigures, type SystemResult } from '../report/results.js';
import { lineChart } from '../report/svg.js';
import { checkTargets } from '../report/targets.js';
import type { SystemName } from '../systems/system.js';

const latency = (p50: number, p99: number, min = p50 / 2) => ({ count: 100, min, mean: p50, p50, p90: p99 * 0.8, p99, p999: p99, max: p99 });
const load = (inFlight: number, opsPerSec: number, p50: number, p99: number): LoadFigures => ({
  inFlight,
  connections: Math.min(inFlight, 16),
  ops: 100,
  errors: 0,
  firstError: null,
  opsPerSec,
  windowMs: 1000,
  latencyMs: latency(p50, p99),
  latencyCdfMs: Array.from({ length: 101 }, (_, q) => p50 * (1 + q / 50)),
});

function result(system: SystemName, k: number): SystemResult {
  return {
    schema: 1,
    system,
    available: true,
    availabilityNote: '',
    version: '1',
    settings: {},
    startedAt: '2026-01-02T03:04:05.000Z',
    command: 'npm run bench',
    quick: false,
    machine: { cpus: 2, cpuModel: 'test', memoryBytes: 2 ** 34, freeMemoryBytes: 2 ** 33, os: 'Linux', distro: 'Debian', node: 'v20', loadAverage1m: 0.5 },
    fsyncFloor: { method: 'test', directory: '/tmp', blockBytes: 4096, latencyMs: latency(1, 3), opsPerSec: 1000 },
    scenarios: {
      s1: { status: 'ok', durationMs: 1, data: load(1, 100 * k, 4 / k, 10 / k) },
      s2: { status: 'ok', durationMs: 1, data: { levels: [load(256, 1000 * k, 50, 100 / k), load(1024, 2000 * k, 100, 200 / k)], electionsDuring: 0 } },
      s3: {
        status: 'ok',
        durationMs: 1,
        data: [{ watchers: 1000, rounds: 10, expected: 10_000, received: 10_000, lost: 0, duplicates: 0, ackToNotifyMs: latency(5, 40 / k), sendToNotifyMs: latency(6, 41), ackToNotifyCdfMs: [] }],
      },
      s4: { status: 'ok', durationMs: 1, data: { ttlMs: 2000, grantedTimeoutsMs: [2000], owners: 1, trials: [{ sinceLastOwnerBytesMs: 2050, sinceCutMs: 1900 }], missed: 0, sinceLastOwnerBytesMs: latency(2050, 2060, 2030), sinceCutMs: latency(1900, 1900) } },
      s5: { status: 'ok', durationMs: 1, data: { trials: [], gapMs: latency(3000 / k, 3000 / k) } },
      s6: { status: 'failed', durationMs: 1, error: 'boom' },
      s7: { status: 'skipped', reason: 'did not fit in the time budget' },
    },
    peakRssBytes: { a: 100 * 2 ** 20 },
    profile: null,
  };
}

const vera = result('vera', 2);
const etcd = result('etcd', 1);

describe('figures and ratios', () => {
  it('puts every system side by side and divides Vera by the other', () => {
    const figures = buildFigures([vera, etcd]);
    const s1 = figures.find((f) => f.key === 's1.ops');
    expect(s1?.values).toEqual({ vera: 200, etcd: 100 });
    expect(s1 && ratio(s1, 'etcd')).toBe(2);
    expect(s1 && ratio(s1, 'zookeeper')).toBeUndefined();
    expect(figures.find((f) => f.key === 's2.1024.p99')?.values).toEqual({ vera: 100, etcd: 200 });
    // A failed scenario leaves no figure rather than a zero.
    expect(figures.filter((f) => f.scenario === 'S6').every((f) => Object.keys(f.values).length === 0)).toBe(true);
  });

  it('has no ratio for a non-positive value', () => {
    const fig = { scenario: 'S3', key: 'k', label: 'l', unit: 'ms', better: 'lower' as const, values: { vera: 3, etcd: -1 } };
    expect(ratio(fig, 'etcd')).toBeUndefined();
    expect(ratio({ ...fig, values: { vera: -1, etcd: 2 } }, 'etcd')).toBeUndefined();
  });
});

describe('targets', () => {
  it('says which targets are met and by how much the others are missed', () => {
    const checks = checkTargets([vera, etcd]);
    const s1 = checks.find((c) => c.scenario === 'S1' && c.target.includes('etcd'));
    expect(s1?.status).toBe('met');
    expect(checks.find((c) => c.target.includes('fsync floor'))).toMatchObject({ status: 'met' });
    const s5 = checks.find((c) => c.scenario === 'S5' && c.target.includes('etcd'));
    // 1500 ms against a limit of 3000/3 = 1000 ms.
    expect(s5?.status).toBe('not met');
    expect(s5?.detail).toContain('500 ms over the limit of 1000 ms');
    expect(checks.find((c) => c.scenario === 'S4')?.status).toBe('met');
    expect(checks.find((c) => c.scenario === 'S6')?.status).toBe('n/a');
    expect(checks.find((c) => c.scenario === 'S5' && c.target.includes('ZooKeeper'))?.status).toBe('n/a');
  });

  it('fails S4 when the delete comes before the timeout', () => {
    const early = structuredClone(vera);
    early.scenarios.s4 = { status: 'ok', durationMs: 1, data: { ttlMs: 2000, grantedTimeoutsMs: [2000], owners: 1, trials: [], missed: 0, sinceLastOwnerBytesMs: latency(2010, 2020, 1900), sinceCutMs: latency(1800, 1800) } };
    const s4 = checkTargets([early, etcd]).find((c) => c.scenario === 'S4');
    expect(s4?.status).toBe('not met');
    expect(s4?.detail).toContain('too early');
  });
});

describe('report and plots', () => {
  it('renders the table, the targets, the failures and the command', () => {
    const md = renderReport([vera, etcd], { command: 'npm run bench -- --systems vera,etcd', finishedAt: 'now', totalSeconds: 600, plots: [{ href: 'p.svg', title: 'plot' }], resultFiles: ['r.json'], unavailable: [{ system: 'zookeeper', note: 'apt-get failed' }] });
    expect(md).toContain('npm run bench -- --systems vera,etcd');
    expect(md).toContain('| S1 sequential writes throughput | ops/s | higher | 200 | 100 | 2.00 |');
    expect(md).toContain('**ZooKeeper was not measured:** apt-get failed');
    expect(md).toContain('failed: boom');
    expect(md).toContain('skipped: did not fit in the time budget');
    expect(md).toContain('![plot](p.svg)');
  });

  it('places the hand-written analysis right after the targets table', () => {
    const base = { command: 'c', finishedAt: 'now', totalSeconds: 1, plots: [], resultFiles: [], unavailable: [] };
    const md = renderReport([vera, etcd], { ...base, analysis: '## Why some targets are missed\n\nBecause.\n' });
    const targets = md.indexOf('## Targets (issue 6)');
    const analysis = md.indexOf('## Why some targets are missed');
    expect(targets).toBeGreaterThan(0);
    expect(analysis).toBeGreaterThan(targets);
    expect(md.indexOf('## ', targets + 1)).toBe(analysis);
    expect(renderReport([vera, etcd], base)).not.toContain('## Why some targets are missed');
  });

  it('draws one SVG per plot with a series per system', () => {
    const plots = buildPlots([vera, etcd]);
    expect(plots.map((p) => p.name)).toContain('s2-throughput.svg');
    const s2 = plots.find((p) => p.name === 's2-throughput.svg')!.svg;
    expect(s2.startsWith('<svg')).toBe(true);
    expect(s2.match(/<polyline/g)?.length).toBe(2);
    expect(s2).toContain('>Vera<');
    const s7 = plots.find((p) => p.name === 's7-memory.svg')!;
    expect(s7.svg).toContain('no data');
    expect(s7.hasData).toBe(false);
    expect(plots.find((p) => p.name === 's2-throughput.svg')!.hasData).toBe(true);
  });

  it('leaves out the targets and status rows of scenarios no system ran (a --scale run)', () => {
    const s7Only = (r: SystemResult): SystemResult => ({ ...r, scenarios: { s7: r.scenarios.s7! } });
    const md = renderReport([s7Only(vera), s7Only(etcd)], { command: 'c', finishedAt: 'now', totalSeconds: 1, plots: [], resultFiles: [], unavailable: [] });
    expect(md).toContain('| S7 | skipped: did not fit in the time budget |');
    expect(md).not.toMatch(/^\| S[1-6] \|/m);
    expect(renderReport([vera, etcd], { command: 'c', finishedAt: 'now', totalSeconds: 1, plots: [], resultFiles: [], unavailable: [] })).toMatch(/^\| S6 \| failed: boom/m);
  });

  it('names a --scale run\'s files apart from a full run of the same day', () => {
    const started = '2026-11-24T09:26:05.000Z';
    expect(resultFileName(runFilePrefix(started, false), 'vera')).toBe('2026-11-24-vera.json');
    expect(resultFileName(runFilePrefix(started, true), 'vera')).toBe('2026-11-24-scale-vera.json');
  });
});

describe('svg axes', () => {
  it('ends a log axis at the largest value and keeps every point inside the plot', () => {
    const svg = lineChart({ title: 't', xLabel: 'x', yLabel: 'y', xLog: true, series: [{ name: 's', points: [[1, 1], [16, 2], [256, 3], [1024, 4]] }] });
    expect(svg).not.toContain('>10k<');
    expect(svg).toContain('>1k<');
    const xs = [...svg.matchAll(/<circle cx="([\d.]+)"/g)].map((m) => Number(m[1]));
    expect(xs).toHaveLength(4);
    for (const x of xs) expect(x >= 70 && x <= 620.01).toBe(true);
  });

  it('escapes text', () => {
    const svg = lineChart({ title: 'a < b & "c"', xLabel: 'x', yLabel: 'y', series: [] });
    expect(svg).toContain('a &lt; b &amp; &quot;c&quot;');
    expect(svg).toContain('no data');
  });
});
