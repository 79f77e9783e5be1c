// The result file of one system in one run (bench/results/<date>-<system>.json):
// every figure, with the machine, versions and settings. Plots and the
// markdown report are generated from these files only.
import type { FsyncFloor } from '../lib/fsync-floor.js';
import type { CpuShare } from '../lib/cpu.js';
import type { ClosedLoopResult } from '../lib/load.js';
import type { MachineInfo } from '../lib/machine.js';
import type { ProfileSummary } from '../lib/cpu-profile.js';
import { roundSummary, roundTo, type LatencySummary, type Samples } from '../lib/samples.js';
import type { SystemName } from '../systems/system.js';
import type { FanoutRun } from '../scenarios/s3-fanout.js';
import type { S4Result } from '../scenarios/s4-ephemeral.js';
import type { S5Result } from '../scenarios/s5-failover.js';
import type { ReadRun } from '../scenarios/s6-reads.js';
import type { S7Result } from '../scenarios/s7-scale.js';
import type { S2Result, WriteRun } from '../scenarios/s1-s2-writes.js';

export const RESULT_SCHEMA = 1;

export type ScenarioId = 's1' | 's2' | 's3' | 's4' | 's5' | 's6' | 's7';
export const SCENARIO_IDS: readonly ScenarioId[] = ['s1', 's2', 's3', 's4', 's5', 's6', 's7'];

export type Outcome<T> =
  | { readonly status: 'ok'; readonly durationMs: number; readonly data: T; /** Other work on the machine when it started. */ readonly loadAverage1m?: number }
  | { readonly status: 'failed'; readonly durationMs: number; readonly error: string }
  | { readonly status: 'skipped'; readonly reason: string };

export interface LoadFigures {
  readonly inFlight: number;
  readonly connections: number;
  readonly ops: number;
  readonly errors: number;
  readonly firstError: string | null;
  readonly opsPerSec: number;
  /** The measured window (it can outlast the planned duration until enough operations completed). */
  readonly windowMs: number;
  readonly latencyMs: LatencySummary;
  /** Latency at percentiles 0,1,...,100 (ms), for distribution plots. */
  readonly latencyCdfMs: readonly number[];
  /** CPU use during the run, percent of one core (writes only). */
  readonly cpu?: CpuShare;
}

export interface ReadFigures {
  readonly mode: 'linearizable' | 'stale';
  readonly inFlight: number;
  readonly unsupported: string | null;
  readonly load: LoadFigures | null;
}

/** An S3 run as stored: the raw samples become a CDF. */
export type FanoutFigures = Omit<FanoutRun, 'ackToNotify'> & { readonly ackToNotifyCdfMs: readonly number[] };

export interface ScenarioResults {
  s1?: Outcome<LoadFigures>;
  s2?: Outcome<{ readonly levels: readonly LoadFigures[]; readonly newKeys?: LoadFigures; readonly electionsDuring: number }>;
  s3?: Outcome<readonly FanoutFigures[]>;
  s4?: Outcome<S4Result>;
  s5?: Outcome<S5Result>;
  s6?: Outcome<readonly ReadFigures[]>;
  s7?: Outcome<S7Result>;
}

export interface SystemResult {
  readonly schema: number;
  readonly system: SystemName;
  readonly available: boolean;
  readonly availabilityNote: string;
  readonly version: string;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly startedAt: string;
  readonly command: string;
  readonly quick: boolean;
  readonly machine: MachineInfo;
  readonly fsyncFloor: FsyncFloor;
  /** Measured again after the last scenario: a large change means the disk was shared during the run. */
  readonly fsyncFloorAfter?: FsyncFloor;
  readonly scenarios: ScenarioResults;
  /** Peak RSS of each member over the whole run (bytes), S7's fresh cluster included. */
  readonly peakRssBytes: Readonly<Record<string, number>>;
  readonly profile: (ProfileSummary & { readonly file: string | null; readonly note: string }) | null;
}

export function cdf(samples: Samples): number[] {
  if (samples.count === 0) return [];
  return Array.from({ length: 101 }, (_, q) => roundTo(samples.percentile(q), 3));
}

export function loadFigures(run: { readonly inFlight: number; readonly connections: number; readonly result: ClosedLoopResult }): LoadFigures {
  const r = run.result;
  return {
    inFlight: run.inFlight,
    connections: run.connections,
    ops: r.ops,
    errors: r.errors,
    firstError: r.firstError,
    opsPerSec: roundTo(r.opsPerSec, 1),
    windowMs: roundTo(r.measuredMs, 1),
    latencyMs: roundSummary(r.latencyMs),
    latencyCdfMs: cdf(r.samples),
  };
}

export function writeFigures(run: WriteRun): LoadFigures {
  return { ...loadFigures(run), cpu: run.cpu };
}

export function s2Figures(result: S2Result): { levels: LoadFigures[]; newKeys?: LoadFigures; electionsDuring: number } {
  return { levels: result.levels.map(writeFigures), ...(result.newKeys === undefined ? {} : { newKeys: writeFigures(result.newKeys) }), electionsDuring: result.electionsDuring };
}

export function fanoutFigures(run: FanoutRun): FanoutFigures {
  return {
    watchers: run.watchers,
    rounds: run.rounds,
    expected: run.expected,
    received: run.received,
    lost: run.lost,
    duplicates: run.duplicates,
    ackToNotifyMs: roundSummary(run.ackToNotifyMs),
    sendToNotifyMs: roundSummary(run.sendToNotifyMs),
    ackToNotifyCdfMs: cdf(run.ackToNotify),
  };
}

export function readFigures(run: ReadRun): ReadFigures {
  return {
    mode: run.mode,
    inFlight: run.inFlight,
    unsupported: run.unsupported,
    load: run.result === null ? null : loadFigures({ inFlight: run.inFlight, connections: run.connections, result: run.result }),
  };
}

/** The date of the run, and "scale-" for `--scale` runs, so a full run the same day does not overwrite them. */
export function runFilePrefix(startedAt: string, scaleRun: boolean): string {
  return `${startedAt.slice(0, 10)}-${scaleRun ? 'scale-' : ''}`;
}

export function resultFileName(prefix: string, system: SystemName): string {
  return `${prefix}${system}.json`;
}
