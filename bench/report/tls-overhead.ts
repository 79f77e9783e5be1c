// The cost of TLS on Vera's client port (issue 16): a `--tls` run's S1, S2 and S6
// figures next to those of the newest plain Vera result in the same directory,
// each as TLS ÷ plain (throughput: below 1 is a loss; latency: above 1 is a loss).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildFigures, type Better } from './figures.js';
import type { SystemResult } from './results.js';

export interface OverheadRow {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly better: Better;
  readonly plain: number;
  readonly tls: number;
  /** tls / plain. */
  readonly ratio: number;
  /** How much worse TLS is, as a fraction (0.1: 10% slower or 10% less throughput); negative when better. */
  readonly overhead: number;
}

const SCENARIOS = new Set(['S1', 'S2', 'S6']);

/** S1, S2 and S6 figures both runs measured, as ratios. */
export function tlsOverhead(plain: SystemResult, tls: SystemResult): OverheadRow[] {
  const before = new Map(buildFigures([plain]).map((f) => [f.key, f]));
  const rows: OverheadRow[] = [];
  for (const f of buildFigures([tls])) {
    if (!SCENARIOS.has(f.scenario) || f.better === 'none' || f.unit === 'count') continue;
    const p = before.get(f.key)?.values[plain.system];
    const t = f.values[tls.system];
    if (p === undefined || t === undefined || p <= 0 || t < 0) continue;
    const ratio = t / p;
    rows.push({ key: f.key, label: f.label, unit: f.unit, better: f.better, plain: p, tls: t, ratio, overhead: f.better === 'higher' ? 1 - ratio : ratio - 1 });
  }
  return rows;
}

/** The newest plain (not scale-, not tls-) Vera result file in `dir`, or null. */
export function newestPlainVeraResult(dir: string): string | null {
  const names = readdirSync(dir).filter((n) => /^\d{4}-\d{2}-\d{2}-vera\.json$/.test(n)).sort();
  const last = names[names.length - 1];
  return last === undefined ? null : join(dir, last);
}

/** One line per figure, for the bench log. */
export function formatOverhead(rows: readonly OverheadRow[]): string[] {
  return rows.map((r) => `${r.label}: ${fmt(r.plain)} → ${fmt(r.tls)} ${r.unit} (×${r.ratio.toFixed(2)}, ${r.overhead >= 0 ? '+' : ''}${(100 * r.overhead).toFixed(1)}% overhead)`);
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(2);
}
