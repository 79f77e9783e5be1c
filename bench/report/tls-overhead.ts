// The cost of TLS and authentication on Vera's client port (issue 16): S1, S2
// and S6 figures of one configuration next to those of a plain one, each as
// configuration ÷ plain (throughput: below 1 is a loss; latency: above 1 is a
// loss). `--security-only` compares four configurations of one run
// (bench/security); `--tls` compares a TLS run with the newest plain Vera result
// in the same directory.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildFigures, type Better, type FigureSource } from './figures.js';

export interface OverheadRow {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly better: Better;
  readonly plain: number;
  /** The configuration's figure (TLS, authentication, ...). */
  readonly value: number;
  /** value / plain. */
  readonly ratio: number;
  /** How much worse the configuration is, as a fraction (0.1: 10% slower or 10% less throughput); negative when better. */
  readonly overhead: number;
}

const SCENARIOS = new Set(['S1', 'S2', 'S6']);

/** S1, S2 and S6 figures both measured, as configuration ÷ plain, in the order of the report's figures. */
export function overheadRows(plain: FigureSource, other: FigureSource): OverheadRow[] {
  const before = new Map(buildFigures([plain]).map((f) => [f.key, f]));
  const rows: OverheadRow[] = [];
  for (const f of buildFigures([other])) {
    if (!SCENARIOS.has(f.scenario) || f.better === 'none' || f.unit === 'count') continue;
    const p = before.get(f.key)?.values[plain.system];
    const v = f.values[other.system];
    if (p === undefined || v === undefined || p <= 0 || v < 0) continue;
    const ratio = v / p;
    rows.push({ key: f.key, label: f.label, unit: f.unit, better: f.better, plain: p, value: v, ratio, overhead: f.better === 'higher' ? 1 - ratio : ratio - 1 });
  }
  return rows;
}

/** A `--tls` run against a plain one: the same as overheadRows. */
export const tlsOverhead = overheadRows;

/** The newest plain (not scale-, not tls-) Vera result file in `dir`, or null. */
export function newestPlainVeraResult(dir: string): string | null {
  const names = readdirSync(dir).filter((n) => /^\d{4}-\d{2}-\d{2}-vera\.json$/.test(n)).sort();
  const last = names[names.length - 1];
  return last === undefined ? null : join(dir, last);
}

/** One line per figure, for the bench log. */
export function formatOverhead(rows: readonly OverheadRow[]): string[] {
  return rows.map((r) => `${r.label}: ${fmt(r.plain)} → ${fmt(r.value)} ${r.unit} (×${r.ratio.toFixed(2)}, ${r.overhead >= 0 ? '+' : ''}${(100 * r.overhead).toFixed(1)}% overhead)`);
}

function fmt(v: number): string {
  return v >= 100 ? v.toFixed(0) : v.toFixed(2);
}
