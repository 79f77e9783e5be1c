// `npm run bench`: the comparison of issue 6. Measures the disk's fsync
// floor, starts a 3-member cluster of each system, runs every scenario on
// every system (see runAll for the order), writes
// bench/results/<date>-<system>.json and regenerates docs/performance.md.
// Every server it starts it stops, on success, on errors and on Ctrl-C; the
// run is bounded in time.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { profileWhile, summarizeProfile } from './lib/cpu-profile.js';
import { measureFsyncFloor } from './lib/fsync-floor.js';
import { machineInfo } from './lib/machine.js';
import { BenchUsageError, parseBenchArgs, USAGE, type BenchOptions } from './lib/options.js';
import { ensureSystem } from './lib/packages.js';
import { installSignalHandlers, killAllSync } from './lib/procs.js';
import { roundTo } from './lib/samples.js';
import { PeakRssTracker } from './lib/rss.js';
import { renderReport } from './report/markdown.js';
import { buildPlots } from './report/plots.js';
import { fanoutFigures, readFigures, RESULT_SCHEMA, resultFileName, runFilePrefix, s2Figures, writeFigures, type Outcome, type ScenarioId, type ScenarioResults, type SystemResult } from './report/results.js';
import { FULL_SCALE, QUICK_SCALE, SCALE_RUN, type Scale, type ScenarioContext } from './scenarios/context.js';
import { runS1, runS2, runWriteLoad } from './scenarios/s1-s2-writes.js';
import { runS3 } from './scenarios/s3-fanout.js';
import { runS4 } from './scenarios/s4-ephemeral.js';
import { runS5 } from './scenarios/s5-failover.js';
import { runS6 } from './scenarios/s6-reads.js';
import { runS7 } from './scenarios/s7-scale.js';
import { EtcdCluster } from './systems/etcd.js';
import { DISPLAY_NAMES, type Cluster, type SystemName } from './systems/system.js';
import { VeraCluster } from './systems/vera.js';
import { ZooKeeperCluster } from './systems/zookeeper.js';
import { runJournalBench } from './journal/run.js';
import type { ScenarioOptions } from './lib/scenario-report.js';
import { runAssignBench } from './assign/run.js';
import { runHibernateBench } from './hibernate/run.js';
import { formatOverhead, newestPlainVeraResult, tlsOverhead } from './report/tls-overhead.js';
import { runSecurityBench } from './security/run.js';
import { runCompare } from './compare/run.js';

const ROOT = resolve(import.meta.dirname, '..');
/** The hand-written reading of the targets Vera misses, placed in the report under the targets table. */
const ANALYSIS_FILE = join(ROOT, 'bench/report/analysis.md');
/** The hand-written record of issue 32 (the regression, its bisection and the --compare figures), placed after it. */
const REGRESSION_FILE = join(ROOT, 'bench/report/regression-gate.md');

/**
 * Wall-clock budgets of this script (the issue: the whole suite under 15
 * minutes, --quick under 3; `npm run build` before it takes up to ~30 s on a
 * busy machine). S7 grows the data while its share of the budget lasts.
 */
const BUDGET_MS = { full: 14 * 60_000, quick: 2.4 * 60_000, scale: 50 * 60_000 } as const;
/** J1 (bench/journal): four queues, three worker levels capped at 15 s each, lateness, a dead worker. */
const JOURNAL_BUDGET_MS = { full: 5 * 60_000, quick: 1.5 * 60_000 } as const;
/** A1 (bench/assign): two systems, seeding, three 10 s levels, 10,000 account events and a drain under load each. */
const ASSIGN_BUDGET_MS = { full: 7 * 60_000, quick: 3 * 60_000 } as const;
/** H1 (bench/hibernate): loading 10^6 items, freezing 9,000 units, three measurements, then a large unit (10^5 items, --quick too) loaded, frozen and thawed in spaced steps. */
const HIBERNATE_BUDGET_MS = { full: 10 * 60_000, quick: 7 * 60_000 } as const;
/** --security-only (bench/security): six clusters, S1, S2 and S6 on each, a profile of four leaders. */
const SECURITY_BUDGET_MS = { full: 10 * 60_000, quick: 3 * 60_000 } as const;
/** The watchdog's grace past the budget before it kills everything. */
const WATCHDOG_GRACE_MS = { full: 40_000, quick: 15_000, scale: 60_000 } as const;

