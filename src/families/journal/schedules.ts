// Repeatable jobs (docs/journal.md, "Schedules"): a journal's schedules, each
// every N ms or a cron expression in a time zone, that the leader turns into jobs.
// A schedule's record keeps its last tick, and a tick entry carries the tick it
// produces: apply refuses a tick at or before the last one, so a tick proposed
// twice (a new leader re-proposing what the old one had in flight) makes one job.
// Records are MessagePack with a fixed field order (every member writes the same bytes).
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import { latestCronTick, nextCronTick, parseCron, type CronSpec } from './cron.js';
import type { RetryPolicy } from './records.js';

/** What a schedule makes at each tick. */
export interface ScheduleJob {
  readonly data: unknown;
  /** Absent: the journal's priority. */
  readonly priority?: number;
  readonly retry?: RetryPolicy;
}

/** When a schedule ticks: every `everyMs` (on multiples of it, by the replicated clock), or a cron expression in `tz`. */
export type ScheduleTiming = { readonly everyMs: number } | { readonly cron: string; readonly tz: string };

/** After a gap with ticks missed: `one` job for them all (the latest tick), or `none` (the missed are skipped). */
export type CatchUp = 'one' | 'none';

/** A schedule as requested (an entry carries this). */
export interface ScheduleSpec {
  readonly id: string;
  readonly timing: ScheduleTiming;
  readonly catchUp: CatchUp;
  readonly job: ScheduleJob;
}

/** A schedule as kept: the request, and what its ticks did so far. */
export interface Schedule extends ScheduleSpec {
  readonly createdAt: number;
  /** The last tick produced or skipped (ms); createdAt before the first. Ticks after it are still to come. */
  readonly lastTick: number;
  readonly produced: number;
  readonly skipped: number;
}

/** Schedules one journal may have. */
export const MAX_SCHEDULES_PER_JOURNAL = 100;
/** With catchUp 'none', a tick proposed later than this after its time is skipped (a leader change takes less). */
export const NONE_GRACE_MS = 10_000;

/** The job key a tick makes: the schedule's id and the tick's time, so a tick can make only one. */
export function tickKey(id: string, tick: number): string {
  return `${id}@${new Date(tick).toISOString()}`;
}

export function encodeSchedule(s: Schedule): Buffer {
  const t = s.timing;
  const timing = 'everyMs' in t ? [0, t.everyMs, null] : [1, t.cron, t.tz];
  const r = s.job.retry;
  const retry = r === undefined ? null : [r.attempts, r.backoff === 'exponential' ? 1 : 0, r.delayMs, r.maxDelayMs, r.jitterPct];
  return pack([s.id, ...timing, s.catchUp === 'none' ? 1 : 0, s.job.data, s.job.priority ?? null, retry, s.createdAt, s.lastTick, s.produced, s.skipped]);
}

export function decodeSchedule(bytes: Uint8Array): Schedule {
  const v = unpack(bytes);
  const count = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (!Array.isArray(v) || v.length !== 12 || typeof v[0] !== 'string' || (v[1] !== 0 && v[1] !== 1) || (v[4] !== 0 && v[4] !== 1) || ![8, 9, 10, 11].every((i) => count(v[i]))) {
    throw new CorruptValueError('journal schedule is not [id, kind, every|cron, tz, catchUp, data, priority, retry, createdAt, lastTick, produced, skipped]');
  }
  const timing: ScheduleTiming = v[1] === 0 ? { everyMs: v[2] as number } : { cron: v[2] as string, tz: v[3] as string };
  const r = v[7] as number[] | null;
  const retry: RetryPolicy | undefined = r === null ? undefined : { attempts: r[0]!, backoff: r[1] === 1 ? 'exponential' : 'fixed', delayMs: r[2]!, maxDelayMs: r[3]!, jitterPct: r[4]! };
  return {
    id: v[0],
    timing,
    catchUp: v[4] === 1 ? 'none' : 'one',
    job: { data: v[5], ...(v[6] === null ? {} : { priority: v[6] as number }), ...(retry === undefined ? {} : { retry }) },
    createdAt: v[8] as number,
    lastTick: v[9] as number,
    produced: v[10] as number,
    skipped: v[11] as number,
  };
}

/** A schedule's timing without its job (what every member keeps in memory: the data stays in the db). */
export type ScheduleClock = Omit<Schedule, 'job'>;

export function clockOf(s: Schedule): ScheduleClock {
  const { job: _job, ...rest } = s;
  return rest;
}

const specs = new Map<string, CronSpec>();
function cronSpec(cron: string): CronSpec {
  let spec = specs.get(cron);
  if (spec === undefined) {
    const parsed = parseCron(cron);
    if (typeof parsed === 'string') throw new Error(parsed); // checked before it was kept
    if (specs.size > 1000) specs.clear();
    specs.set(cron, (spec = parsed));
  }
  return spec;
}

/** The first tick after `after`, or null (a cron that never fires again within its horizon). For the leader and for reads only. */
export function nextTick(timing: ScheduleTiming, after: number): number | null {
  if ('everyMs' in timing) return (Math.floor(after / timing.everyMs) + 1) * timing.everyMs;
  return nextCronTick(cronSpec(timing.cron), timing.tz, after);
}

/** The latest tick in (after, now], or null: the one tick a leader proposes after a gap. */
export function latestTick(timing: ScheduleTiming, after: number, now: number): number | null {
  if ('everyMs' in timing) {
    const t = Math.floor(now / timing.everyMs) * timing.everyMs;
    return t > after ? t : null;
  }
  return latestCronTick(cronSpec(timing.cron), timing.tz, after, now);
}
