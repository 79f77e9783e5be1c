// `npm run bench -- --security-only` (issue 16): Vera's S1, S2 and S6 on fresh
// 3-member clusters in one run, plain, with TLS on the client port, with
// authentication (clients by token, as a user whose role's rules are judged on
// every op), with both, and two references (authentication as root; a second
// plain cluster for the noise). Every cluster is up before anything is
// measured, and each step runs on every cluster back to back in a rotating
// order. Writes <date>-security.json and docs/performance-security.md.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { machineCpuPct, startForeignCpuMeter, waitForQuiet } from '../lib/cpu.js';
import { profileWhile } from '../lib/cpu-profile.js';
import { measureFsyncFloor } from '../lib/fsync-floor.js';
import { machineInfo } from '../lib/machine.js';
import { writeScenarioReport, type ScenarioOptions } from '../lib/scenario-report.js';
import { readFigures, writeFigures, type LoadFigures, type Outcome, type ReadFigures, type ScenarioResults } from '../report/results.js';
import { FULL_SCALE, QUICK_SCALE, type ScenarioContext } from '../scenarios/context.js';
import type { ReadMode } from '../systems/system.js';
import { runS1, runS2Level, runWriteLoad } from '../scenarios/s1-s2-writes.js';
import { prepareS6, runS6Step, s6Steps } from '../scenarios/s6-reads.js';
import { VeraCluster } from '../systems/vera.js';
import { securityProfile, type SecurityProfile } from './profile.js';
import { automaticNotes, combineRepeats, CONFIGS, cpuPerOp, renderSecurity, repeatFigures, securityRatios, TARGET, TARGET_REPEATS, targetVerdicts, type ConfigurationResult, type RepeatFigures, type SecurityConfig, type RunRecord, type SecurityResult, type StepRecord } from './report.js';
import { formatOverhead } from '../report/tls-overhead.js';
import { ANALYSIS_FILE } from './render.js';


/** How far above the idle machine's CPU use (percent of one core; every cluster up, none loaded) a run may start. */
const QUIET_MARGIN_PCT = 15;
/** The longest a run waits for the machine to quieten down. */
const QUIET_TIMEOUT_MS = 15_000;
/**
 * A run during which processes other than the servers and the load generator used more
 * than this (percent of one core) is measured again, up to MAX_ATTEMPTS times in all.
 */
const FOREIGN_MAX_PCT = 20;
const MAX_ATTEMPTS = 3;

const round1 = (v: number): number => Math.round(v * 10) / 10;

export interface SecurityRunOptions extends ScenarioOptions {
  /** Profile each cluster's leader during a separate S2 run at 256 in flight. */
  readonly profile: boolean;
  /** performance.now() by which the measured steps must be done. */
  readonly budgetEnd: number;
  readonly startedAt: string;
  /** Vera's version and the commit it was built from. */
  readonly version: (pkgVersion: string) => string;
}

/** One configuration's cluster and what it measured. */
interface Entry {
  readonly config: SecurityConfig;
  readonly cluster: VeraCluster;
  readonly ctx: ScenarioContext;
  broken: string | null;
  s1: Outcome<LoadFigures> | undefined;
  /** Each S2 level's runs (one, or TARGET_REPEATS at 256 in flight). */
  readonly s2: Map<number, LoadFigures[]>;
  electionsBefore: number | null;
  electionsAfter: number | null;
  s6Ready: boolean;
  /** Each S6 read's runs, by `${mode}.${inFlight}`. */
  readonly s6: Map<string, ReadFigures[]>;
  readonly errors: string[];
  profile: SecurityProfile | null;
}

interface Step {
  readonly name: string;
  /** Rough time of the step on one cluster (ms), to skip what no longer fits. */
  readonly estimateMs: number;
  /** Measures; resolves to what keeps the figures (not called for a run that is measured again). */
  readonly run: (e: Entry) => Promise<() => void>;
}

