// Flattens the result files into comparable figures: one row per measured
// number, with the value of each system and which direction is better.
import type { SystemName } from '../systems/system.js';
import type { LoadFigures, ScenarioId, ScenarioResults, SystemResult } from './results.js';

/** What figures are read from: a whole result file, or any measurement shaped like one (the security run's configurations). */
export type FigureSource = Pick<SystemResult, 'system' | 'scenarios' | 'peakRssBytes'>;

export type Better = 'higher' | 'lower' | 'none';

export interface Figure {
  readonly scenario: string;
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly better: Better;
  /** undefined: not measured for that system (failed, skipped, unsupported, or not run). */
  readonly values: Partial<Record<SystemName, number>>;
}

type Getter = (r: FigureSource) => number | undefined;

interface FigureSpec {
  readonly scenario: string;
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly better: Better;
  readonly get: Getter;
}

const finite = (v: number | null | undefined): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function loadSpecs(scenario: string, keyPrefix: string, labelPrefix: string, pick: (r: FigureSource) => LoadFigures | null | undefined): FigureSpec[] {
  return [
    { scenario, key: `${keyPrefix}.ops`, label: `${labelPrefix} throughput`, unit: 'ops/s', better: 'higher', get: (r) => finite(pick(r)?.opsPerSec) },
    { scenario, key: `${keyPrefix}.p50`, label: `${labelPrefix} p50`, unit: 'ms', better: 'lower', get: (r) => finite(pick(r)?.latencyMs.p50) },
    { scenario, key: `${keyPrefix}.p99`, label: `${labelPrefix} p99`, unit: 'ms', better: 'lower', get: (r) => finite(pick(r)?.latencyMs.p99) },
  ];
}

type DataOf<K extends ScenarioId> = Extract<NonNullable<ScenarioResults[K]>, { status: 'ok' }>['data'];

/** A scenario's data when it ran and succeeded. */
export function scenarioData<K extends ScenarioId>(r: FigureSource, k: K): DataOf<K> | undefined {
  const o = r.scenarios[k] as ScenarioResults[K];
  return o !== undefined && o.status === 'ok' ? (o.data as DataOf<K>) : undefined;
}
const ok = scenarioData;

/** The figure specs for this run; levels and steps come from the results themselves. */
function specsFor(results: readonly FigureSource[]): FigureSpec[] {
  const specs: FigureSpec[] = [];
  specs.push(...loadSpecs('S1', 's1', 'S1 sequential writes', (r) => ok(r, 's1')));
  const levels = unique(results.flatMap((r) => ok(r, 's2')?.levels.map((l) => l.inFlight) ?? []));
  for (const level of levels) {
    specs.push(...loadSpecs('S2', `s2.${level}`, `S2 writes, ${level} in flight`, (r) => ok(r, 's2')?.levels.find((l) => l.inFlight === level)));
  }
  specs.push(...loadSpecs('S2', 's2.new', 'S2 writes, a new key per put, at the top level', (r) => ok(r, 's2')?.newKeys));
  specs.push({ scenario: 'S2', key: 's2.elections', label: 'S2 elections during the load', unit: 'count', better: 'lower', get: (r) => finite(ok(r, 's2')?.electionsDuring) });
  const watcherCounts = unique(results.flatMap((r) => ok(r, 's3')?.map((f) => f.watchers) ?? []));
  for (const w of watcherCounts) {
    const pick = (r: FigureSource) => ok(r, 's3')?.find((f) => f.watchers === w);
    specs.push({ scenario: 'S3', key: `s3.${w}.p50`, label: `S3 ${w} watchers, ack→notify p50`, unit: 'ms', better: 'lower', get: (r) => finite(pick(r)?.ackToNotifyMs.p50) });
    specs.push({ scenario: 'S3', key: `s3.${w}.p99`, label: `S3 ${w} watchers, ack→notify p99`, unit: 'ms', better: 'lower', get: (r) => finite(pick(r)?.ackToNotifyMs.p99) });
    specs.push({ scenario: 'S3', key: `s3.${w}.lost`, label: `S3 ${w} watchers, notifications lost`, unit: 'count', better: 'lower', get: (r) => finite(pick(r)?.lost) });
  }
  const s4 = (r: FigureSource) => ok(r, 's4');
  specs.push({ scenario: 'S4', key: 's4.min', label: 'S4 delete seen after owner\'s last bytes, min', unit: 'ms', better: 'none', get: (r) => finite(s4(r)?.sinceLastOwnerBytesMs.min) });
  specs.push({ scenario: 'S4', key: 's4.p50', label: 'S4 delete seen after owner\'s last bytes, p50', unit: 'ms', better: 'lower', get: (r) => finite(s4(r)?.sinceLastOwnerBytesMs.p50) });
  specs.push({ scenario: 'S4', key: 's4.max', label: 'S4 delete seen after owner\'s last bytes, max', unit: 'ms', better: 'lower', get: (r) => finite(s4(r)?.sinceLastOwnerBytesMs.max) });
  specs.push({ scenario: 'S4', key: 's4.cut', label: 'S4 delete seen after the cut, p50', unit: 'ms', better: 'lower', get: (r) => finite(s4(r)?.sinceCutMs.p50) });
  specs.push({ scenario: 'S5', key: 's5.median', label: 'S5 failover gap, median', unit: 'ms', better: 'lower', get: (r) => finite(ok(r, 's5')?.gapMs.p50) });
  specs.push({ scenario: 'S5', key: 's5.rejoin', label: 'S5 killed member restarted to a healthy cluster, median', unit: 'ms', better: 'lower', get: (r) => finite(ok(r, 's5')?.rejoinMs?.p50) });
  specs.push({ scenario: 'S5', key: 's5.max', label: 'S5 failover gap, max', unit: 'ms', better: 'lower', get: (r) => finite(ok(r, 's5')?.gapMs.max) });
  const readKeys = unique(results.flatMap((r) => ok(r, 's6')?.map((f) => f.inFlight) ?? []));
  for (const mode of ['linearizable', 'stale'] as const) {
    for (const inFlight of readKeys) {
      specs.push(...loadSpecs('S6', `s6.${mode}.${inFlight}`, `S6 ${mode} reads, ${inFlight} in flight`, (r) => ok(r, 's6')?.find((f) => f.mode === mode && f.inFlight === inFlight)?.load));
    }
  }
  const stepKeys = unique(results.flatMap((r) => ok(r, 's7')?.steps.map(stepKey) ?? []));
  for (const key of stepKeys) {
    const pick = (r: FigureSource) => ok(r, 's7')?.steps.find((s) => stepKey(s) === key);
    const label = stepLabel(key);
    specs.push({ scenario: 'S7', key: `s7.${key}.p50`, label: `S7 write p50 at ${label}`, unit: 'ms', better: 'lower', get: (r) => finite(pick(r)?.writeLatencyMs.p50) });
    specs.push({ scenario: 'S7', key: `s7.${key}.rss`, label: `S7 largest member RSS at ${label}`, unit: 'MiB', better: 'lower', get: (r) => maxRssMiB(pick(r)?.rssBytes) });
  }
  specs.push({ scenario: 'S7', key: 'peak.rss', label: 'Peak RSS of any member, whole run', unit: 'MiB', better: 'lower', get: (r) => maxRssMiB(r.peakRssBytes) });
  return specs;
}

