// The journal's client protocol: the ops it adds and how each request is
// checked. Imports only the protocol package, so the client library uses the
// same checks as the server (a bad request is refused before anything is sent
// or proposed). Documented in docs/protocol.md ("Journal ops").
import { VeraError, buildersOf, dataField, defineOp, invalid, uintField, type FamilyRequest, packData, type PackedValue, type ProtocolLimits, type RequestBuilder, utf8Length } from '../../protocol/index.js';

export const JOURNAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const MAX_KEY_BYTES = 1024;
/** Items one add may carry. */
export const MAX_ADD_ITEMS = 1000;
/** Items one claim may take. */
export const MAX_CLAIM_ITEMS = 1000;
/** The longest a doneMany may wait on the server for a claim's entry to carry it (held-acks.ts). */
export const MAX_ACK_HOLD_MS = 1000;
/** The longest a claim, or a watch of flags, may wait (ms). */
export const MAX_CLAIM_WAIT_MS = 60_000;
/** Flag events one answer may carry (one entry's are never split, so it may carry a few more). */
export const MAX_FLAG_EVENTS = 1000;
/** The highest journals-per-cluster limit an operator may set (every member holds each journal's definition in memory). */
export const MAX_JOURNALS_CEILING = 1_000_000;
/** Dates are ms since the epoch; this is year 10889, far beyond any real one. */
export const MAX_DATE = 2 ** 48;
const LONE_SURROGATE = /\p{Cs}/u;
/** The longest error text a release may leave on an item (UTF-8 bytes; longer is cut, not refused). */
export const MAX_ERROR_BYTES = 1024;
/** The largest progress report a holder may leave on an item (MessagePack bytes). */
export const MAX_PROGRESS_BYTES = 4096;
/** The largest result a done may leave to be read by key (MessagePack bytes). */
export const MAX_RESULT_BYTES = 65_536;
/** Items one page of journal.items carries, at most. */
export const MAX_PAGE_ITEMS = 1000;
/** Processings a retry policy may allow. */
export const MAX_ATTEMPTS = 1000;
/** The longest a result may be kept, and the longest retry delay (30 days). */
export const MAX_KEEP_MS = 30 * 86_400_000;
/** What journal.events reports happening to a job. */
export const LIFECYCLE_TYPES = ['added', 'claimed', 'progress', 'completed', 'failed', 'released', 'flagged', 'removed'] as const;
export type LifecycleType = (typeof LIFECYCLE_TYPES)[number];
/** The statuses journal.items lists. */
export const ITEM_STATUSES = ['waiting', 'processing', 'flagged'] as const;

export interface RetryPolicyInput {
  readonly attempts: number;
  readonly backoff: 'fixed' | 'exponential';
  readonly delayMs: number;
  readonly maxDelayMs: number;
  readonly jitterPct: number;
}

/**
 * A retry policy from a request or an entry: `{attempts, backoff?, delayMs?, maxDelayMs?,
 * jitterPct?}` with the defaults filled in (exponential from 1 s to 1 h, no jitter); a
 * string says what is wrong.
 */