export async function runSecurityBench(o: SecurityRunOptions, log: (m: string) => void): Promise<{ failures: number }> {
  const started = performance.now();
  const scale = o.quick ? QUICK_SCALE : FULL_SCALE;
  mkdirSync(o.outDir, { recursive: true });
  mkdirSync(dirname(o.docsFile), { recursive: true });
  const machine = machineInfo();
  if (machine.loadAverage1m > machine.cpus) log(`warning: the machine is busy (load average ${machine.loadAverage1m.toFixed(1)} on ${machine.cpus} CPUs); every configuration is measured under the same noise`);
  const fsyncFloor = measureFsyncFloor(o.quick ? 1_000 : 3_000);
  log(`fsync floor: p50 ${fsyncFloor.latencyMs.p50.toFixed(3)} ms, p99 ${fsyncFloor.latencyMs.p99.toFixed(3)} ms`);

  const entries: Entry[] = CONFIGS.map((config) => {
    const cluster = new VeraCluster({ logDir: o.logDir, inspector: o.profile, tls: config.tls, ...(config.auth === null ? {} : { auth: { clientsAs: config.auth } }) });
    return {
      config,
      cluster,
      ctx: { cluster, scale, log: (m: string) => log(`${config.label}: ${m}`) },
      broken: null,
      s1: undefined,
      s2: new Map(),
      electionsBefore: null,
      electionsAfter: null,
      s6Ready: false,
      s6: new Map(),
      errors: [],
      profile: null,
    };
  });
  let version = 'unknown';
  let failures = 0;
  const timeline: StepRecord[] = [];
  /** Every run kept: how many attempts it took and what other processes used meanwhile. */
  const runsKept: RunRecord[] = [];
  let idlePct = 0;
  let quietPct = 0;
  const quietWaits: number[] = [];
  try {
    for (const e of entries) {
      try {
        log(`${e.config.label}: starting a 3-member cluster (${e.config.about})`);
        await e.cluster.start();
        version = e.cluster.version;
        log(`${e.config.label}: warming up for ${scale.warmupMs / 1000} s`);
        await runWriteLoad(e.ctx, 16, scale.warmupMs, 0, 'warmup');
      } catch (error) {
        e.broken = message(error);
        e.errors.push(`the cluster failed to start: ${e.broken}`);
        failures++;
        log(`${e.config.label}: the cluster failed to start: ${e.broken}`);
      }
    }

    const s2Step = (level: number): Step => ({
      name: `S2 writes, ${level} in flight`,
      estimateMs: scale.s2.durationMs + scale.s2.warmupMs + 800,
      run: async (e) => {
        if (e.electionsBefore === null) e.electionsBefore = await e.cluster.electionCounter();
        const figures = writeFigures(await runS2Level(e.ctx, level));
        e.electionsAfter = await e.cluster.electionCounter();
        return () => e.s2.set(level, [...(e.s2.get(level) ?? []), figures]);
      },
    });
    const s6Step = ([mode, inFlight]: [ReadMode, number]): Step => ({
      name: `S6 ${mode} reads, ${inFlight} in flight`,
      estimateMs: scale.s6.durationMs + scale.s6.warmupMs + 600,
      run: async (e) => {
        if (!e.s6Ready) {
          await prepareS6(e.ctx);
          e.s6Ready = true;
        }
        const key = `${mode}.${inFlight}`;
        const figures = readFigures(await runS6Step(e.ctx, mode, inFlight));
        return () => e.s6.set(key, [...(e.s6.get(key) ?? []), figures]);
      },
    });
    const atTarget = (inFlight: number): boolean => inFlight === TARGET.inFlight;
    const steps: Step[] = [
      {
        name: 'S1',
        estimateMs: scale.s1.durationMs + scale.s1.warmupMs + 500,
        run: async (e) => {
          const t0 = performance.now();
          const run = await runS1(e.ctx);
          const outcome: Outcome<LoadFigures> = { status: 'ok', durationMs: performance.now() - t0, loadAverage1m: loadavg()[0] ?? 0, data: writeFigures(run) };
          return () => (e.s1 = outcome);
        },
      },
      ...scale.s2.levels.map(s2Step),
      ...s6Steps(scale).map(s6Step),
      // The loads the target judges run again (each a round of every cluster), for medians.
      ...Array.from({ length: TARGET_REPEATS - 1 }, (): Step[] => [...scale.s2.levels.filter(atTarget).map(s2Step), ...s6Steps(scale).filter(([, n]) => atTarget(n)).map(s6Step)]).flat(),
    ];
    // Where each step's order starts: the next configuration each step; a repeated load moves on by
    // a share of the clusters from its previous round, so its rounds start at spread-out places.
    const seen = new Map<string, { rotation: number; times: number }>();
    const rotations = steps.map((step, k) => {
      const before = seen.get(step.name);
      const rotation = before === undefined ? k : before.rotation + Math.max(1, Math.floor(entries.length / TARGET_REPEATS));
      seen.set(step.name, { rotation, times: (before?.times ?? 0) + 1 });
      return rotation;
    });
    // The machine's CPU with every cluster up and nothing to do (the quietest of a few windows, so a
    // burst of other work does not count): each run waits until it is back near it.
    const allPids = (): number[] => entries.flatMap((e) => e.cluster.members().map((m) => m.pid).filter((p): p is number => p !== null));
    const windows: number[] = [];
    for (let i = 0; i < 5; i++) windows.push(await machineCpuPct(o.quick ? 200 : 500));
    idlePct = Math.min(...windows);
    quietPct = idlePct + QUIET_MARGIN_PCT;
    log(`the machine uses ${idlePct.toFixed(0)}% of one core with every cluster idle; each run waits until it is under ${quietPct.toFixed(0)}% (at most ${QUIET_TIMEOUT_MS / 1000} s)`);
    const stepsStart = performance.now();
    for (const [k, step] of steps.entries()) {
      const live = entries.filter((e) => e.broken === null);
      if (performance.now() + step.estimateMs * live.length > o.budgetEnd) {
        log(`${step.name}: skipped, it would not fit in the time budget`);
        for (const e of live) e.errors.push(`${step.name}: skipped, it would not fit in the time budget`);
        continue;
      }
      // Each step starts with the next configuration, so none always goes first.
      const order = live.map((_, i) => live[(i + rotations[k]!) % live.length]!);
      log(`${step.name} (order: ${order.map((e) => e.config.label).join(', ')})`);
      timeline.push({ name: step.name, atS: Math.round((performance.now() - stepsStart) / 100) / 10, order: order.map((e) => e.config.id) });
      for (const e of order) {
        try {
          for (let attempt = 1; ; attempt++) {
            const quiet = await waitForQuiet(quietPct, QUIET_TIMEOUT_MS);
            quietWaits.push(quiet.waitedMs);
            if (!quiet.quiet) log(`${e.config.label} ${step.name}: the machine still used ${quiet.pct.toFixed(0)}% of one core after ${QUIET_TIMEOUT_MS / 1000} s; measuring anyway`);
            const foreign = startForeignCpuMeter(allPids());
            const keep = await step.run(e);
            const foreignPct = foreign();
            const last = attempt >= MAX_ATTEMPTS || performance.now() + step.estimateMs > o.budgetEnd;
            if (foreignPct <= FOREIGN_MAX_PCT || last) {
              keep();
              runsKept.push({ config: e.config.id, step: step.name, attempt, foreignPct: round1(foreignPct) });
              if (foreignPct > FOREIGN_MAX_PCT) e.errors.push(`${step.name}: kept a run during which other processes used ${foreignPct.toFixed(0)}% of one core (attempt ${attempt}; no more attempts ${attempt >= MAX_ATTEMPTS ? 'allowed' : 'fit in the time budget'})`);
              break;
            }
            log(`${e.config.label} ${step.name}: other processes used ${foreignPct.toFixed(0)}% of one core during the run (over ${FOREIGN_MAX_PCT}%); measuring it again`);
          }
        } catch (error) {
          failures++;
          e.errors.push(`${step.name} failed: ${message(error)}`);
          log(`${e.config.label} ${step.name} failed: ${message(error)}`);
        }
      }
    }

    if (o.profile) {
      // The references add nothing a profile would explain.
      for (const e of entries.filter((x) => x.broken === null && x.config.kind !== 'reference')) {
        if (performance.now() + scale.s2.profileMs + 2_000 > o.budgetEnd + 30_000) {
          log(`${e.config.label}: profile skipped, it would not fit in the time budget`);
          continue;
        }
        e.profile = await profileLeader(e, o, scale.s2.profileMs, log);
      }
    }
  } finally {
    await Promise.allSettled(entries.map((e) => e.cluster.stop().catch((err: unknown) => log(`${e.config.label}: stopping failed: ${message(err)}`))));
  }

  const fsyncFloorAfter = measureFsyncFloor(o.quick ? 500 : 2_000);
  const configurations: ConfigurationResult[] = entries.map((e) => ({
    id: e.config.id,
    label: e.config.label,
    tls: e.config.tls,
    auth: e.config.auth,
    settings: e.cluster.settings,
    scenarios: scenariosOf(e),
    errors: e.errors,
    profile: e.profile,
    repeats: repeatsOf(e),
  }));
  const ratios = securityRatios(configurations);
  const verdicts = targetVerdicts(ratios);
  const cpu = cpuPerOp(configurations);
  const partial = { ratios, verdicts, cpuPerOp: cpu, configurations };
  const result: SecurityResult = {
    startedAt: o.startedAt,
    quick: o.quick,
    version: o.version(version),
    machine,
    fsyncFloor,
    fsyncFloorAfter,
    loadAverageAtEnd: loadavg()[0] ?? 0,
    scale: { warmupMs: scale.warmupMs, s1: scale.s1, s2: scale.s2, s6: scale.s6 },
    target: TARGET,
    configurations,
    ratios,
    verdicts,
    cpuPerOp: cpu,
    notes: automaticNotes(partial),
    steps: timeline,
    runs: runsKept,
    foreignMaxPct: FOREIGN_MAX_PCT,
    quiet: { idlePct: round1(idlePct), thresholdPct: round1(quietPct), timeoutMs: QUIET_TIMEOUT_MS, runs: quietWaits.length, waitedMsTotal: Math.round(quietWaits.reduce((a, b) => a + b, 0)), waitedMsMax: Math.round(Math.max(0, ...quietWaits)) },
  };
  for (const c of CONFIGS) {
    const rows = ratios[c.id];
    if (rows === undefined) continue;
    log(`${c.label} ÷ plain:`);
    for (const line of formatOverhead(rows)) log(`  ${line}`);
  }
  for (const c of CONFIGS.filter((x) => x.kind === 'measured')) {
    const v = verdicts[c.id];
    log(`${c.label}: target (under ${TARGET.maxOverhead * 100}% at ${TARGET.inFlight} in flight) ${v === undefined || v.met === null ? 'not measured' : v.met ? 'met' : `NOT met (${v.misses.map((m) => `${m.label} ${(100 * m.overhead).toFixed(1)}%`).join('; ')})`}`);
  }
  // A hand-written reading of the last run (bench/security/render.ts regenerates the report with it).
  const analysis = existsSync(ANALYSIS_FILE) ? readFileSync(ANALYSIS_FILE, 'utf8') : undefined;
  writeScenarioReport(o, 'security', 'security', started, { ...result }, (meta) => renderSecurity(result, { ...meta, ...(analysis === undefined ? {} : { analysis }) }), log);
  return { failures };
}

