// Fault-injection trials on a real cluster, and the long randomized runner.
//
// A trial: start a cluster (harness.ts); start watchers, ephemeral owners and the
// recorded client workload (workload.ts); once the load runs, kill the owners
// and run a fault script; heal everything; require the load to make progress
// again; stop; read the final state; run the five checkers (checkers.ts). The
// scripted scenarios (scenarios.test.ts) and the random schedules below are both
// trials. A failed trial keeps its evidence (logs, history, reports) in a
// directory it prints.
//
// As a command (scripts/chaos.ts):  npm run test:chaos -- --minutes 30 [--nodes 3|5] [--seed S] [--keep-going]
// runs random schedules until the time is up; `--seed S` alone replays one
// schedule. The fault sequence follows from the seed; which member is leader at
// each step is up to the real cluster, so a replay repeats the schedule, not
// every interleaving.

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  checkConvergence,
  checkLinearizable,
  checkNoLostWrites,
  checkSessionExpiry,
  checkWatchStreams,
  formatReports,
  observeGone,
  passed,
  snapshotNodes,
  watcherCaughtUp,
  type CheckReport,
  type ExpiryObservation,
} from './checkers.js';
import { pollUntil } from '../support/poll.js';
import { ChaosCluster, type FaultRecord, type ListView } from './harness.js';
import { HistoryRecorder, type HistoryItem } from './history.js';
import { checkAssign } from './assign-checker.js';
import { AssignWorkload } from './assign-workload.js';
import { Hibernator, type HibernationStats } from './hibernate-load.js';
import { checkJournal } from './journal-checker.js';
import { JournalWorkload } from './journal-workload.js';
import { EphemeralOwner, Rng, Watcher, Workload, type WorkloadStats } from './workload.js';

// ------------------------------------------------------------------ trials

export interface TrialContext {
  readonly cluster: ChaosCluster;
  readonly rng: Rng;
  /** Resolves once the clients completed `n` more successful operations: the cluster serves. */
  progress(n: number, timeoutMs?: number): Promise<void>;
  /** Leaves member `i` out of the final checks (a wiped member that was not taken back). */
  exclude(i: number): void;
  /** Adds a line to the trial's notes. */
  note(text: string): void;
}

export interface TrialPlan {
  readonly name: string;
  readonly size: number;
  readonly seed: number;
  /** The faults to inject while the load runs; everything is healed after it returns. */
  readonly faults: (t: TrialContext) => Promise<void>;
  /** Recorded clients (default 4), lists they share (default 3). */
  readonly clients?: number;
  readonly paths?: number;
  /** Watcher sessions (default 2) and killed ephemeral owners (default 2). */
  readonly watchers?: number;
  readonly owners?: number;
  /** A session with one prefix watch above the lists (default on), judged as the exact watchers are. */
  readonly prefixWatcher?: boolean;
  /** Successful operations before the faults start, and after healing (default 25 each). */
  readonly warmupOps?: number;
  readonly afterHealOps?: number;
  readonly clusterArgs?: readonly string[];
  /** Members outside the first configuration, for faults that add them (ChaosCluster.addMember). */
  readonly spares?: number;
  /** Where a failed trial leaves its evidence (default: a new directory under the OS temp dir). */
  readonly artifactsDir?: string;
  /** Also run a journal producer and workers through the faults, drained and checked after (default true). */
  readonly journal?: boolean;
  /** Also run node assignment clients through the faults, checked after (default true). */
  readonly assign?: boolean;
  /** Also keep freezing the workload's lists through the faults (default true); the lists' checkers judge what the clients saw. */
  readonly hibernate?: boolean;
}

export interface TrialResult {
  readonly name: string;
  readonly seed: number;
  readonly size: number;
  readonly ok: boolean;
  readonly reports: readonly CheckReport[];
  /** An error that stopped the trial before its checks (e.g. no leader after healing), or null. */
  readonly error: string | null;
  readonly faults: readonly FaultRecord[];
  readonly stats: WorkloadStats | null;
  readonly operations: number;
  readonly durationMs: number;
  readonly notes: readonly string[];
  /** What the hibernator did, when the trial ran one. */
  readonly hibernation: HibernationStats | null;
  /** Where the evidence of a failed trial was written, or null. */
  readonly artifacts: string | null;
}

