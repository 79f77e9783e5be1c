// The regression gate's pieces: its options, the keys each workload writes, the
// medians and ratios of its report, and the dependency check of an older commit.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../lib/options.js';
import { Samples } from '../lib/samples.js';
import { compareMarkdown, median, summarize } from '../compare/report.js';
import type { CompareRun } from '../compare/run.js';
import { missingDependencies } from '../compare/targets.js';
import { listFor, writeWorkloads, type WriteOutcome } from '../compare/workloads.js';

describe('--compare options', () => {
  it('takes REFs, rounds and workloads, and refuses what does not go with them', () => {
    expect(parseBenchArgs(['--compare', 'a2ee786,HEAD~1', '--rounds', '3', '--workloads', 's2-new'], '/repo')).toMatchObject({ compare: ['a2ee786', 'HEAD~1'], rounds: 3, workloads: ['s2-new'] });
    expect(parseBenchArgs(['--compare=a2ee786', '--quick'], '/repo')).toMatchObject({ compare: ['a2ee786'], rounds: 2, workloads: null, quick: true });
    expect(() => parseBenchArgs(['--rounds', '2'], '/repo')).toThrow(/goes with --compare/);
    expect(() => parseBenchArgs(['--compare', 'x', '--rounds', '0'], '/repo')).toThrow(/--rounds must be/);
    expect(() => parseBenchArgs(['--compare', 'x', '--workloads', 's9'], '/repo')).toThrow(/subset of/);
    expect(() => parseBenchArgs(['--compare', 'x', '--systems', 'etcd'], '/repo')).toThrow(/do not go together/);
    expect(() => parseBenchArgs(['--compare', ','], '/repo')).toThrow(/at least one REF/);
  });
});

describe('compare workloads and report', () => {
  it('a new-keys put goes to a list no other put used; a few-lists put to its client\'s list', () => {
    const keys = new Set(Array.from({ length: 100 }, (_, seq) => listFor('new', 'r0', seq % 16, seq)));
    expect(keys.size).toBe(100);
    expect(listFor('few', 'r0', 3, 77)).toBe('r0/c3');
    expect(writeWorkloads(false).map((w) => `${w.id}:${w.inFlight}:${w.puts}`)).toEqual(['s1-new:1:600', 's1-few:1:600', 's2-new:1024:20000', 's2-few:1024:20000']);
  });

  it('reports medians, CPU per put and this ÷ REF', () => {
    const outcome = (opsPerSec: number, cpuMsPerOp: number): WriteOutcome => {
      const samples = new Samples();
      samples.add(1);
      return { ok: 1000, failed: 0, firstError: null, seconds: 1000 / opsPerSec, opsPerSec, latencyMs: samples.summary(), cpuSeconds: { n1: cpuMsPerOp, n2: 0 }, cpuMsPerOp };
    };
    const [w] = writeWorkloads(true).filter((x) => x.id === 's2-new');
    const runs: CompareRun[] = [
      { target: 'this', workload: 's2-new', round: 0, leader: 'n1', outcome: outcome(3000, 0.2) },
      { target: 'this', workload: 's2-new', round: 1, leader: 'n1', outcome: outcome(2000, 0.4) },
      { target: 'abc', workload: 's2-new', round: 0, leader: 'n1', outcome: outcome(800, 1.2) },
      { target: 'abc', workload: 's2-new', round: 1, leader: 'n1', outcome: outcome(700, 1.6) },
    ];
    const summary = summarize(
      [{ label: 'this', checkout: '/a', commit: 'fff', temporary: false }, { label: 'abc', checkout: '/b', commit: 'abc', temporary: true }],
      [w!],
      runs,
      { startedAt: '2026-01-01T00:00:00Z', command: 'npm run bench -- --compare abc', rounds: 2, quick: true },
    );
    expect(summary.cells.find((c) => c.target === 'this')).toMatchObject({ opsPerSec: 2500, cpuMsPerOp: 0.30000000000000004, opsPerSecEach: [3000, 2000] });
    const md = compareMarkdown(summary);
    expect(md).toContain('| s2-new | this (fff) | 2500 (3000, 2000) | 0.300 |');
    expect(md).toContain('3.33x | 0.21x |');
    expect(median([3, 1, 2])).toBe(2);
    expect(median([Number.NaN])).toBeNaN();
  });

  it('names the packages an older commit needs that the shared node_modules lacks', () => {
    const dir = mkdtempSync(join(tmpdir(), 'compare-deps-'));
    try {
      mkdirSync(join(dir, 'nm', 'ws'), { recursive: true });
      writeFileSync(join(dir, 'nm', 'ws', 'package.json'), '{}');
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ dependencies: { ws: '^8' }, devDependencies: { leftpad: '1' } }));
      expect(missingDependencies(dir, join(dir, 'nm'))).toEqual(['leftpad']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
