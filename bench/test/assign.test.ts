// A1's report: the targets judged from results, and the table.
import { describe, expect, it } from 'vitest';
import type { A1Result } from '../assign/a1.js';
import { a1Targets, renderA1 } from '../assign/report.js';

const latency = { count: 10, min: 0.5, mean: 1, p50: 1, p90: 2, p99: 3, p999: 3, max: 4 };

function result(system: string, perSec: Record<number, number>, drift: number | null = 0): A1Result {
  return {
    system,
    settings: 's',
    levels: Object.entries(perSec).map(([c, v]) => ({ clients: Number(c), requests: v * 10, created: v * 5, perSec: v, latencyMs: latency, errors: 0 })),
    counters: drift === null ? null : { load: 100 + drift, currentRecords: 100, nodesOff: null, duplicates: null },
    drift,
    errors: [],
  };
}

describe('A1 targets', () => {
  it('judges 2x PostgreSQL at 16 and 256 clients, 1x at 1 client, the drain and zero drift', () => {
    const targets = a1Targets([result('Vera', { 1: 500, 16: 5000, 256: 9000 }), result('PostgreSQL 15 (Tokenserver schema)', { 1: 900, 16: 2000, 256: 6000 })]);
    expect(Object.fromEntries(targets.map((t) => [t.what, t.met]))).toEqual({
      'requests/s at 16 clients >= 2x PostgreSQL': true,
      'requests/s at 256 clients >= 2x PostgreSQL': false,
      'requests/s at 1 client >= 1x PostgreSQL': false,
      // No drain in these results: not measured rather than met.
      "the load's p99 during a drain <= 1.5x without": null,
      'zero counter drift, replicated on three members': true,
    });
    expect(a1Targets([result('Vera', { 16: 1 }, 3)]).map((t) => t.met)).toEqual([null, null, null, null, false]);
  });

  it('renders every level of every system, and a system that failed', () => {
    const md = renderA1([result('Vera', { 1: 500, 16: 5000 }), { ...result('PostgreSQL 15 (Tokenserver schema)', {}, null), errors: ['not available'] }], { command: 'npm run bench -- --assign-only', seconds: 60, resultFile: 'x.json' });
    expect(md).toContain('| Vera | 1 | 500 | 1.00 | 3.00 | 2500 | 0 |');
    expect(md).toContain('| Vera | 16 | 5,000 |');
    expect(md).toContain('| PostgreSQL 15 (Tokenserver schema) | - | - | - | - | - | not available |');
    expect(md).toContain('| requests/s at 16 clients >= 2x PostgreSQL | not measured |');
  });
});