/** Owners' sessions are short so that their expiry is quick to check. */
const OWNER_SESSION_MS = 2000;
/** Slack on top of session timeout + election timeout: polling, commit and apply latency, a loaded 2-core machine. */
export const EXPIRY_SLACK_MS = 2000;

/** Set VERA_CHAOS_DEBUG=1 to follow a trial's phases on stderr. */
const debug = (text: string): void => {
  if (process.env.VERA_CHAOS_DEBUG) process.stderr.write(`[chaos ${new Date().toISOString()}] ${text}\n`);
};

export async function runTrial(plan: TrialPlan): Promise<TrialResult> {
  const began = performance.now();
  const rng = new Rng(plan.seed);
  const notes: string[] = [];
  const excluded = new Set<number>();
  const recorder = new HistoryRecorder();
  let cluster: ChaosCluster | null = null;
  let workload: Workload | null = null;
  let journalLoad: JournalWorkload | null = null;
  let assignLoad: AssignWorkload | null = null;
  let hibernator: Hibernator | null = null;
  let hibernation: HibernationStats | null = null;
  const watchers: Watcher[] = [];
  const owners: EphemeralOwner[] = [];
  let stats: WorkloadStats | null = null;
  let reports: CheckReport[] = [];
  let error: string | null = null;
  let artifacts: string | null = null;
  const tag = `t${plan.seed.toString(36)}`;
  const paths = Array.from({ length: plan.paths ?? 3 }, (_, k) => `/chaos/${tag}/list${k}`);
  const ownerPaths = Array.from({ length: plan.owners ?? 2 }, (_, k) => `/chaos/${tag}/owned${k}`);
  const allPaths = [...paths, ...ownerPaths];
  try {
    cluster = await ChaosCluster.start({ size: plan.size, spares: plan.spares ?? 0, ...(plan.clusterArgs === undefined ? {} : { args: plan.clusterArgs }) });
    const c = cluster;
    debug(`${plan.name}: cluster started`);
    for (let k = 0; k < (plan.watchers ?? 2); k++) watchers.push(await Watcher.start(`w${k + 1}`, c.urls, allPaths));
    // A prefix watch above the units the hibernator freezes (each list is one): its resyncs after a restart walk into Frozen units.
    if (plan.prefixWatcher ?? true) watchers.push(await Watcher.startPrefix('prefix', c.urls, `/chaos/${tag}`, paths));
    for (const [k, path] of ownerPaths.entries()) owners.push(await EphemeralOwner.start(c.urls, path, { count: 2, timeoutMs: OWNER_SESSION_MS, tag: `${tag}:owner${k}` }));
    const w = new Workload({ urls: c.urls, paths, clients: plan.clients ?? 4, recorder, rng: rng.fork(), tag });
    workload = w;
    debug(`${plan.name}: watchers and owners ready`);
    w.start();
    if (plan.journal ?? true) journalLoad = await JournalWorkload.start(c.urls);
    if (plan.assign ?? true) assignLoad = await AssignWorkload.start(c, new Rng(plan.seed ^ 0x61737367)); // its own stream: the fault schedule of a seed stays as it was
    if (plan.hibernate ?? true) hibernator = await Hibernator.start(c.urls, paths, new Rng(plan.seed ^ 0x68696265));
    await w.waitForOps(plan.warmupOps ?? 25, 30_000);

    // The owners die as the faults begin: their sessions must expire through whatever follows.
    const expiries = owners.map(async (o): Promise<ExpiryObservation> => {
      await o.kill9();
      const killedAt = o.killedAt ?? Date.now();
      const goneAt = await observeGone(c, o.path, o.report.items, 90_000);
      return { session: o.report.session, path: o.path, items: o.report.items, timeoutMs: o.report.timeoutMs, killedAt, goneAt, lastElectionAt: c.lastElectionAt(goneAt ?? Infinity) };
    });
    const context: TrialContext = {
      cluster: c,
      rng: rng.fork(),
      progress: (n, timeoutMs = 30_000) => w.waitForOps(n, timeoutMs),
      exclude: (i) => excluded.add(i),
      note: (text) => notes.push(text),
    };
    debug(`${plan.name}: faults begin`);
    await plan.faults(context);
    debug(`${plan.name}: faults done, healing`);

    await c.healAll();
    // Removed members (absent) no longer follow the log: only the members of the final configuration are checked.
    const checkedMembers = c.members.map((m) => m.index).filter((i) => !excluded.has(i) && c.stateOf(i) !== 'absent');
    await c.waitForLeader({ among: checkedMembers, timeoutMs: 30_000 });
    // Liveness: once healed, the clients must get work done again.
    await w.waitForOps(plan.afterHealOps ?? 25, 30_000);
    debug(`${plan.name}: stopping the load`);
    if (hibernator !== null) {
      hibernation = await hibernator.stop();
      hibernator = null;
    }
    stats = await w.stop();
    await assignLoad?.stop();
    if (journalLoad !== null) {
      debug(`${plan.name}: draining the journal`);
      await journalLoad.drain();
    }
    debug(`${plan.name}: waiting for expiries`);
    const observations = await Promise.all(expiries);

    // No writer is left: the lists are final. Wait (bounded) for every watcher to have seen all of it.
    debug(`${plan.name}: reading final lists`);
    const finalLists = await readFinalLists(c, checkedMembers, allPaths);
    await Promise.all(
      watchers.map((wt) => (wt.ended !== null ? Promise.resolve() : wt.waitUntil(() => watcherCaughtUp(wt, finalLists), 20_000, 'catch up with the final lists').catch(() => undefined))),
    );
    await Promise.all(watchers.map((wt) => wt.close().catch(() => undefined)));
    debug(`${plan.name}: snapshots`);
    const snapshots = await snapshotNodes(c, checkedMembers, allPaths);
    debug(`${plan.name}: checking`);
    const history = recorder.history();
    const ephemeral = new Map<string, readonly HistoryItem[]>(owners.map((o) => [o.path, o.report.items]));
    if (process.env.VERA_CHAOS_DEBUG) writeFileSync(join(tmpdir(), `vera-chaos-history-${plan.seed}.json`), JSON.stringify(history));
    const timed = (check: () => CheckReport): CheckReport => {
      const t0 = performance.now();
      const r = check();
      debug(`${plan.name}: ${r.name} took ${Math.round(performance.now() - t0)} ms`);
      return r;
    };
    const journalFinal = journalLoad === null ? null : (await c.waitForQuiet({ among: checkedMembers }), await journalLoad.final(c, checkedMembers));
    const assignFinal = assignLoad === null ? null : (await c.waitForQuiet({ among: checkedMembers }), await assignLoad.final(checkedMembers));
    reports = [
      ...(journalLoad === null || journalFinal === null ? [] : [timed(() => checkJournal(journalLoad!.history(), journalFinal))]),
      ...(assignLoad === null || assignFinal === null ? [] : [timed(() => checkAssign(assignLoad!.history(), assignFinal))]),
      timed(() => checkConvergence(snapshots, allPaths)),
      timed(() => checkNoLostWrites(history, snapshots)),
      timed(() => checkWatchStreams(watchers, history, finalLists, ephemeral)),
      timed(() => checkSessionExpiry(observations, snapshots, EXPIRY_SLACK_MS)),
      timed(() => checkLinearizable(history)),
    ];
  } catch (err) {
    error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  } finally {
    debug(`${plan.name}: cleaning up`);
    if (workload !== null && stats === null) stats = await workload.stop().catch(() => null);
    await journalLoad?.close();
    await assignLoad?.close();
    await hibernator?.stop();
    await Promise.all(watchers.map((wt) => wt.close().catch(() => undefined)));
    await Promise.all(owners.map((o) => o.kill9().catch(() => undefined)));
    const ok = error === null && reports.every(passed);
    if (!ok && cluster !== null) {
      artifacts = plan.artifactsDir ?? join(tmpdir(), `vera-chaos-failure-${plan.seed}-${Date.now()}`);
      try {
        mkdirSync(artifacts, { recursive: true });
        cluster.dumpLogs(artifacts);
        writeFileSync(join(artifacts, 'history.json'), JSON.stringify(recorder.history(), null, 1));
        writeFileSync(join(artifacts, 'faults.txt'), cluster.faults.map((f) => `${new Date(f.at).toISOString()} ${f.what}`).join('\n') + '\n');
        writeFileSync(join(artifacts, 'watchers.json'), JSON.stringify(watchers.map((wt) => ({ name: wt.name, starts: [...wt.starts.values()], events: wt.events, resyncs: wt.resyncs, ended: wt.ended })), null, 1));
        writeFileSync(join(artifacts, 'reports.txt'), `${error ?? ''}\n${formatReports(reports)}\n`);
        if (journalLoad !== null) writeFileSync(join(artifacts, 'journal.json'), JSON.stringify(journalLoad.history(), null, 1));
        if (assignLoad !== null) writeFileSync(join(artifacts, 'assign.json'), JSON.stringify(assignLoad.history(), null, 1));
      } catch (dumpError) {
        notes.push(`could not write the evidence: ${String(dumpError)}`);
      }
    }
    debug(`${plan.name}: closing the cluster`);
    if (cluster !== null) await cluster.close();
    debug(`${plan.name}: closed`);
  }
  return {
    name: plan.name,
    seed: plan.seed,
    size: plan.size,
    ok: error === null && reports.every(passed),
    reports,
    error,
    faults: cluster?.faults ?? [],
    stats,
    operations: recorder.size,
    durationMs: Math.round(performance.now() - began),
    notes: [...notes, ...reports.flatMap((r) => r.notes.map((n) => `${r.name}: ${n}`))],
    hibernation,
    artifacts,
  };
}

