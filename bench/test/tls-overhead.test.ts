// `npm run bench -- --tls`: its options, and the TLS overhead table (S1, S2, S6
// as TLS ÷ plain) computed against the newest plain Vera result.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../lib/options.js';
import type { SystemResult } from '../report/results.js';
import { formatOverhead, newestPlainVeraResult, tlsOverhead } from '../report/tls-overhead.js';

const PLAIN = JSON.parse(readFileSync(resolve(import.meta.dirname, '../results/2026-11-22-vera.json'), 'utf8')) as SystemResult;

/** The plain result with every S1, S2 and S6 throughput scaled by `factor` and latency divided by it. */
function slower(result: SystemResult, factor: number): SystemResult {
  const copy = JSON.parse(JSON.stringify(result)) as { scenarios: Record<string, { status: string; data: unknown }> };
  const scaleLoad = (l: { opsPerSec: number; latencyMs: Record<string, number> } | null | undefined): void => {
    if (l === null || l === undefined) return;
    l.opsPerSec *= factor;
    for (const k of Object.keys(l.latencyMs)) l.latencyMs[k]! /= factor;
  };
  scaleLoad(copy.scenarios.s1?.data as never);
  for (const level of (copy.scenarios.s2?.data as { levels: never[] } | undefined)?.levels ?? []) scaleLoad(level);
  for (const read of (copy.scenarios.s6?.data as Array<{ load: never }> | undefined) ?? []) scaleLoad(read.load);
  return copy as unknown as SystemResult;
}

describe('bench --tls', () => {
  it('runs the main scenarios only, into a report of its own', () => {
    expect(parseBenchArgs(['--tls', '--systems', 'vera'], '/repo')).toMatchObject({ tls: true, systems: ['vera'], docsFile: '/repo/docs/performance-tls.md', journal: 'no', assign: 'no', hibernate: 'no' });
    expect(parseBenchArgs([], '/repo')).toMatchObject({ tls: false });
    expect(() => parseBenchArgs(['--tls', '--scale'], '/repo')).toThrow(/do not go together/);
  });

  it('reports S1, S2 and S6 figures as TLS ÷ plain, with the overhead as a fraction', () => {
    const rows = tlsOverhead(PLAIN, slower(PLAIN, 0.8));
    expect(new Set(rows.map((r) => r.key.split('.')[0]))).toEqual(new Set(['s1', 's2', 's6']));
    const s1 = rows.find((r) => r.key === 's1.ops')!;
    expect(s1.ratio).toBeCloseTo(0.8, 6);
    expect(s1.overhead).toBeCloseTo(0.2, 6);
    const p99 = rows.find((r) => r.key === 's1.p99')!;
    expect(p99.ratio).toBeCloseTo(1.25, 2);
    expect(p99.overhead).toBeCloseTo(0.25, 2);
    expect(rows.some((r) => r.key === 's2.256.ops')).toBe(true);
    expect(formatOverhead([s1])[0]).toMatch(/^S1 sequential writes throughput: .* ops\/s \(×0\.80, \+20\.0% overhead\)$/);
  });

  it('compares with the newest plain Vera result, never a scale or TLS one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-tls-'));
    try {
      expect(newestPlainVeraResult(dir)).toBeNull();
      for (const name of ['2026-11-20-vera.json', '2026-11-22-vera.json', '2026-11-23-scale-vera.json', '2026-11-24-tls-vera.json', '2026-11-24-etcd.json']) writeFileSync(join(dir, name), '{}');
      expect(newestPlainVeraResult(dir)).toBe(join(dir, '2026-11-22-vera.json'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