export function parseRetryPolicy(value: unknown, where = 'retry'): RetryPolicyInput | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${where} must be a map of attempts, backoff, delayMs, maxDelayMs, jitterPct`;
  const v = value as Fields;
  for (const k of Object.keys(v)) if (!['attempts', 'backoff', 'delayMs', 'maxDelayMs', 'jitterPct'].includes(k)) return `${where} has an unexpected field '${k}'`;
  const int = (x: unknown, field: string, min: number, max: number, dflt?: number): number | string => {
    if (x === undefined && dflt !== undefined) return dflt;
    return typeof x === 'number' && Number.isSafeInteger(x) && x >= min && x <= max ? x : `${where}.${field} must be an integer in [${min}, ${max}]`;
  };
  const attempts = int(v.attempts, 'attempts', 1, MAX_ATTEMPTS);
  if (v.backoff !== undefined && v.backoff !== 'fixed' && v.backoff !== 'exponential') return `${where}.backoff must be 'fixed' or 'exponential'`;
  const delayMs = int(v.delayMs, 'delayMs', 0, MAX_KEEP_MS, 1000);
  const maxDelayMs = int(v.maxDelayMs, 'maxDelayMs', 0, MAX_KEEP_MS, 3_600_000);
  const jitterPct = int(v.jitterPct, 'jitterPct', 0, 100, 0);
  for (const x of [attempts, delayMs, maxDelayMs, jitterPct]) if (typeof x === 'string') return x;
  if ((maxDelayMs as number) < (delayMs as number)) return `${where}.maxDelayMs must be at least delayMs`;
  return { attempts: attempts as number, backoff: v.backoff === 'fixed' ? 'fixed' : 'exponential', delayMs: delayMs as number, maxDelayMs: maxDelayMs as number, jitterPct: jitterPct as number };
}

/** A schedule in an entry (schedules.ts): its fields checked alike by the client, the leader and every member (a cron's fields by the last two). */
export interface ScheduleSpecInput {
  readonly id: string;
  readonly timing: { readonly everyMs: number } | { readonly cron: string; readonly tz: string };
  readonly catchUp: 'one' | 'none';
  readonly job: { readonly data: unknown; readonly priority?: number; readonly retry?: RetryPolicyInput };
}

/** `everyMs` bounds of a schedule (100 ms to 366 days). */
export const MIN_EVERY_MS = 100;
export const MAX_EVERY_MS = 366 * 86_400_000;
/** The longest cron expression accepted. */
export const MAX_CRON_CHARS = 256;
const TZ_NAME = /^[A-Za-z0-9_+\-/]{1,64}$/;

/** A schedule id: as a journal name (1-64 of A-Z a-z 0-9 . _ -). */
export function scheduleIdProblem(value: unknown): string | null {
  return typeof value === 'string' && JOURNAL_NAME.test(value) ? null : 'schedule (its id) must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';
}

/** A schedule's fields, flat as a request has them: `everyMs | cron (tz), catchUp, data, priority, retry`; a string says what is wrong. */
export function parseScheduleFields(id: unknown, v: Fields): ScheduleSpecInput | string {
  const idProblem = scheduleIdProblem(id);
  if (idProblem !== null) return idProblem;
  if ((v.everyMs === undefined) === (v.cron === undefined)) return 'a schedule needs everyMs or cron (one of them)';
  let timing: ScheduleSpecInput['timing'];
  if (v.everyMs !== undefined) {
    if (typeof v.everyMs !== 'number' || !Number.isSafeInteger(v.everyMs) || v.everyMs < MIN_EVERY_MS || v.everyMs > MAX_EVERY_MS) return `everyMs must be an integer in [${MIN_EVERY_MS}, ${MAX_EVERY_MS}]`;
    if (v.tz !== undefined) return 'tz goes with cron (everyMs ticks on multiples of it, whatever the zone)';
    timing = { everyMs: v.everyMs };
  } else {
    // Its fields are parsed by the server and every member (cron.ts); here only its shape.
    if (typeof v.cron !== 'string' || v.cron.length === 0 || v.cron.length > MAX_CRON_CHARS) return `cron must be a string of 1 to ${MAX_CRON_CHARS} characters`;
    const tz = v.tz ?? 'UTC';
    if (typeof tz !== 'string' || !TZ_NAME.test(tz)) return 'tz must be an IANA time zone name such as Europe/Paris or UTC';
    timing = { cron: v.cron as string, tz };
  }
  if (v.catchUp !== undefined && v.catchUp !== 'one' && v.catchUp !== 'none') return "catchUp must be 'one' or 'none'";
  if (v.priority !== undefined && (typeof v.priority !== 'number' || !Number.isSafeInteger(v.priority) || v.priority < 0 || v.priority > 255)) return 'priority must be an integer in [0, 255]';
  const retry = v.retry === undefined ? undefined : parseRetryPolicy(v.retry);
  if (typeof retry === 'string') return retry;
  return {
    id: id as string,
    timing,
    catchUp: v.catchUp === 'none' ? 'none' : 'one',
    job: { data: v.data ?? null, ...(v.priority === undefined ? {} : { priority: v.priority as number }), ...(retry === undefined ? {} : { retry }) },
  };
}

/** A schedule as an entry carries it: `{id, timing, catchUp, job}`. */
export function parseScheduleSpec(value: unknown): ScheduleSpecInput | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'schedule must be a map';
  const v = value as Fields;
  for (const k of Object.keys(v)) if (!['id', 'timing', 'catchUp', 'job'].includes(k)) return `schedule has an unexpected field '${k}'`;
  const t = v.timing as Fields | null;
  const j = v.job as Fields | null;
  if (typeof t !== 'object' || t === null || typeof j !== 'object' || j === null || !('data' in j)) return 'schedule needs a timing and a job';
  for (const k of Object.keys(t)) if (!['everyMs', 'cron', 'tz'].includes(k)) return `schedule.timing has an unexpected field '${k}'`;
  for (const k of Object.keys(j)) if (!['data', 'priority', 'retry'].includes(k)) return `schedule.job has an unexpected field '${k}'`;
  if (t.cron !== undefined && t.tz === undefined) return 'schedule.timing.tz is missing';
  return parseScheduleFields(v.id, { ...t, catchUp: v.catchUp, ...j });
}

/** A rate limit: at most `max` (1-1000000) claimed per `windowMs` (1 ms - 1 day). */
export function parseRateLimit(value: unknown): { max: number; windowMs: number } | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'rateLimit must be a map of max and windowMs';
  const v = value as Fields;
  for (const k of Object.keys(v)) if (k !== 'max' && k !== 'windowMs') return `rateLimit has an unexpected field '${k}'`;
  const ok = (x: unknown, max: number): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 1 && x <= max;
  if (!ok(v.max, 1_000_000)) return 'rateLimit.max must be an integer in [1, 1000000]';
  if (!ok(v.windowMs, 86_400_000)) return 'rateLimit.windowMs must be an integer in [1, 86400000]';
  return { max: v.max, windowMs: v.windowMs };
}

/** Error text as kept: at most MAX_ERROR_BYTES UTF-8 bytes, cut at a character. */
export function boundedError(text: string): string {
  if (utf8Length(text) <= MAX_ERROR_BYTES) return text;
  let out = text.slice(0, MAX_ERROR_BYTES);
  while (utf8Length(out) > MAX_ERROR_BYTES - 3) out = out.slice(0, -1);
  if (LONE_SURROGATE.test(out.slice(-1))) out = out.slice(0, -1);
  return `${out}...`;
}

/** A JSON value no larger than `max` MessagePack bytes (progress, a result): TOO_LARGE past it. */
function smallData(f: Fields, field: string, max: number, limits: ProtocolLimits): unknown {
  const packed = packData(dataField({ data: f[field] }, limits), limits);
  if (packed.bytes.length > max) throw new VeraError('TOO_LARGE', `${field} is ${packed.bytes.length} bytes encoded as MessagePack; the limit is ${max}`);
  return f[field];
}

export function journalNameProblem(value: unknown): string | null {
  return typeof value === 'string' && JOURNAL_NAME.test(value) ? null : 'name must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';
}

export function journalKeyProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0) return 'key must be a non-empty string';
  if (LONE_SURROGATE.test(value)) return 'key is not valid Unicode (it holds a lone surrogate)';
  if (utf8Length(value) > MAX_KEY_BYTES) return `key is longer than ${MAX_KEY_BYTES} UTF-8 bytes`;
  return null;
}

type Fields = Readonly<Record<string, unknown>>;

function name(f: Fields): string {
  const problem = journalNameProblem(f.name);
  if (problem !== null) throw invalid(problem);
  return f.name as string;
}

function key(value: unknown, where = 'key'): string {
  const problem = journalKeyProblem(value);
  if (problem !== null) throw invalid(where === 'key' ? problem : `${where}: ${problem}`);
  return value as string;
}

function bounded(f: Fields, field: string, min: number, max: number): number | undefined {
  const v = uintField(f, field);
  if (v !== undefined && (v < min || v > max)) throw invalid(`${field} must be in [${min}, ${max}], got ${v}`);
  return v;
}

const SETTINGS = ['timeoutMs', 'maxTimeouts', 'priority', 'expiresInMs', 'maxItems'] as const;
/** Command version 9's settings; null clears one (configure). */
const POLICY_SETTINGS = ['retry', 'keepResultsMs', 'rateLimit'] as const;

function settings(f: Fields): SettingsRequest {
  const out: { -readonly [K in keyof SettingsRequest]: SettingsRequest[K] } = {};
  if (f.retry !== undefined) {
    const p = f.retry === null ? null : parseRetryPolicy(f.retry);
    if (typeof p === 'string') throw invalid(p);
    out.retry = p;
  }
  if (f.rateLimit !== undefined) {
    const r = f.rateLimit === null ? null : parseRateLimit(f.rateLimit);
    if (typeof r === 'string') throw invalid(r);
    out.rateLimit = r;
  }
  if (f.keepResultsMs !== undefined) out.keepResultsMs = f.keepResultsMs === null ? null : bounded(f, 'keepResultsMs', 0, MAX_KEEP_MS);
  const limits = { timeoutMs: [1, 2 ** 40], maxTimeouts: [0, 255], priority: [0, 255], expiresInMs: [0, MAX_DATE], maxItems: [1, 2 ** 40] } as const;
  for (const s of SETTINGS) {
    const v = bounded(f, s, limits[s][0], limits[s][1]);
    if (v !== undefined) out[s] = v;
  }
  return out;
}

function items(f: Fields, limits: ProtocolLimits): AddedItemRequest[] {
  const list = f.items;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_ADD_ITEMS) throw invalid(`items must be an array of 1 to ${MAX_ADD_ITEMS} items`);
  return list.map((raw: unknown, i): AddedItemRequest => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`items[${i}] must be a map`);
    const item = raw as Fields;
    for (const k of Object.keys(item)) if (!['key', 'data', 'priority', 'processAt', 'expiresAt', 'retry'].includes(k)) throw invalid(`items[${i}] has an unexpected field '${k}'`);
    const retry = item.retry === undefined ? undefined : parseRetryPolicy(item.retry, `items[${i}].retry`);
    if (typeof retry === 'string') throw invalid(retry);
    // Encoded once here, in the bytes its limit is measured in; they ride on into the entry and the stored item.
    const data = packData(dataField(item, limits), limits);
    const priority = bounded(item, 'priority', 0, 255);
    const processAt = bounded(item, 'processAt', 0, MAX_DATE);
    const expiresAt = bounded(item, 'expiresAt', 0, MAX_DATE);
    return {
      key: key(item.key, `items[${i}]`),
      data,
      ...(priority === undefined ? {} : { priority }),
      ...(processAt === undefined ? {} : { processAt }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
      ...(retry === undefined ? {} : { retry }),
    };
  });
}

function scheduleId(value: unknown): string {
  const problem = scheduleIdProblem(value);
  if (problem !== null) throw invalid(problem);
  return value as string;
}

function lease(f: Fields): number {
  const v = uintField(f, 'lease');
  if (v === undefined || v < 1) throw invalid('lease must be the positive lease number a claim returned');
  return v;
}

/** journal.claim: up to `max` items due now, the claim waiting up to `waitMs` for some. */
export const CLAIM_OP = defineOp<{ readonly name: string; readonly max: number; readonly waitMs: number }, Claim>({
  name: 'journal.claim',
  fields: ['name', 'max', 'waitMs'],
  parse: (f) => ({ name: name(f), max: bounded(f, 'max', 1, MAX_CLAIM_ITEMS) ?? 1, waitMs: bounded(f, 'waitMs', 0, MAX_CLAIM_WAIT_MS) ?? 0 }),
});

/** journal.cancelWait: calls off this session's claims of the journal that wait on the member (a worker stopping): each answers at once, empty. */
export const CANCEL_WAIT_OP = defineOp<{ readonly name: string }, { readonly cancelled: number }>({
  name: 'journal.cancelWait',
  fields: ['name'],
  parse: (f) => ({ name: name(f) }),
});

/** The answer of an op that answers nothing but its success. */
export type Done = Readonly<Record<string, never>>;
/** An op that names a journal and nothing else; `read`: it changes nothing. */
const journalOp = <Res extends object = Done>(op: string, read = false) =>
  defineOp<{ readonly name: string }, Res>({ name: op, read, fields: ['name'], parse: (f) => ({ name: name(f) }) });
/** An op that names one job of a journal by its key. */
const jobOp = <Res extends object = Done>(op: string, read = false) =>
  defineOp<{ readonly name: string; readonly key: string }, Res>({ name: op, read, fields: ['name', 'key'], parse: (f) => ({ name: name(f), key: key(f.key) }) });

/**
 * Every op the journal adds, as a schema (op-schema.ts): the server's handlers and the client
 * (client.ts) take their request and result types from it. Reads (`read`) are sent again after a
 * lost connection, as a get is.
 */
export const JOURNAL_SCHEMAS = {
  claim: CLAIM_OP,
  cancelWait: CANCEL_WAIT_OP,
  drop: journalOp('journal.drop'),
  show: journalOp<JournalInfo>('journal.show', true),
  pause: journalOp('journal.pause'),
  resume: journalOp('journal.resume'),
  requeue: jobOp('journal.requeue'),
  forget: jobOp('journal.forget'),
  remove: jobOp<{ readonly status: 'removed' | 'cancelled' }>('journal.remove'),
  get: jobOp<JobInfo>('journal.get', true),
  result: jobOp<KeptResult>('journal.result', true),
  extend: defineOp<{ readonly name: string; readonly key: string; readonly lease: number }, Done>({
    name: 'journal.extend',
    fields: ['name', 'key', 'lease'],
    parse: (f) => ({ name: name(f), key: key(f.key), lease: lease(f) }),
  }),
  drain: journalOp<{ readonly removed: number }>('journal.drain'),
  schedules: journalOp<{ readonly schedules: ScheduleInfo[] }>('journal.schedules', true),
  flagged: defineOp<{ readonly name: string; readonly limit: number }, { readonly items: FlaggedItem[] }>({
    name: 'journal.flagged',
    read: true,
    fields: ['name', 'limit'],
    parse: (f) => ({ name: name(f), limit: bounded(f, 'limit', 1, 10_000) ?? 1000 }),
  }),
  flags: defineOp<{ readonly name: string; readonly after?: number; readonly waitMs: number; readonly limit: number }, FlagPage>({
    name: 'journal.flags',
    read: true,
    fields: ['name', 'after', 'waitMs', 'limit'],
    parse: (f) => {
      const after = uintField(f, 'after');
      const waitMs = bounded(f, 'waitMs', 0, MAX_CLAIM_WAIT_MS) ?? 0;
      const limit = bounded(f, 'limit', 1, MAX_FLAG_EVENTS) ?? 100;
      return { name: name(f), ...(after === undefined ? {} : { after }), waitMs, limit };
    },
  }),
  // With `claim`, the answer is a claim's (the worker's next items); without, nothing.
  done: defineOp<{ readonly name: string; readonly key: string; readonly lease: number; readonly claim?: number; readonly result?: unknown }, Partial<Claim>>({
    name: 'journal.done',
    fields: ['name', 'key', 'lease', 'claim', 'result'],
    parse: (f, limits) => {
      const claim = bounded(f, 'claim', 1, MAX_CLAIM_ITEMS);
      const result = f.result === undefined ? {} : { result: smallData(f, 'result', MAX_RESULT_BYTES, limits) };
      return { name: name(f), key: key(f.key), lease: lease(f), ...(claim === undefined ? {} : { claim }), ...result };
    },
  }),
  release: defineOp<
    { readonly name: string; readonly key: string; readonly lease: number; readonly processAt?: number; readonly failure?: false; readonly error?: string; readonly unrecoverable?: true },
    { readonly flagged: boolean }
  >({
    name: 'journal.release',
    fields: ['name', 'key', 'lease', 'processAt', 'failure', 'error', 'unrecoverable'],
    parse: (f) => {
      const processAt = bounded(f, 'processAt', 0, MAX_DATE);
      if (f.failure !== undefined && typeof f.failure !== 'boolean') throw invalid('failure must be a boolean');
      if (f.unrecoverable !== undefined && typeof f.unrecoverable !== 'boolean') throw invalid('unrecoverable must be a boolean');
      if (f.error !== undefined && (typeof f.error !== 'string' || LONE_SURROGATE.test(f.error))) throw invalid('error must be a string of valid Unicode');
      if (f.failure === false && (f.unrecoverable === true || f.error !== undefined)) throw invalid('a release that is no failure carries no error and is not unrecoverable');
      // A release is a failed processing unless it says `failure: false` (a worker handing back work it did not start).
      const failure = f.failure === false ? { failure: false as const } : {};
      const error = typeof f.error === 'string' ? { error: boundedError(f.error) } : {};
      const unrecoverable = f.unrecoverable === true ? { unrecoverable: true as const } : {};
      return { name: name(f), key: key(f.key), lease: lease(f), ...(processAt === undefined ? {} : { processAt }), ...failure, ...error, ...unrecoverable };
    },
  }),
  progress: defineOp<{ readonly name: string; readonly key: string; readonly lease: number; readonly progress: unknown }, Done>({
    name: 'journal.progress',
    fields: ['name', 'key', 'lease', 'progress'],
    parse: (f, limits) => {
      if (f.progress === undefined) throw invalid('progress is missing (any JSON value)');
      return { name: name(f), key: key(f.key), lease: lease(f), progress: smallData(f, 'progress', MAX_PROGRESS_BYTES, limits) };
    },
  }),
  doneMany: defineOp<
    { readonly name: string; readonly items: ReadonlyArray<{ readonly key: string; readonly lease: number; readonly result?: unknown }>; readonly claim?: number; readonly holdMs?: number },
    DoneManyResult
  >({
    name: 'journal.doneMany',
    fields: ['name', 'items', 'claim', 'holdMs'],
    parse: (f, limits) => {
      const list = f.items;
      if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CLAIM_ITEMS) throw invalid(`items must be an array of 1 to ${MAX_CLAIM_ITEMS} {key, lease} maps`);
      const items = list.map((raw: unknown, i) => {
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`items[${i}] must be a map of key and lease`);
        const item = raw as Fields;
        for (const k of Object.keys(item)) if (k !== 'key' && k !== 'lease' && k !== 'result') throw invalid(`items[${i}] has an unexpected field '${k}'`);
        const result = item.result === undefined ? {} : { result: smallData(item, 'result', MAX_RESULT_BYTES, limits) };
        return { key: key(item.key, `items[${i}]`), lease: lease(item), ...result };
      });
      const claim = bounded(f, 'claim', 1, MAX_CLAIM_ITEMS);
      const holdMs = bounded(f, 'holdMs', 1, MAX_ACK_HOLD_MS);
      if (claim !== undefined && holdMs !== undefined) throw invalid('holdMs is for acknowledgements without a claim (a claim is proposed at once)');
      return { name: name(f), items, ...(claim === undefined ? {} : { claim }), ...(holdMs === undefined ? {} : { holdMs }) };
    },
  }),
  events: defineOp<
    { readonly name: string; readonly after?: number; readonly waitMs: number; readonly limit: number; readonly key?: string; readonly types?: readonly LifecycleType[] },
    LifecyclePage
  >({
    name: 'journal.events',
    read: true,
    fields: ['name', 'after', 'waitMs', 'limit', 'key', 'types'],
    parse: (f) => {
      const after = uintField(f, 'after');
      const waitMs = bounded(f, 'waitMs', 0, MAX_CLAIM_WAIT_MS) ?? 0;
      const limit = bounded(f, 'limit', 1, MAX_FLAG_EVENTS) ?? 100;
      const types = f.types;
      if (types !== undefined && (!Array.isArray(types) || types.length === 0 || !types.every((t) => LIFECYCLE_TYPES.includes(t as LifecycleType)))) {
        throw invalid(`types must be a non-empty array of ${LIFECYCLE_TYPES.join(', ')}`);
      }
      return {
        name: name(f),
        ...(after === undefined ? {} : { after }),
        waitMs,
        limit,
        ...(f.key === undefined ? {} : { key: key(f.key) }),
        ...(types === undefined ? {} : { types: [...(types as LifecycleType[])] }),
      };
    },
  }),
  items: defineOp<{ readonly name: string; readonly status: (typeof ITEM_STATUSES)[number]; readonly after?: string; readonly limit: number }, JobPage>({
    name: 'journal.items',
    read: true,
    fields: ['name', 'status', 'after', 'limit'],
    parse: (f) => {
      const status = f.status as (typeof ITEM_STATUSES)[number];
      if (!ITEM_STATUSES.includes(status)) throw invalid(`status must be one of ${ITEM_STATUSES.join(', ')}`);
      if (f.after !== undefined && (typeof f.after !== 'string' || !CURSOR.test(f.after))) throw invalid('after must be a cursor a page of journal.items gave (its next)');
      const limit = bounded(f, 'limit', 1, MAX_PAGE_ITEMS) ?? 100;
      return { name: name(f), status, ...(typeof f.after === 'string' ? { after: f.after } : {}), limit };
    },
  }),
  unschedule: defineOp<{ readonly name: string; readonly schedule: string }, Done>({
    name: 'journal.unschedule',
    fields: ['name', 'schedule'],
    parse: (f) => ({ name: name(f), schedule: scheduleId(f.schedule) }),
  }),
  create: defineOp<{ readonly name: string } & SettingsRequest, Done>({
    name: 'journal.create',
    fields: ['name', ...SETTINGS, ...POLICY_SETTINGS],
    parse: (f) => ({ name: name(f), ...settings(f) }),
  }),
  configure: defineOp<{ readonly name: string } & SettingsRequest, Done>({
    name: 'journal.configure',
    fields: ['name', ...SETTINGS, ...POLICY_SETTINGS],
    parse: (f) => ({ name: name(f), ...settings(f) }),
  }),
  list: defineOp<Readonly<Record<string, never>>, { readonly journals: JournalInfo[] }>({ name: 'journal.list', read: true, fields: [], parse: () => ({}) }),
  add: defineOp<{ readonly name: string; readonly items: readonly AddedItemRequest[] }, { readonly inserted: number; readonly merged: number; readonly deferred: number }>({
    name: 'journal.add',
    fields: ['name', 'items'],
    parse: (f, limits) => ({ name: name(f), items: items(f, limits) }),
  }),
  limits: defineOp<{ readonly maxJournals?: number }, { readonly maxJournals: number; readonly journals: number }>({
    name: 'journal.limits',
    fields: ['maxJournals'],
    parse: (f) => {
      const maxJournals = bounded(f, 'maxJournals', 1, MAX_JOURNALS_CEILING);
      return maxJournals === undefined ? {} : { maxJournals };
    },
  }),
  // Repeatable jobs (command version 9): a schedule added or replaced, listed, removed.
  schedule: defineOp<ScheduleRequest, { readonly replaced: boolean; readonly nextTick: number }>({
    name: 'journal.schedule',
    fields: ['name', 'schedule', 'everyMs', 'cron', 'tz', 'catchUp', 'data', 'priority', 'retry'],
    parse: (f, limits) => {
      const spec = parseScheduleFields(f.schedule, f);
      if (typeof spec === 'string') throw invalid(spec);
      const data = f.data === undefined ? null : smallData(f, 'data', MAX_RESULT_BYTES, limits);
      const t = spec.timing;
      return {
        name: name(f),
        schedule: spec.id,
        ...('everyMs' in t ? { everyMs: t.everyMs } : { cron: t.cron, tz: t.tz }),
        catchUp: spec.catchUp,
        data,
        ...(spec.job.priority === undefined ? {} : { priority: spec.job.priority }),
        ...(spec.job.retry === undefined ? {} : { retry: spec.job.retry }),
      };
    },
  }),
};

/** The ops the journal adds, by name, with the request each takes (the frame decoder's and raw callers' view of JOURNAL_SCHEMAS). */
export const JOURNAL_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(JOURNAL_SCHEMAS));

/** A journal's settings as create and configure carry them; null clears one of command version 9's (configure). */
export interface SettingsRequest {
  readonly timeoutMs?: number;
  readonly maxTimeouts?: number;
  readonly priority?: number;
  readonly expiresInMs?: number;
  readonly maxItems?: number;
  readonly retry?: RetryPolicyInput | null;
  /** How long results given with done are kept (ms; default 1 h, 0: none). null: back to the default. */
  readonly keepResultsMs?: number | null;
  /** At most `max` items claimed per `windowMs`, by all workers together. null clears it. */
  readonly rateLimit?: { readonly max: number; readonly windowMs: number } | null;
}

/** One item of an add, checked: its data encoded once (packData), in the bytes its limit is measured in. */
export interface AddedItemRequest {
  readonly key: string;
  readonly data: PackedValue;
  readonly priority?: number;
  readonly processAt?: number;
  readonly expiresAt?: number;
  readonly retry?: RetryPolicyInput;
}

/** A schedule as journal.schedule carries it: flat, its defaults filled in. */
export interface ScheduleRequest {
  readonly name: string;
  readonly schedule: string;
  readonly everyMs?: number;
  readonly cron?: string;
  readonly tz?: string;
  readonly catchUp: 'one' | 'none';
  readonly data: unknown;
  readonly priority?: number;
  readonly retry?: RetryPolicyInput;
}

// The answers of the journal's ops, as the server's handlers give them and the client returns them.

export interface JournalInfo {
  readonly name: string;
  readonly settings: {
    readonly timeoutMs: number;
    readonly maxTimeouts: number;
    readonly priority: number;
    readonly expiresInMs: number;
    readonly maxItems: number;
    readonly retry?: RetryPolicyInput;
    readonly keepResultsMs?: number;
    readonly rateLimit?: { readonly max: number; readonly windowMs: number };
  };
  readonly counts: { readonly waiting: number; readonly processing: number; readonly flagged: number; readonly byPriority: Readonly<Record<string, number>>; readonly results?: number };
  /** Command version 9: claims take nothing while paused. */
  readonly paused?: boolean;
}

/** A schedule as journal.schedules answers it: what journal.schedule carried, and its ticks. */
export interface ScheduleInfo extends Omit<ScheduleRequest, 'name'> {
  readonly createdAt: number;
  /** The last tick made or skipped (createdAt before the first); its job's key is `ID@ISO-date`. */
  readonly lastTick: number;
  readonly nextTick: number | null;
  readonly produced: number;
  readonly skipped: number;
}

/** One job as journal.get and journal.items show it. */
export interface JobInfo {
  readonly key: string;
  /** `cancelled`: removed while Processing; gone once its claim ends. */
  readonly status: 'waiting' | 'processing' | 'cancelled' | 'flagged';
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  readonly insertedAt: number;
  /** 0: never. */
  readonly expiresAt: number;
  readonly timeouts: number;
  readonly failures: number;
  readonly lastError?: string;
  readonly retry?: RetryPolicyInput;
  /** Processing: the holder's lease, when its claim started or was last extended, and when it times out unless extended. */
  readonly lease?: number;
  readonly startedAt?: number;
  readonly leaseExpiresAt?: number;
  readonly progress?: unknown;
  readonly flaggedAt?: number;
  /** A version added while it was processed, waiting for the processing to end. */
  readonly next?: { readonly data: unknown; readonly priority: number; readonly processAt: number; readonly expiresAt: number };
}

export interface JobPage {
  readonly items: readonly JobInfo[];
  /** Ask with `after: next` for the next page; null at the end. */
  readonly next: string | null;
}

export interface KeptResult {
  readonly key: string;
  readonly result: unknown;
  readonly doneAt: number;
  readonly keptUntil: number;
}

export interface ClaimedItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  readonly insertedAt: number;
  readonly timeouts: number;
  /**
   * Processings of this item that ended without a done (timeouts, and releases that did not say
   * otherwise), which re-adding the item does not reset. Absent from servers before command version 9.
   */
  readonly failures?: number;
  /** The item's own retry policy, when it has one. */
  readonly retry?: RetryPolicyInput;
}

export interface Claim {
  /** Present to extend, done and release; stale once the claim timed out or ended. */
  readonly lease: number;
  readonly items: readonly ClaimedItem[];
}

/** doneMany's answer: with `claim`, the claim's lease and items too. */
export interface DoneManyResult {
  readonly done: number;
  readonly lost: string[];
  readonly lease?: number;
  readonly items?: readonly ClaimedItem[];
}

export interface FlaggedItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority: number;
  readonly insertedAt: number;
  readonly timeouts: number;
  /** As ClaimedItem's. */
  readonly failures?: number;
  readonly flaggedAt: number;
  /** The error the last failure gave (command version 9). */
  readonly lastError?: string;
}

/** One item flagged: `index` is the entry that flagged it, and the cursor to watch on from. */
export interface FlagEvent {
  readonly index: number;
  readonly key: string;
}

export interface FlagPage {
  readonly events: readonly FlagEvent[];
  /** Ask from here next time. */
  readonly next: number;
  /** Flags after the cursor may have been missed (the member restarted or kept no older ones): re-read `flagged()`. */
  readonly missed: boolean;
}

/** Something that happened to a job, named by the entry that did it (the cursor to watch on from). */
export interface LifecycleEventInfo {
  readonly index: number;
  readonly key: string;
  readonly type: LifecycleType;
}

export interface LifecyclePage {
  readonly events: readonly LifecycleEventInfo[];
  readonly next: number;
  /** Events after the cursor may have been missed here: re-read the jobs (get, items, result). */
  readonly missed: boolean;
}

/** A page cursor: base64url of an index key's tail (priority, dates, key), opaque to clients. */
const CURSOR = /^[A-Za-z0-9_-]{1,1500}$/;

export type JournalRequest = FamilyRequest;