/** Rough cost of each scenario for one system (ms), to skip what no longer fits. */
const ESTIMATE_MS: Readonly<Record<'full' | 'quick', Readonly<Record<ScenarioId, number>>>> = {
  full: { s1: 7_000, s2: 22_000, s3: 30_000, s4: 12_000, s5: 35_000, s6: 17_000, s7: 60_000 },
  quick: { s1: 1_500, s2: 5_000, s3: 5_000, s4: 4_000, s5: 7_000, s6: 3_000, s7: 9_000 },
};

function log(message: string): void {
  const t = new Date().toISOString().slice(11, 19);
  process.stdout.write(`[bench ${t}] ${message}\n`);
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  let options: BenchOptions | 'help';
  try {
    options = parseBenchArgs(argv, ROOT);
  } catch (error) {
    if (error instanceof BenchUsageError) {
      process.stderr.write(`bench: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  installSignalHandlers();
  const runStart = performance.now();
  const mode = options.quick ? 'quick' : options.scale ? 'scale' : 'full';
  // J1 and A1 have budgets of their own, after the main run's (or alone with --journal-only, --assign-only).
  const extrasOnly = options.journal === 'only' || options.assign === 'only' || options.hibernate === 'only';
  const budgetMs = options.security
    ? SECURITY_BUDGET_MS[options.quick ? 'quick' : 'full']
    : (extrasOnly ? 0 : BUDGET_MS[mode]) +
      (options.journal === 'no' ? 0 : JOURNAL_BUDGET_MS[options.quick ? 'quick' : 'full']) +
      (options.assign === 'no' ? 0 : ASSIGN_BUDGET_MS[options.quick ? 'quick' : 'full']) +
      (options.hibernate === 'no' ? 0 : HIBERNATE_BUDGET_MS[options.quick ? 'quick' : 'full']);
  // The last line of defence: whatever hangs, the suite ends, and takes its servers with it.
  const graceMs = WATCHDOG_GRACE_MS[mode];
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: still running after ${Math.round((budgetMs + graceMs) / 1000)} s; stopping every server and giving up\n`);
    killAllSync();
    process.exit(3);
  }, budgetMs + graceMs);
  watchdog.unref();

  if (!existsSync(join(ROOT, 'dist/cli/main.js'))) {
    process.stderr.write('bench: dist/ is missing; run `npm run build` first (npm run bench does)\n');
    return 2;
  }
  const scale = options.quick ? QUICK_SCALE : options.scale ? SCALE_RUN : FULL_SCALE;
  const startedAt = new Date().toISOString();
  // A TLS run's files never overwrite the plain run's of the same day (its overhead is measured against them).
  const filePrefix = `${runFilePrefix(startedAt, options.scale)}${options.tls ? 'tls-' : ''}`;
  const command = `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`;
  const logDir = mkdtempSync(join(tmpdir(), 'vera-bench-logs-'));
  log(`${mode} run of ${options.systems.join(', ')}${options.tls ? ' (Vera with TLS on its client port)' : ''}${options.security ? ' (--security-only: S1, S2 and S6 plain, with TLS, with authentication, with both)' : ''}; server logs in ${logDir} (removed after a run without failures)`);

  if (options.compare.length > 0) {
    clearTimeout(watchdog);
    await runCompare({ root: ROOT, refs: options.compare, quick: options.quick, rounds: options.rounds, workloads: options.workloads, outDir: options.outDir, logDir, command, log });
    rmSync(logDir, { recursive: true, force: true });
    return 0;
  }

  if (options.security) {
    // Kept for the profiles, stopping six clusters and the report.
    const budgetEnd = runStart + budgetMs - (options.quick ? 25_000 : 50_000);
    const { failures } = await runSecurityBench({ ...scenarioOptions(options, logDir, startedAt, command), profile: options.profile, budgetEnd, startedAt, version: veraVersion }, log);
    clearTimeout(watchdog);
    if (failures === 0) rmSync(logDir, { recursive: true, force: true });
    else log(`server logs kept in ${logDir}`);
    return failures > 0 ? 1 : 0;
  }

  if (extrasOnly) {
    let failures = 0;
    if (options.journal === 'only') failures += (await runJournalBench(scenarioOptions(options, logDir, startedAt, command), log)).failures;
    if (options.assign === 'only') {
      const docsFile = options.journal === 'only' ? join(dirname(options.docsFile), 'performance-assign.md') : options.docsFile;
      failures += (await runAssignBench(scenarioOptions({ ...options, docsFile }, logDir, startedAt, command), log)).failures;
    }
    if (options.hibernate === 'only') {
      const docsFile = options.journal === 'only' || options.assign === 'only' ? join(dirname(options.docsFile), 'performance-hibernation.md') : options.docsFile;
      failures += (await runHibernateBench(scenarioOptions({ ...options, docsFile }, logDir, startedAt, command), log)).failures;
    }
    clearTimeout(watchdog);
    if (failures === 0) rmSync(logDir, { recursive: true, force: true });
    return failures > 0 ? 1 : 0;
  }

  const machine = machineInfo();
  if (machine.loadAverage1m > machine.cpus) {
    log(`warning: the machine is busy (load average ${machine.loadAverage1m.toFixed(1)} on ${machine.cpus} CPUs); every system is measured under the same noise, but absolute figures will be low`);
  }
  const fsyncFloor = measureFsyncFloor(options.quick ? 1_000 : 3_000);
  log(`fsync floor: p50 ${fsyncFloor.latencyMs.p50.toFixed(3)} ms, p99 ${fsyncFloor.latencyMs.p99.toFixed(3)} ms`);

  const available: SystemName[] = [];
  const unavailable: Array<{ system: SystemName; note: string }> = [];
  const notes = new Map<SystemName, string>();
  for (const system of options.systems) {
    const a = ensureSystem(system, log);
    notes.set(system, a.note);
    if (a.available) available.push(system);
    else {
      log(`${DISPLAY_NAMES[system]} is not available and will not be measured: ${a.note}`);
      unavailable.push({ system, note: a.note });
    }
  }

  mkdirSync(options.outDir, { recursive: true });
  const budgetEnd = runStart + budgetMs - 20_000;
  const runs = await runAll(available, {
    scale,
    quick: options.quick,
    s7Only: options.scale,
    profile: options.profile,
    logDir,
    outDir: options.outDir,
    budgetEnd,
    startedAt,
    tls: options.tls,
  });
  // Read before this run writes its own: the baseline is the newest plain Vera run.
  const plainVeraFile = options.tls ? newestPlainVeraResult(options.outDir) : null;
  const fsyncFloorAfter = measureFsyncFloor(options.quick ? 500 : 2_000);
  log(`fsync floor after the run: p50 ${fsyncFloorAfter.latencyMs.p50.toFixed(3)} ms, p99 ${fsyncFloorAfter.latencyMs.p99.toFixed(3)} ms`);
  const results: SystemResult[] = [];
  const resultPaths: string[] = [];
  let failures = 0;
  for (const run of runs) {
    const result: SystemResult = {
      schema: RESULT_SCHEMA,
      system: run.system,
      available: true,
      availabilityNote: notes.get(run.system) ?? '',
      version: run.version,
      settings: run.settings,
      startedAt,
      command,
      quick: options.quick,
      machine,
      fsyncFloor,
      fsyncFloorAfter,
      scenarios: run.scenarios,
      peakRssBytes: Object.fromEntries(run.peaks),
      profile: run.profile,
    };
    failures += Object.values(result.scenarios).filter((o) => o?.status === 'failed').length;
    const path = join(options.outDir, resultFileName(filePrefix, run.system));
    writeFileSync(path, JSON.stringify(result, jsonRounding, 2) + '\n');
    log(`wrote ${relative(ROOT, path)}`);
    results.push(result);
    resultPaths.push(path);
  }

  if (options.tls) {
    const veraTls = results.find((r) => r.system === 'vera');
    if (veraTls === undefined) log('--tls: Vera was not measured, so there is no TLS overhead to report');
    else if (plainVeraFile === null) log(`--tls: no plain Vera result in ${relative(ROOT, options.outDir)} to compare with; run 'npm run bench -- --systems vera' first`);
    else {
      const plain = JSON.parse(readFileSync(plainVeraFile, 'utf8')) as SystemResult;
      const rows = tlsOverhead(plain, veraTls);
      log(`TLS overhead against ${relative(ROOT, plainVeraFile)}${plain.quick !== veraTls.quick ? ' (warning: one run is --quick and the other is not)' : ''}:`);
      for (const line of formatOverhead(rows)) log(`  ${line}`);
      const path = join(options.outDir, `${filePrefix}vera-overhead.json`);
      writeFileSync(path, JSON.stringify({ schema: 1, baseline: relative(options.outDir, plainVeraFile), tls: resultFileName(filePrefix, 'vera'), rows }, jsonRounding, 2) + '\n');
      log(`wrote ${relative(ROOT, path)}`);
    }
  }

  const docsDir = dirname(options.docsFile);
  const plots = buildPlots(results).filter((p) => p.hasData).map((p) => {
    const path = join(options.outDir, `${filePrefix}${p.name}`);
    writeFileSync(path, p.svg + '\n');
    return { href: relative(docsDir, path), title: p.title };
  });
  mkdirSync(docsDir, { recursive: true });
  const markdown = renderReport(results, {
    command,
    finishedAt: new Date().toISOString(),
    totalSeconds: (performance.now() - runStart) / 1000,
    plots,
    resultFiles: resultPaths.map((p) => relative(docsDir, p)),
    unavailable,
    analysis: [ANALYSIS_FILE, REGRESSION_FILE].filter((f) => existsSync(f)).map((f) => readFileSync(f, 'utf8').trim()).join('\n\n'),
  });
  writeFileSync(options.docsFile, markdown);
  const endLoad = loadavg()[0] ?? 0;
  if (endLoad > machine.cpus) log(`warning: load average ${endLoad.toFixed(1)} at the end of the run`);
  log(`wrote ${relative(ROOT, options.docsFile)} after ${Math.round((performance.now() - runStart) / 1000)} s${failures > 0 ? `; ${failures} scenario run(s) failed (see the report)` : ''}`);
  if (options.journal === 'after') {
    const journal = await runJournalBench(scenarioOptions({ ...options, docsFile: join(dirname(options.docsFile), 'performance-journal.md') }, logDir, startedAt, command), log);
    failures += journal.failures;
  }
  if (options.assign === 'after') {
    const assign = await runAssignBench(scenarioOptions({ ...options, docsFile: join(dirname(options.docsFile), 'performance-assign.md') }, logDir, startedAt, command), log);
    failures += assign.failures;
  }
  if (options.hibernate === 'after') {
    const h1 = await runHibernateBench(scenarioOptions({ ...options, docsFile: join(dirname(options.docsFile), 'performance-hibernation.md') }, logDir, startedAt, command), log);
    failures += h1.failures;
  }
  clearTimeout(watchdog);
  // Server logs are only worth keeping when something went wrong.
  if (failures === 0) rmSync(logDir, { recursive: true, force: true });
  else log(`server logs kept in ${logDir}`);
  return failures > 0 ? 1 : 0;
}

