// H1's report: the targets judged from a result, and the table.
import { describe, expect, it } from 'vitest';
import type { H1Result } from '../hibernate/h1.js';
import { h1Targets, renderH1 } from '../hibernate/report.js';

const lat = (p99: number) => ({ count: 100, min: 1, mean: 2, p50: 2, p90: 3, p99, p999: p99, max: p99 });
const result: H1Result = {
  items: 1_000_000,
  units: 10_000,
  loadSeconds: 60,
  emptyRssBytes: 200 * 2 ** 20,
  hot: { hotBytes: 100 * 2 ** 20, defraggedHotBytes: 90 * 2 ** 20, coldBytes: 0, rssBytes: 500 * 2 ** 20, restartedRssBytes: 400 * 2 ** 20, activeWrites: lat(8) },
  frozen: { hotBytes: 10 * 2 ** 20, defraggedHotBytes: 9 * 2 ** 20, coldBytes: 30 * 2 ** 20, rssBytes: 450 * 2 ** 20, restartedRssBytes: 230 * 2 ** 20, activeWrites: lat(9) },
  freeze: { units: 8840, seconds: 30, perSec: 300, activeWrites: lat(20) },
  paced: [
    { pace: 16, units: 160, seconds: 10, perSec: 16, activeWrites: lat(12), before: lat(8) },
    { pace: 8, units: 80, seconds: 10, perSec: 8, activeWrites: lat(9), before: lat(8) },
  ],
  thaw: lat(12),
  firstRead: lat(4),
  large: { items: 100_000, before: lat(10), freezeSeconds: 2.5, freezing: lat(11), thawSeconds: 1.25, thawing: lat(40) },
  errors: [],
};

describe('H1 targets', () => {
  it('judges hot size and RSS reductions, active-set p99, thaw p99 and freezing\'s cost', () => {
    expect(Object.fromEntries(h1Targets(result).map((t) => [t.what, t.met]))).toEqual({
      'hot store at least 5x smaller with 90% frozen, as found on disk (no manual defrag)': true,
      'member RSS reduced at least 5x': false,
      "member RSS above an empty member's reduced at least 5x": true,
      'active-set write p99 unchanged within noise (within 20%)': true,
      'thaw p99 under 50 ms (a 100-item unit; its first write waits for it)': true,
      'freeze throughput without raising active-set p99 by more than 20%': true,
      "unrelated writes' p99 within 1.2x while a 100,000-item unit freezes (issue 34)": true,
      "unrelated writes' p99 within 1.2x while a 100,000-item unit thaws (issue 34)": false,
    });
  });

  it('renders both phases and the freeze and thaw figures', () => {
    const md = renderH1(result, { command: 'npm run bench -- --hibernate-only', seconds: 120, resultFile: 'x.json' });
    expect(md).toContain('| hot store (db) as found on disk | 100.0 MiB | 10.0 MiB |');
    expect(md).toContain('| hot store (db) after POST /v1/defrag | 90.0 MiB | 9.0 MiB |');
    expect(md).toContain('8,840 units in 30.0 s (300 units/s)');
    expect(md).toContain('| 16/s | 160 (16.0/s) | 2.00 -> 2.00 ms | 8.00 -> 12.00 ms | 1.50x |');
    expect(md).toContain('| freeze throughput without raising active-set p99 by more than 20% | yes | 8 units/s (p99 8.00 -> 9.00 ms, 1.13x); by pace: 16/s 1.50x, 8/s 1.13x;');
    expect(md).toContain('| member RSS after a restart | 400.0 MiB | 230.0 MiB |');
    expect(md).toContain("| member RSS above an empty member's reduced at least 5x | yes | after a restart 200.0 MiB -> 30.0 MiB (6.67x) |");
    expect(md).toContain('| member RSS reduced at least 5x | NO |');
    expect(md).toContain('active-set p99 10.00 ms just before, 11.00 ms while it froze (2.50 s), 40.00 ms while it thawed (1.25 s)');
    expect(md).toContain('Thaw (the first write to a frozen');
    expect(md).toContain('The first read of another (it starts the thaw and is answered from the cold file meanwhile), 100 units: p50 2.00 ms, p99 4.00 ms');
    expect(md).toContain("| unrelated writes' p99 within 1.2x while a 100,000-item unit freezes (issue 34) | yes | 10.00 -> 11.00 ms (1.10x), the freeze took 2.50 s |");
  });
});
