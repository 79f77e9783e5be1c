// The report's plots, from the result files: latency distributions,
// throughput against concurrency, notification latency, memory against scale.
import { DISPLAY_NAMES } from '../systems/system.js';
import { maxRssMiB, scenarioData } from './figures.js';
import type { SystemResult } from './results.js';
import { lineChart, type ChartSpec, type Series } from './svg.js';

export interface PlotFile {
  /** File name suffix, e.g. "s2-throughput.svg". */
  readonly name: string;
  readonly title: string;
  readonly svg: string;
  /** False when no system has a point in it (its scenario was not run). */
  readonly hasData: boolean;
}

const plot = (name: string, title: string, spec: ChartSpec): PlotFile => ({ name, title, svg: lineChart(spec), hasData: spec.series.some((s) => s.points.length > 0) });

const cdfSeries = (name: string, cdf: readonly number[] | undefined): Series => ({ name, points: (cdf ?? []).map((ms, q) => [ms, q] as const) });

export function buildPlots(results: readonly SystemResult[]): PlotFile[] {
  const plots: PlotFile[] = [];
  const named = (r: SystemResult): string => DISPLAY_NAMES[r.system];

  plots.push(
    plot('s1-latency.svg', 'S1 sequential write latency distribution', {
      title: 'S1: sequential write latency (1 client)',
      xLabel: 'latency (ms, log scale)',
      yLabel: 'percentile',
      xLog: true,
      series: results.map((r) => cdfSeries(named(r), scenarioData(r, 's1')?.latencyCdfMs)),
    }),
  );
  plots.push(
    plot('s2-throughput.svg', 'S2 write throughput against concurrency', {
      title: 'S2: write throughput against operations in flight',
      xLabel: 'operations in flight (log scale)',
      yLabel: 'ops/s',
      xLog: true,
      series: results.map((r) => ({ name: named(r), points: (scenarioData(r, 's2')?.levels ?? []).map((l) => [l.inFlight, l.opsPerSec] as const) })),
    }),
  );
  plots.push(
    plot('s2-p99.svg', 'S2 write p99 against concurrency', {
      title: 'S2: write p99 latency against operations in flight',
      xLabel: 'operations in flight (log scale)',
      yLabel: 'p99 (ms, log scale)',
      xLog: true,
      yLog: true,
      series: results.map((r) => ({ name: named(r), points: (scenarioData(r, 's2')?.levels ?? []).map((l) => [l.inFlight, l.latencyMs.p99] as const) })),
    }),
  );
  const s3 = (r: SystemResult) => {
    const runs = scenarioData(r, 's3') ?? [];
    return runs[runs.length - 1];
  };
  plots.push(
    plot('s3-notify.svg', 'S3 notification latency distribution (largest fan-out)', {
      title: `S3: write acknowledged → notification, ${results.map((r) => s3(r)?.watchers).find((w) => w !== undefined) ?? ''} watchers`,
      xLabel: 'ms after the write was acknowledged',
      yLabel: 'percentile',
      series: results.map((r) => cdfSeries(named(r), s3(r)?.ackToNotifyCdfMs)),
    }),
  );
  plots.push(
    plot('s7-memory.svg', 'S7 largest member RSS against data size', {
      title: 'S7: largest member RSS against items stored',
      xLabel: 'items (log scale)',
      yLabel: 'RSS (MiB)',
      xLog: true,
      series: results.map((r) => ({ name: named(r), points: (scenarioData(r, 's7')?.steps ?? []).filter((s) => s.sessions === 0).map((s) => [s.items, maxRssMiB(s.rssBytes) ?? Number.NaN] as const) })),
    }),
  );
  plots.push(
    plot('s7-latency.svg', 'S7 write p50 against data size', {
      title: 'S7: sequential write p50 against items stored',
      xLabel: 'items (log scale)',
      yLabel: 'p50 (ms)',
      xLog: true,
      series: results.map((r) => ({ name: named(r), points: (scenarioData(r, 's7')?.steps ?? []).filter((s) => s.sessions === 0).map((s) => [s.items, s.writeLatencyMs.p50] as const) })),
    }),
  );
  return plots;
}