export function stepKey(step: { readonly items: number; readonly sessions: number; readonly watches: number }): string {
  return `${step.items}i-${step.sessions}s-${step.watches}w`;
}

export function stepLabel(key: string): string {
  const m = /^(\d+)i-(\d+)s-(\d+)w$/.exec(key);
  if (m === null) return key;
  const [, items, sessions, watches] = m;
  const parts = [`${fmtCount(Number(items))} items`];
  if (Number(sessions) > 0) parts.push(`${fmtCount(Number(sessions))} sessions`, `${fmtCount(Number(watches))} watches`);
  return parts.join(', ');
}

export function fmtCount(n: number): string {
  if (n >= 1_000_000 && n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1_000 && n % 1_000 === 0) return `${n / 1_000}k`;
  return String(n);
}

export function maxRssMiB(rss: Readonly<Record<string, number>> | undefined): number | undefined {
  if (rss === undefined) return undefined;
  const values = Object.values(rss);
  return values.length === 0 ? undefined : Math.max(...values) / 2 ** 20;
}

function unique(values: readonly number[]): number[];
function unique(values: readonly string[]): string[];
function unique(values: readonly (number | string)[]): (number | string)[] {
  const seen = [...new Set(values)];
  return typeof seen[0] === 'number' ? (seen as number[]).sort((a, b) => a - b) : seen;
}

export function buildFigures(results: readonly FigureSource[]): Figure[] {
  return specsFor(results).map((spec) => {
    const values: Partial<Record<SystemName, number>> = {};
    for (const r of results) {
      const v = spec.get(r);
      if (v !== undefined) values[r.system] = v;
    }
    return { scenario: spec.scenario, key: spec.key, label: spec.label, unit: spec.unit, better: spec.better, values };
  });
}

/**
 * Vera's value over the other's; undefined when either is missing, or when
 * either is not positive (a 0 count, or a negative ack→notify latency, has
 * no meaningful ratio).
 */
export function ratio(figure: Figure, other: SystemName): number | undefined {
  const vera = figure.values.vera;
  const theirs = figure.values[other];
  if (vera === undefined || theirs === undefined || theirs <= 0 || vera < 0) return undefined;
  return vera / theirs;
}