/** Every list read linearizably through a member that answers (the same truth all watchers must reach). */
async function readFinalLists(cluster: ChaosCluster, among: readonly number[], paths: readonly string[]): Promise<Map<string, ListView>> {
  const lists = new Map<string, ListView>();
  for (const path of paths) {
    lists.set(
      path,
      await pollUntil(`a linearizable read of ${path}`, async () => {
        for (const i of among) {
          const view = await cluster.readLinearizable(i, path).catch(() => null);
          if (view !== null) return view;
        }
        return undefined;
      }, 20_000),
    );
  }
  return lists;
}

/** One line per check, the error, and where the evidence went: what a failed trial prints. */
export function describeTrial(r: TrialResult): string {
  const lines = [`trial ${r.name} (seed ${r.seed}, ${r.size} nodes): ${r.ok ? 'passed' : 'FAILED'} in ${(r.durationMs / 1000).toFixed(1)} s, ${r.operations} operations, ${r.faults.length} faults`];
  if (r.error !== null) lines.push(`  error: ${r.error}`);
  if (r.hibernation !== null) lines.push(`  hibernation: ${r.hibernation.frozen} lists frozen by ${r.hibernation.attempts} freezes (${r.hibernation.failed} failed in the faults), each thawed by the workload's next operation on it`);
  if (r.reports.length > 0) lines.push(formatReports(r.reports).replace(/^/gm, '  '));
  // What the journal's load did (its retries, removes, ticks and rate-limited claims), so a pass says what it covered.
  for (const n of r.reports.find((x) => x.name === 'journal')?.notes ?? []) lines.push(`       ${n}`);
  if (!r.ok) lines.push(`  faults: ${r.faults.map((f) => f.what).join('; ')}`);
  if (r.artifacts !== null) lines.push(`  evidence (logs, history, reports): ${r.artifacts}`);
  return lines.join('\n');
}