/** What J1, A1 and H1 need of the run. */
function scenarioOptions(options: BenchOptions, logDir: string, startedAt: string, command: string): ScenarioOptions {
  return { quick: options.quick, outDir: options.outDir, docsFile: options.docsFile, logDir, filePrefix: `${startedAt.slice(0, 10)}-`, command, root: ROOT };
}

interface RunOptions {
  readonly scale: Scale;
  readonly quick: boolean;
  /** Skip S1-S6 (`--scale`). */
  readonly s7Only: boolean;
  readonly profile: boolean;
  readonly logDir: string;
  readonly outDir: string;
  /** performance.now() by which every scenario must be done. */
  readonly budgetEnd: number;
  readonly startedAt: string;
  /** Vera serves its client port over TLS. */
  readonly tls: boolean;
}

/** What one system produced over the run. */
interface SystemRun {
  readonly system: SystemName;
  version: string;
  settings: Readonly<Record<string, unknown>>;
  readonly scenarios: ScenarioResults;
  readonly peaks: Map<string, number>;
  profile: SystemResult['profile'];
}

function makeCluster(system: SystemName, opts: RunOptions, inspector: boolean): Cluster {
  switch (system) {
    case 'vera':
      return new VeraCluster({ logDir: opts.logDir, inspector, tls: opts.tls });
    case 'etcd':
      return new EtcdCluster(opts.logDir);
    case 'zookeeper':
      return new ZooKeeperCluster(opts.logDir);
  }
}

