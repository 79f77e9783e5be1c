// A five-field cron expression (minute hour day-of-month month day-of-week), our
// own parser for repeatable jobs (docs/journal.md, "Schedules"), and the ticks it
// gives in a time zone. Fields take `*`, a number, a range `a-b`, a step `*/n`,
// `a-b/n` or `a/n`, and comma lists of those; months and weekdays take English
// three-letter names; 0 and 7 are both Sunday. As in the classic cron, when both
// day fields are restricted a day matches either. Wall times are read with
// Intl.DateTimeFormat, so a time zone's offsets and daylight saving come from the
// runtime's own zone data: only the leader computes ticks (the entries carry them).
// The CLI checks an expression with it before sending; the wire checks only its shape
// (wire.ts imports nothing but the protocol), and the server and every member parse it.

export interface CronSpec {
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  /** 0-6, Sunday 0. */
  readonly weekdays: ReadonlySet<number>;
  /** Whether each day field was restricted (not `*`): both restricted, a day matches either. */
  readonly daysRestricted: boolean;
  readonly weekdaysRestricted: boolean;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
import { MAX_CRON_CHARS } from './wire.js';

interface FieldRule {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
  /** What a name's position is worth (months count from 1). */
  readonly nameBase?: number;
}

const FIELDS: readonly FieldRule[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, nameBase: 1 },
  { name: 'day of week', min: 0, max: 7, names: WEEKDAYS, nameBase: 0 },
];

/** The expression parsed, or a sentence saying what is wrong with it. */
export function parseCron(text: unknown): CronSpec | string {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_CRON_CHARS) return `cron must be a string of 1 to ${MAX_CRON_CHARS} characters`;
  const expanded = MACROS[text.trim().toLowerCase()] ?? text;
  const parts = expanded.trim().split(/\s+/);
  if (parts.length !== 5) return `cron must have 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`;
  const sets: Array<Set<number>> = [];
  for (let i = 0; i < 5; i++) {
    const set = parseField(parts[i]!, FIELDS[i]!);
    if (typeof set === 'string') return `cron ${FIELDS[i]!.name} field '${parts[i]}': ${set}`;
    sets.push(set);
  }
  const weekdays = new Set([...sets[4]!].map((d) => d % 7)); // 7 is Sunday too
  return {
    minutes: sets[0]!,
    hours: sets[1]!,
    days: sets[2]!,
    months: sets[3]!,
    weekdays,
    daysRestricted: !parts[2]!.startsWith('*'),
    weekdaysRestricted: !parts[4]!.startsWith('*'),
  };
}

function parseField(text: string, rule: FieldRule): Set<number> | string {
  const out = new Set<number>();
  for (const piece of text.split(',')) {
    const m = /^(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:\/(\d+))?$/i.exec(piece);
    if (m === null) return 'expected *, a value, a range a-b, or a step */n';
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (!Number.isSafeInteger(step) || step < 1 || step > rule.max) return `step must be in [1, ${rule.max}]`;
    let lo = rule.min;
    let hi = rule.max;
    if (m[1] !== '*') {
      const [a, b] = m[1]!.split('-');
      const from = fieldValue(a!, rule);
      if (typeof from === 'string') return from;
      lo = from;
      // `a/n` runs from a to the field's end; a lone `a` is just a.
      const to = b === undefined ? (m[2] === undefined ? from : rule.max) : fieldValue(b, rule);
      if (typeof to === 'string') return to;
      hi = to;
      if (hi < lo) return `range ${lo}-${hi} runs backwards`;
    }
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

function fieldValue(text: string, rule: FieldRule): number | string {
  const named = rule.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + (rule.nameBase ?? 0);
  if (!/^\d+$/.test(text)) return `'${text}' is not a number${rule.names === undefined ? '' : ' or a name'}`;
  const v = Number(text);
  return v >= rule.min && v <= rule.max ? v : `${v} is outside [${rule.min}, ${rule.max}]`;
}

/** Whether a time zone name is one this runtime knows (IANA names, or UTC). */
export function timeZoneProblem(tz: unknown): string | null {
  if (typeof tz !== 'string' || !/^[A-Za-z0-9_+\-/]{1,64}$/.test(tz)) return 'tz must be an IANA time zone name such as Europe/Paris or UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return null;
  } catch {
    return `tz ${tz} is not a time zone this server knows`;
  }
}

/** A wall time in some zone. */
interface Wall {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly weekday: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', weekday: 'short' });
    if (formatters.size > 1000) formatters.clear();
    formatters.set(tz, f);
  }
  return f;
}

function wallTime(ms: number, tz: string): Wall {
  const w: Record<string, number> = {};
  for (const p of formatter(tz).formatToParts(ms)) {
    if (p.type === 'weekday') w.weekday = WEEKDAYS.indexOf(p.value.toLowerCase());
    else if (p.type !== 'literal') w[p.type] = Number(p.value);
  }
  return { year: w.year!, month: w.month!, day: w.day!, hour: w.hour! % 24, minute: w.minute!, weekday: w.weekday! };
}

/** Wall minutes in order (a fall-back hour's second pass compares below the first's end). */
function wallOrder(w: Wall): number {
  return (((w.year * 12 + w.month) * 31 + w.day) * 24 + w.hour) * 60 + w.minute;
}

function dayMatches(spec: CronSpec, w: Wall): boolean {
  const dom = spec.days.has(w.day);
  const dow = spec.weekdays.has(w.weekday);
  if (spec.daysRestricted && spec.weekdaysRestricted) return dom || dow;
  return dom && dow;
}

const MINUTE = 60_000;
/** How far ahead a tick is looked for (a 29 February can be 8 years off). */
export const CRON_HORIZON_MS = 9 * 366 * 86_400_000;

/**
 * The first tick strictly after `after` (ms) in `tz`, or null when none comes within the
 * horizon (such as 30 February). Ticks fall on whole minutes. A wall time that a
 * fall-back hour repeats fires once (its first pass); one a spring-forward gap skips
 * does not fire that day.
 */
export function nextCronTick(spec: CronSpec, tz: string, after: number): number | null {
  const floorWall = wallOrder(wallTime(after, tz));
  let t = Math.floor(after / MINUTE) * MINUTE + MINUTE;
  const end = after + CRON_HORIZON_MS;
  while (t <= end) {
    const w = wallTime(t, tz);
    if (!spec.months.has(w.month) || !dayMatches(spec, w)) {
      // Not today: on to the next wall hour until the day changes (hours, since offsets shift by hours or halves).
      t += (w.hour < 22 ? (22 - w.hour) * 60 - w.minute : 60 - w.minute) * MINUTE;
      continue;
    }
    if (!spec.hours.has(w.hour)) {
      t += (60 - w.minute) * MINUTE;
      continue;
    }
    if (!spec.minutes.has(w.minute) || wallOrder(w) <= floorWall) {
      t += MINUTE;
      continue;
    }
    return t;
  }
  return null;
}

/**
 * The latest tick in (after, now], or null when none: what a leader produces after a
 * gap (one job for the ticks missed). Searched from a recent start first, so a schedule
 * that fires every minute does not walk a long gap minute by minute.
 */
export function latestCronTick(spec: CronSpec, tz: string, after: number, now: number): number | null {
  for (const back of [3_600_000, 86_400_000, 32 * 86_400_000, 400 * 86_400_000, Infinity]) {
    const from = Math.max(after, now - back);
    let last: number | null = null;
    for (let t = nextCronTick(spec, tz, from); t !== null && t <= now; t = nextCronTick(spec, tz, t)) last = t;
    if (last !== null || from === after) return last;
  }
  return null;
}