// ------------------------------------------------------------------ random schedules

/** Holds a fault for a while; faults are about time, so this is pacing, not synchronisation. */
function hold(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

type FaultKind = 'killLeader' | 'killAny' | 'crashAll' | 'pauseLeader' | 'isolateLeader' | 'minority' | 'oneWay' | 'flap' | 'delay' | 'cut' | 'rolling' | 'wipe';

const FAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = {
  killLeader: 12,
  killAny: 8,
  crashAll: 3,
  pauseLeader: 10,
  isolateLeader: 12,
  minority: 10,
  oneWay: 10,
  flap: 8,
  delay: 8,
  cut: 6,
  rolling: 3,
  wipe: 2,
};

/**
 * A random fault script lasting about `durationMs`: faults drawn from the seed,
 * each held for a random time, with at most a minority of members down or paused
 * at once (so the cluster can recover without the script's help), except for
 * 'crashAll', which kills every member at once and restarts them.
 */
export function randomFaults(durationMs: number): (t: TrialContext) => Promise<void> {
  return async (t) => {
    const { cluster, rng } = t;
    const end = performance.now() + durationMs;
    const minority = Math.floor((cluster.size - 1) / 2);
    const leaderOr = async (fallback: number): Promise<number> => cluster.waitForLeader({ timeoutMs: 8000 }).catch(() => fallback);
    while (performance.now() < end) {
      const kind = rng.weighted<FaultKind>({ ...FAULT_WEIGHTS });
      const any = rng.int(0, cluster.size - 1);
      const other = (any + rng.int(1, cluster.size - 1)) % cluster.size;
      const down = cluster.members.filter((m) => cluster.stateOf(m.index) !== 'up').length;
      const holdMs = rng.int(300, 4000);
      switch (kind) {
        case 'killLeader':
        case 'killAny': {
          const victim = kind === 'killLeader' ? await leaderOr(any) : any;
          if (down >= minority || cluster.stateOf(victim) === 'down') break;
          await cluster.kill9(victim);
          await hold(holdMs);
          if (rng.next() < 0.7) await cluster.restart(victim);
          break;
        }
        case 'crashAll': {
          // Every member at once: acknowledged writes must survive on disk alone.
          if (down > 0) break;
          await Promise.all(cluster.members.map((m) => cluster.kill9(m.index)));
          await hold(rng.int(0, 1000));
          for (const m of cluster.members) await cluster.restart(m.index);
          break;
        }
        case 'pauseLeader': {
          const victim = await leaderOr(any);
          if (down >= minority || cluster.stateOf(victim) !== 'up') break;
          cluster.pause(victim);
          await hold(holdMs);
          cluster.resume(victim);
          break;
        }
        case 'isolateLeader':
          cluster.isolate(await leaderOr(any));
          await hold(holdMs);
          cluster.heal();
          break;
        case 'minority': {
          const order = shuffled(rng, cluster.members.map((m) => m.index));
          const cut = rng.int(1, minority);
          cluster.partition([order.slice(0, cut), order.slice(cut)]);
          await hold(holdMs);
          cluster.heal();
          break;
        }
        case 'oneWay':
          cluster.oneWay(any, other);
          await hold(holdMs);
          if (rng.next() < 0.8) cluster.heal();
          break;
        case 'flap':
          await cluster.flap(any, other, rng.int(100, 700), holdMs);
          break;
        case 'delay':
          cluster.delay(any, other, rng.int(5, 150));
          await hold(holdMs);
          if (rng.next() < 0.5) cluster.heal();
          break;
        case 'cut':
          cluster.cut(any, other);
          break;
        case 'rolling': {
          if (down > 0) break;
          for (const m of cluster.members) {
            await cluster.kill9(m.index);
            await cluster.restart(m.index);
            await t.progress(5, 20_000);
          }
          break;
        }
        case 'wipe': {
          if (down > 0) break;
          await cluster.wipe(any);
          await hold(holdMs);
          // Re-adding needs the leader to reach the member; a cut left by an earlier fault
          // (one-way cuts stay 20% of the time) would block it forever. An operator mends the network first.
          cluster.heal();
          await cluster.rejoin(any);
          break;
        }
      }
      // Between faults, let the cluster breathe a little (random: sometimes faults pile up).
      if (rng.next() < 0.5) await hold(rng.int(0, 1000));
    }
  };
}

function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

// ------------------------------------------------------------------ the command line

interface RunnerOptions {
  readonly minutes: number | null;
  readonly seed: number | null;
  readonly nodes: number | null;
  readonly keepGoing: boolean;
  readonly scheduleSeconds: number;
}

const USAGE = `usage: npm run test:chaos -- [--minutes N] [--seed S] [--nodes 3|5] [--schedule-seconds N] [--keep-going]
  --minutes N          run random fault schedules for N minutes (default 5; with --seed alone: replay that one schedule)
  --seed S             first seed (later schedules use S+1, S+2, ...); prints every seed it uses
  --nodes 3|5          cluster size (default: drawn from each seed)
  --schedule-seconds N how long each schedule injects faults (default 40)
  --keep-going         do not stop at the first failed schedule`;

export function parseRunnerArgs(argv: readonly string[]): RunnerOptions {
  let minutes: number | null = null;
  let seed: number | null = null;
  let nodes: number | null = null;
  let keepGoing = false;
  let scheduleSeconds = 40;
  for (let k = 0; k < argv.length; k++) {
    const flag = argv[k]!;
    const value = (): number => {
      const text = argv[++k];
      const n = Number(text);
      if (text === undefined || !Number.isFinite(n)) throw new Error(`${flag} needs a number\n${USAGE}`);
      return n;
    };
    if (flag === '--minutes') minutes = value();
    else if (flag === '--seed') seed = value();
    else if (flag === '--nodes') nodes = value();
    else if (flag === '--schedule-seconds') scheduleSeconds = value();
    else if (flag === '--keep-going') keepGoing = true;
    else if (flag === '--help' || flag === '-h') throw new Error(USAGE);
    else throw new Error(`unknown argument ${flag}\n${USAGE}`);
  }
  if (minutes !== null && !(minutes > 0)) throw new Error('--minutes must be positive');
  if (seed !== null && !Number.isSafeInteger(seed)) throw new Error('--seed must be an integer');
  if (nodes !== null && nodes !== 3 && nodes !== 5) throw new Error('--nodes must be 3 or 5');
  if (!(scheduleSeconds > 0)) throw new Error('--schedule-seconds must be positive');
  return { minutes, seed, nodes, keepGoing, scheduleSeconds };
}

/** The schedule a seed stands for: its cluster size (unless fixed) and its faults. */
export function scheduleFor(seed: number, options: { nodes: number | null; scheduleSeconds: number }): TrialPlan {
  const size = options.nodes ?? (new Rng(seed).next() < 0.6 ? 3 : 5);
  return { name: `random-${seed}`, seed, size, faults: randomFaults(options.scheduleSeconds * 1000) };
}

/** Runs fault schedules until time is up (or one seed); the exit code a command gives: 0 all passed, 1 some failed, 2 bad arguments. */
export async function runChaos(argv: readonly string[]): Promise<number> {
  let options: RunnerOptions;
  try {
    options = parseRunnerArgs(argv);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  // The trials start the compiled `vera` (bin/vera.js -> dist/); build it as the test setup does.
  const build = spawnSync(process.execPath, [resolve(import.meta.dirname, '../../node_modules/typescript/bin/tsc'), '-p', resolve(import.meta.dirname, '../../tsconfig.build.json')], { encoding: 'utf8' });
  if (build.status !== 0) console.warn(`tsc reported errors (dist/ was emitted anyway):\n${build.stdout.slice(0, 2000)}`);

  const replayOnly = options.seed !== null && options.minutes === null;
  const deadline = performance.now() + (options.minutes ?? 5) * 60_000;
  let seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const results: TrialResult[] = [];
  const faultKinds = new Map<string, number>();
  for (;;) {
    const plan = scheduleFor(seed, options);
    console.log(`schedule ${results.length + 1}: seed ${seed}, ${plan.size} nodes, ${options.scheduleSeconds} s of faults`);
    const result = await runTrial(plan);
    results.push(result);
    for (const f of result.faults) {
      const kind = f.what.split(' ')[0]!;
      faultKinds.set(kind, (faultKinds.get(kind) ?? 0) + 1);
    }
    console.log(describeTrial(result));
    if (!result.ok) {
      console.log(`  replay: npm run test:chaos -- --seed ${seed} --nodes ${plan.size} --schedule-seconds ${options.scheduleSeconds}`);
      if (!options.keepGoing) break;
    }
    if (replayOnly || performance.now() >= deadline) break;
    seed = (seed + 1) % 2 ** 31;
  }
  const failed = results.filter((r) => !r.ok);
  const ops = results.reduce((sum, r) => sum + r.operations, 0);
  console.log(
    `\n${results.length} schedule(s), ${failed.length} failed; ${ops} operations checked; faults: ${[...faultKinds].map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`,
  );
  for (const r of failed) console.log(`  FAILED seed ${r.seed} (${r.size} nodes): npm run test:chaos -- --seed ${r.seed} --nodes ${r.size} --schedule-seconds ${options.scheduleSeconds}`);
  return failed.length === 0 ? 0 : 1;
}
