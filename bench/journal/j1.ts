// J1: the journal against BullMQ and pg-boss, one system at a time, the same
// load for each (issue 13):
// - warm-up: one unmeasured level at 16 workers first, so every system (and the
//   Node processes on both sides: Vera's members, the queues' clients) is
//   measured compiled and settled rather than while its JIT warms up.
// - jobs/s end to end: N jobs added in batches, then `workers` workers each take
//   one job, "process" it (nothing to do) and complete it, until all are done;
//   timed from the first take to the last completion, at 1, 16 and 256 workers.
//   Every completion is counted by key: lost and doubly completed jobs are reported.
// - lateness of delayed jobs: jobs due from 200 ms after they are added, evenly
//   spread (one every 3 ms in the full run), with 16 idle workers waiting;
//   delivery time minus due time. A thousand of them, so the p99 is the 10th
//   worst rather than a single unlucky job.
// - worker death: a worker takes a job and its process dies (its connection goes
//   without completing the job); the time until another worker is handed that job,
//   with a lock/claim timeout of 2 s on every system.
import { performance } from 'node:perf_hooks';
import { CompletionTally, Lateness, type ThroughputResult } from './tally.js';
import type { QueueSystem } from './queue.js';
import type { LatencySummary } from '../lib/samples.js';

export interface J1Scale {
  /** The unmeasured warm-up level. */
  readonly warmup: { readonly workers: number; readonly jobs: number };
  readonly workers: readonly number[];
  /** Jobs per worker level. */
  readonly jobs: Readonly<Record<number, number>>;
  readonly delayed: number;
  /** Delayed jobs fall due over this span (ms), evenly. */
  readonly delayedSpanMs: number;
  /** A worker level stops after this long even if jobs remain (a polling queue at one worker is slow). */
  readonly levelCapMs: number;
}

export const J1_FULL: J1Scale = { warmup: { workers: 16, jobs: 5000 }, workers: [1, 16, 256], jobs: { 1: 2000, 16: 20000, 256: 40000 }, delayed: 1000, delayedSpanMs: 3000, levelCapMs: 15_000 };
export const J1_QUICK: J1Scale = { warmup: { workers: 16, jobs: 200 }, workers: [1, 16, 256], jobs: { 1: 100, 16: 500, 256: 1000 }, delayed: 60, delayedSpanMs: 200, levelCapMs: 5_000 };

/** The claim / lock / visibility timeout every system gets, so worker-death times compare. */
export const LOCK_MS = 2_000;

export interface J1Result {
  readonly system: string;
  readonly settings: string;
  readonly throughput: readonly ThroughputResult[];
  readonly lateness: (LatencySummary & { readonly early: number; readonly lost: number }) | null;
  readonly workerDeath: { readonly reofferedAfterMs: number; readonly lockMs: number } | null;
  readonly errors: readonly string[];
}

export async function runJ1(system: QueueSystem, scale: J1Scale, log: (m: string) => void): Promise<J1Result> {
  const errors: string[] = [];
  const throughput: ThroughputResult[] = [];
  try {
    const w = await measureThroughput(system, 'warmup', scale.warmup.workers, scale.warmup.jobs, scale.levelCapMs);
    log(`${system.name}: warm-up (not counted), ${w.workers} workers, ${w.jobs} jobs: ${Math.round(w.jobsPerSec)} jobs/s`);
  } catch (err) {
    errors.push(`warm-up: ${(err as Error).message}`);
  }
  for (const workers of scale.workers) {
    try {
      const r = await measureThroughput(system, `tp${workers}`, workers, scale.jobs[workers] ?? 1000, scale.levelCapMs);
      throughput.push(r);
      log(`${system.name}: ${workers} workers, ${r.jobs} jobs: ${Math.round(r.jobsPerSec)} jobs/s, ${r.unfinished} unfinished at the cap, lost ${r.lost}, doubled ${r.doubled}`);
    } catch (err) {
      errors.push(`throughput at ${workers} workers: ${(err as Error).message}`);
      log(`${system.name}: throughput at ${workers} workers failed: ${(err as Error).message}`);
    }
  }
  let lateness: J1Result['lateness'] = null;
  try {
    lateness = await measureLateness(system, scale.delayed, scale.delayedSpanMs);
    log(`${system.name}: delayed jobs late by p50 ${lateness.p50} ms, p99 ${lateness.p99} ms (${lateness.early} early, ${lateness.lost} lost)`);
  } catch (err) {
    errors.push(`lateness: ${(err as Error).message}`);
  }
  let workerDeath: J1Result['workerDeath'] = null;
  try {
    workerDeath = await measureWorkerDeath(system);
    log(`${system.name}: a dead worker's job offered again after ${workerDeath.reofferedAfterMs} ms (lock ${LOCK_MS} ms)`);
  } catch (err) {
    errors.push(`worker death: ${(err as Error).message}`);
  }
  return { system: system.name, settings: system.settings, throughput, lateness, workerDeath, errors };
}