/**
 * Runs every scenario on every system. S1-S6 run scenario by scenario, each
 * on every system back to back (all three clusters are up, the two not being
 * measured idle, and the order rotates from one scenario to the next), so
 * noise from the rest of the machine, which drifts over minutes, falls on
 * every system alike rather than on whichever ran first.
 * S7 then runs system by system on fresh clusters, each with an equal share
 * of the time left.
 */
async function runAll(systems: readonly SystemName[], opts: RunOptions): Promise<SystemRun[]> {
  const estimates = ESTIMATE_MS[opts.quick ? 'quick' : 'full'];
  const runs = systems.map((system): SystemRun => ({ system, version: 'unknown', settings: {}, scenarios: {}, peaks: new Map(), profile: null }));
  const live: Array<{ run: SystemRun; cluster: Cluster; rss: PeakRssTracker; ctx: ScenarioContext; broken: string | null }> = [];

  const scenario = async <T>(run: SystemRun, id: ScenarioId, until: number, fn: () => Promise<T>): Promise<Outcome<T>> => {
    const name = DISPLAY_NAMES[run.system];
    if (performance.now() + estimates[id] > until) {
      log(`${name} ${id.toUpperCase()}: skipped, it would not fit in the time budget`);
      return { status: 'skipped', reason: 'did not fit in the time budget' };
    }
    const loadAverage1m = loadavg()[0] ?? 0;
    log(`${name} ${id.toUpperCase()}`);
    const t0 = performance.now();
    try {
      const data = await fn();
      return { status: 'ok', durationMs: performance.now() - t0, loadAverage1m, data };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log(`${name} ${id.toUpperCase()} failed: ${message}`);
      return { status: 'failed', durationMs: performance.now() - t0, error: message };
    }
  };

  try {
    for (const run of opts.s7Only ? [] : runs) {
      const name = DISPLAY_NAMES[run.system];
      const cluster = makeCluster(run.system, opts, opts.profile && run.system === 'vera');
      const rss = new PeakRssTracker(() => cluster.members());
      const ctx: ScenarioContext = { cluster, scale: opts.scale, log: (m) => log(`${name} ${m}`) };
      const entry = { run, cluster, rss, ctx, broken: null as string | null };
      live.push(entry);
      try {
        log(`starting a 3-member ${name} cluster`);
        await cluster.start();
        rss.start();
        // Every system gets the same warm-up (JIT compilers, connection pools, file preallocation) before anything is measured.
        log(`${name}: warming up for ${opts.scale.warmupMs / 1000} s`);
        await runWriteLoad(ctx, 16, opts.scale.warmupMs, 0, 'warmup');
      } catch (error) {
        entry.broken = error instanceof Error ? error.message : String(error);
        log(`${name}: the cluster failed to start: ${entry.broken}`);
      }
      run.version = cluster.version;
      run.settings = cluster.settings;
    }

    // The brief's order: S1, S2, S3, S6, S5, S4 (the destructive ones last); S7 below.
    // Time is kept for S7: at least its estimate per system.
    const mainEnd = opts.s7Only ? 0 : opts.budgetEnd - estimates.s7 * systems.length;
    const main: Array<[ScenarioId, (e: (typeof live)[number]) => Promise<Outcome<unknown>>]> = [
      ['s1', async (e) => mapOk(await scenario(e.run, 's1', mainEnd, () => runS1(e.ctx)), writeFigures)],
      ['s2', async (e) => {
        const outcome = mapOk(await scenario(e.run, 's2', mainEnd, () => runS2(e.ctx)), s2Figures);
        if (e.cluster instanceof VeraCluster && opts.profile) e.run.profile = await profileLeader(e.cluster, e.ctx, opts);
        return outcome;
      }],
      ['s3', async (e) => mapOk(await scenario(e.run, 's3', mainEnd, () => runS3(e.ctx)), (r) => r.map(fanoutFigures))],
      ['s6', async (e) => mapOk(await scenario(e.run, 's6', mainEnd, () => runS6(e.ctx)), (r) => r.map(readFigures))],
      ['s5', (e) => scenario(e.run, 's5', mainEnd, () => runS5(e.ctx, e.rss))],
      ['s4', (e) => scenario(e.run, 's4', mainEnd, () => runS4(e.ctx))],
    ];
    for (const [k, [id, go]] of (opts.s7Only ? [] : main).entries()) {
      // Each scenario starts with the next system, so no system always goes first (right after a cluster start or another's load).
      const order = live.map((_, i) => live[(i + k) % live.length]!);
      for (const e of order) {
        if (e.broken !== null) {
          (e.run.scenarios as Record<string, unknown>)[id] = { status: 'failed', durationMs: 0, error: `cluster: ${e.broken}` };
          continue;
        }
        (e.run.scenarios as Record<string, unknown>)[id] = await go(e);
      }
    }
  } finally {
    for (const e of live) mergePeaks(e.run.peaks, e.rss.stop());
    await Promise.allSettled(live.map((e) => e.cluster.stop().catch((err: unknown) => log(`${DISPLAY_NAMES[e.run.system]}: stopping failed: ${String(err)}`))));
  }

  // S7 on a fresh cluster per system, so "items stored" starts from zero.
  for (let i = 0; i < runs.length; i++) {
    const run = runs[i]!;
    const name = DISPLAY_NAMES[run.system];
    const deadline = performance.now() + Math.max(0, opts.budgetEnd - performance.now()) / (runs.length - i);
    if (performance.now() + estimates.s7 > deadline) {
      log(`${name} S7: skipped, it would not fit in the time budget`);
      run.scenarios.s7 = { status: 'skipped', reason: 'did not fit in the time budget' };
      continue;
    }
    const fresh = makeCluster(run.system, opts, false);
    const rss = new PeakRssTracker(() => fresh.members());
    try {
      await fresh.start();
      rss.start();
      const ctx: ScenarioContext = { cluster: fresh, scale: opts.scale, log: (m) => log(`${name} ${m}`) };
      run.scenarios.s7 = await scenario(run, 's7', deadline, () => runS7(ctx, deadline));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log(`${name} S7: the fresh cluster failed: ${message}`);
      run.scenarios.s7 = { status: 'failed', durationMs: 0, error: `cluster: ${message}` };
    } finally {
      mergePeaks(run.peaks, rss.stop());
      await fresh.stop().catch((e: unknown) => log(`${name}: stopping failed: ${String(e)}`));
    }
    if (run.system === 'vera') run.version = veraVersion(fresh.version);
  }
  for (const run of runs) if (run.system === 'vera' && !run.version.includes('(')) run.version = veraVersion(run.version);
  return runs;
}