function scenariosOf(e: Entry): Pick<ScenarioResults, 's1' | 's2' | 's6'> {
  const out: Pick<ScenarioResults, 's1' | 's2' | 's6'> = {};
  if (e.s1 !== undefined) out.s1 = e.s1;
  if (e.s2.size > 0) {
    const elections = e.electionsBefore !== null && e.electionsAfter !== null ? Math.max(0, e.electionsAfter - e.electionsBefore) : -1;
    const levels = [...e.s2.entries()].sort(([a], [b]) => a - b).map(([, runs]) => combineRepeats(runs));
    out.s2 = { status: 'ok', durationMs: 0, data: { levels, electionsDuring: elections } };
  }
  if (e.s6.size > 0) {
    const reads = [...e.s6.values()].map((runs): ReadFigures => {
      const loads = runs.map((r) => r.load).filter((l): l is LoadFigures => l !== null);
      return { ...runs[0]!, load: loads.length === 0 ? null : combineRepeats(loads) };
    });
    out.s6 = { status: 'ok', durationMs: 0, data: reads };
  }
  return out;
}

/** Every run of the loads that ran more than once. */
function repeatsOf(e: Entry): Record<string, RepeatFigures[]> {
  const out: Record<string, RepeatFigures[]> = {};
  for (const [level, runs] of e.s2) if (runs.length > 1) out[`s2.${level}`] = runs.map(repeatFigures);
  for (const [key, runs] of e.s6) {
    const loads = runs.map((r) => r.load).filter((l): l is LoadFigures => l !== null);
    if (loads.length > 1) out[`s6.${key}`] = loads.map(repeatFigures);
  }
  return out;
}

async function profileLeader(e: Entry, o: SecurityRunOptions, durationMs: number, log: (m: string) => void): Promise<SecurityProfile | null> {
  try {
    const leader = await e.cluster.leader();
    const url = e.cluster.inspectorUrl(leader);
    if (url === null) return null;
    log(`${e.config.label}: CPU profile of the leader (${leader}) during S2 at ${TARGET.inFlight} in flight`);
    let opsPerSec = 0;
    const profile = await profileWhile(url, async () => {
      opsPerSec = (await runWriteLoad(e.ctx, TARGET.inFlight, durationMs, 200, 's2-profile')).result.opsPerSec;
    });
    const file = join(o.outDir, `${o.filePrefix}security-${e.config.id}-s2-leader.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    const summary = securityProfile(profile, opsPerSec, relative(o.root, file));
    log(`${e.config.label} profile: busy ${summary.busyMs} of ${summary.totalMs} ms, ${summary.busyUsPerOp} µs per write; ${summary.buckets.map((b) => `${b.name.split(' (')[0]} ${b.percent}%`).join(', ')}`);
    return summary;
  } catch (error) {
    log(`${e.config.label}: profile failed: ${message(error)}`);
    return null;
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