async function measureThroughput(system: QueueSystem, queue: string, workers: number, jobs: number, capMs: number): Promise<ThroughputResult> {
  const q = await system.open(queue, 30_000);
  try {
    const keys = Array.from({ length: jobs }, (_, i) => `${queue}-${i}`);
    await q.add(keys.map((key) => ({ key })));
    const tally = new CompletionTally(keys);
    let first = 0;
    const started = performance.now();
    const running = await q.work(workers, async (key) => {
      if (first === 0) first = performance.now();
      tally.handled(key);
    });
    const finished = await withTimeout(tally.allHandled(), capMs, 'cap').then(
      () => true,
      () => false,
    );
    const end = performance.now();
    const handled = tally.handledKeys;
    await running.stop();
    const seconds = (end - (first || started)) / 1000;
    return { workers, jobs, seconds, jobsPerSec: handled / seconds, unfinished: jobs - handled, lost: finished ? tally.lost() : 0, doubled: tally.doubled() };
  } finally {
    await q.close();
  }
}

async function measureLateness(system: QueueSystem, count: number, spanMs: number): Promise<NonNullable<J1Result['lateness']>> {
  const q = await system.open('delayed', 30_000);
  try {
    const due = new Map<string, number>();
    const lateness = new Lateness();
    const tally = new CompletionTally(Array.from({ length: count }, (_, i) => `d-${i}`));
    const running = await q.work(16, async (key) => {
      const at = Date.now();
      const dueAt = due.get(key);
      if (dueAt !== undefined && !due.has(`seen:${key}`)) {
        due.set(`seen:${key}`, 1);
        lateness.delivered(dueAt, at);
      }
      tally.handled(key);
    });
    const now = Date.now();
    const jobs = Array.from({ length: count }, (_, i) => ({ key: `d-${i}`, dueAt: now + 200 + Math.round((spanMs * i) / count) }));
    for (const j of jobs) due.set(j.key, j.dueAt);
    await q.add(jobs);
    await withTimeout(tally.allHandled(), spanMs + 30_000, 'delayed jobs not all delivered within 30 s of the last due date').catch(() => undefined);
    await running.stop();
    return { ...lateness.summary(), lost: tally.lost() };
  } finally {
    await q.close();
  }
}

async function measureWorkerDeath(system: QueueSystem): Promise<NonNullable<J1Result['workerDeath']>> {
  const q = await system.open('death', LOCK_MS);
  try {
    await q.add([{ key: 'orphan' }]);
    const key = await q.takeAndDie();
    const died = performance.now();
    let offered!: (ms: number) => void;
    const again = new Promise<number>((resolve) => (offered = resolve));
    const running = await q.work(1, async (k) => {
      if (k === key) offered(performance.now() - died);
    });
    const ms = await withTimeout(again, 60_000, 'the dead worker\u2019s job was not offered again within 60 s');
    await running.stop();
    return { reofferedAfterMs: Math.round(ms), lockMs: LOCK_MS };
  } finally {
    await q.close();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}