async function profileLeader(cluster: VeraCluster, ctx: ScenarioContext, opts: RunOptions): Promise<SystemResult['profile']> {
  try {
    const leader = await cluster.leader();
    const url = cluster.inspectorUrl(leader);
    if (url === null) return null;
    log(`Vera: CPU profile of the leader (${leader}) during S2 at 256 in flight`);
    const profile = await profileWhile(url, async () => {
      await runWriteLoad(ctx, 256, opts.scale.s2.profileMs, 200, 's2-profile');
    });
    // Small (a few hundred KB): kept with the results so the report's summary can be checked.
    const file = join(opts.outDir, `${opts.startedAt.slice(0, 10)}-vera-s2-leader.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    const summary = summarizeProfile(profile);
    log(`Vera profile: ${summary.byModule.slice(0, 5).map((e) => `${e.name} ${e.percent}%`).join(', ')}; saved to ${file}`);
    return { ...summary, file: relative(ROOT, file), note: `Sampled with the V8 profiler (what \`node --cpu-prof\` uses) through the leader's inspector, every 0.5 ms, during a separate ${opts.scale.s2.profileMs / 1000} s S2 run at 256 in flight (not the measured one).` };
  } catch (error) {
    log(`Vera profile failed: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
}

function mapOk<T, U>(outcome: Outcome<T>, f: (t: T) => U): Outcome<U> {
  return outcome.status === 'ok' ? { ...outcome, data: f(outcome.data) } : outcome;
}

function mergePeaks(into: Map<string, number>, from: Record<string, number>): void {
  for (const [id, bytes] of Object.entries(from)) into.set(id, Math.max(into.get(id) ?? 0, bytes));
}

/** The package version plus the commit it was built from (read-only git). */
function veraVersion(pkgVersion: string): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() !== '';
    return `${pkgVersion} (${commit}${dirty ? ', with uncommitted changes' : ''})`;
  } catch {
    return pkgVersion;
  }
}

/** Rounds floats to 3 decimals so the JSON stays readable; NaN becomes null (JSON has no NaN). */
function jsonRounding(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isInteger(value) ? (Number.isFinite(value) ? roundTo(value, 3) : null) : value;
}

main().then(
  (code) => {
    killAllSync();
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    killAllSync();
    process.exit(1);
  },
);
