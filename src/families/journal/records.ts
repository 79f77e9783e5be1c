// The journal family's values: a journal's definition (settings and counts)
// and an item, MessagePack-encoded with a fixed field order so every member
// writes the same bytes.
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';

export interface JournalSettings {
  /** How long a claim lasts without an extension (ms). */
  readonly timeoutMs: number;
  /** Timeouts an item may have; one more and it is flagged (moved aside) instead. */
  readonly maxTimeouts: number;
  /** The priority of an added item that names none (0-255, smallest first). */
  readonly priority: number;
  /** An added item that names no expiration date expires this long after it was added (ms); 0: never. */
  readonly expiresInMs: number;
  /** Items the journal may hold (Waiting and Processing); an add that would pass it is refused. */
  readonly maxItems: number;
  /** From command version 9: how a failed processing is retried (absent: maxTimeouts, and the worker's own backoff). */
  readonly retry?: RetryPolicy;
  /** From command version 9: how long a result given with done is kept (ms); absent: DEFAULT_KEEP_RESULTS_MS. */
  readonly keepResultsMs?: number;
  /** From command version 9: at most `max` items claimed per `windowMs`, for all workers together. */
  readonly rateLimit?: RateLimit;
}

/** A retry policy (docs/journal.md, "Retries"): of a journal, or of one item. */
export interface RetryPolicy {
  /** Processings an item may have in all; the failure that ends the last one flags it. */
  readonly attempts: number;
  readonly backoff: 'fixed' | 'exponential';
  /** The delay after the first failure (ms); exponential doubles it per failure, up to maxDelayMs. */
  readonly delayMs: number;
  readonly maxDelayMs: number;
  /** Up to this share of the delay (percent) is taken off, by a hash of the key and the attempt. */
  readonly jitterPct: number;
}

export interface RateLimit {
  readonly max: number;
  readonly windowMs: number;
}

/** Results given with done are kept this long unless the journal says otherwise (1 h). */
export const DEFAULT_KEEP_RESULTS_MS = 3_600_000;

export interface JournalCounts {
  readonly waiting: number;
  readonly processing: number;
  readonly flagged: number;
  /** Waiting items per priority (only the priorities that have some), so a claim seeks only those. */
  readonly byPriority: Readonly<Record<number, number>>;
}

export interface JournalDefinition {
  readonly settings: JournalSettings;
  readonly counts: JournalCounts;
  /** Being dropped: its items are deleted a batch per entry; it answers nothing meanwhile. */
  readonly dropping: boolean;
  /** Paused (command version 9): claims take nothing; adds go on. */
  readonly paused?: boolean;
  /** The rate limit's current window (its start, by the entries' replicated clock) and the items claimed in it. */
  readonly window?: { readonly start: number; readonly claimed: number };
  /** Results kept (given with done, not yet expired or deleted). */
  readonly results?: number;
}

/** A version of an item added while it was Processing: it becomes the item when processing ends. */
export interface NextVersion {
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  /** 0: never. */
  readonly expiresAt: number;
}

export interface JournalItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  readonly insertedAt: number;
  /** 0: never. */
  readonly expiresAt: number;
  readonly status: 'waiting' | 'processing';
  /** When the current claim started or was last extended; 0 while Waiting. */
  readonly startedAt: number;
  readonly timeouts: number;
  /**
   * Processings that ended without a done (timeouts, and releases that said they failed), which
   * a merge does not reset: what flags a job its producer keeps adding again. Counted from
   * command version 9 on; 0 before.
   */
  readonly failures: number;
  /** The index of the claim entry that holds it; 0 while Waiting. */
  readonly lease: number;
  readonly next: NextVersion | null;
  /**
   * Who is charged for it (issue 31, item 7; command version 9): the user whose add gave it
   * its data or its next version, and the bytes charged (chargedBytes: its key and data as
   * packed, a next version's data included; set by JournalTx). Absent: nobody is charged.
   */
  readonly user?: string;
  readonly chargedBytes?: number;
  /**
   * From command version 9 (absent: none): removed while Processing; its holder's next extend,
   * progress, done or release is refused, and its claim's timeout deletes it.
   */
  readonly cancelled?: true;
  /** The last failure's error text (bounded by MAX_ERROR_BYTES), kept through retries and into the flagged copy. */
  readonly lastError?: string;
  /** The holder's last progress report (bounded by MAX_PROGRESS_BYTES); cleared by the next claim. */
  readonly progress?: unknown;
  /** This item's own retry policy, over its journal's. */
  readonly retry?: RetryPolicy;
}

/** A result given with done, kept until `keptUntil` (the replicated clock). */
export interface KeptResult {
  readonly result: unknown;
  readonly doneAt: number;
  readonly keptUntil: number;
}

export function encodeResult(r: KeptResult): Buffer {
  return pack([r.result, r.doneAt, r.keptUntil]);
}

export function decodeResult(bytes: Uint8Array): KeptResult {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 3 || !isCount(v[1]) || !isCount(v[2])) throw new CorruptValueError('journal result is not [result, doneAt, keptUntil]');
  return { result: v[0], doneAt: v[1], keptUntil: v[2] };
}

function encodeRetry(r: RetryPolicy | undefined): unknown[] | null {
  return r === undefined ? null : [r.attempts, r.backoff === 'exponential' ? 1 : 0, r.delayMs, r.maxDelayMs, r.jitterPct];
}

function decodeRetry(v: unknown): RetryPolicy | undefined {
  if (v === null || v === undefined) return undefined;
  if (!Array.isArray(v) || v.length !== 5 || !v.every(isCount)) throw new CorruptValueError('journal retry policy is not [attempts, backoff, delayMs, maxDelayMs, jitterPct]');
  const [attempts, backoff, delayMs, maxDelayMs, jitterPct] = v as number[];
  return { attempts: attempts!, backoff: backoff === 1 ? 'exponential' : 'fixed', delayMs: delayMs!, maxDelayMs: maxDelayMs!, jitterPct: jitterPct! };
}

export interface FlaggedItem {
  readonly item: JournalItem;
  readonly flaggedAt: number;
}

/** Cluster-wide limits, replicated so every member enforces the same. */
export interface JournalLimits {
  readonly maxJournals: number;
}

export function encodeLimits(l: JournalLimits): Buffer {
  return pack([l.maxJournals]);
}

export function decodeLimits(bytes: Uint8Array): JournalLimits {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 1 || !isCount(v[0])) throw new CorruptValueError('journal limits are not [maxJournals]');
  return { maxJournals: v[0] };
}

export function encodeDefinition(d: JournalDefinition): Buffer {
  const s = d.settings;
  const c = d.counts;
  const byPriority = Object.entries(c.byPriority)
    .map(([p, n]) => [Number(p), n] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => a[0] - b[0]);
  const fields: unknown[] = [s.timeoutMs, s.maxTimeouts, s.priority, s.expiresInMs, s.maxItems, c.waiting, c.processing, c.flagged, byPriority, d.dropping];
  // Command version 9's settings and state, an eleventh field written only when one is set:
  // a journal without them is written byte for byte as before.
  const extra = [
    encodeRetry(s.retry),
    s.keepResultsMs ?? null,
    s.rateLimit === undefined ? null : [s.rateLimit.max, s.rateLimit.windowMs],
    d.paused === true ? 1 : 0,
    d.window === undefined ? null : [d.window.start, d.window.claimed],
    d.results ?? 0,
  ];
  if (extra.some((x) => x !== null && x !== 0)) fields.push(extra);
  return pack(fields);
}

export function decodeDefinition(bytes: Uint8Array): JournalDefinition {
  const v = unpack(bytes);
  if (!Array.isArray(v) || (v.length !== 10 && v.length !== 11) || !v.slice(0, 8).every(isCount) || !Array.isArray(v[8]) || typeof v[9] !== 'boolean') {
    throw new CorruptValueError('journal definition is not [settings..., counts..., byPriority, dropping]');
  }
  const byPriority: Record<number, number> = {};
  for (const pair of v[8] as unknown[]) {
    if (!Array.isArray(pair) || pair.length !== 2 || !isCount(pair[0]) || !isCount(pair[1])) throw new CorruptValueError('journal priority count is not [priority, count]');
    byPriority[pair[0]] = pair[1];
  }
  const [timeoutMs, maxTimeouts, priority, expiresInMs, maxItems, waiting, processing, flagged] = v as number[];
  const base: JournalDefinition = {
    settings: { timeoutMs: timeoutMs!, maxTimeouts: maxTimeouts!, priority: priority!, expiresInMs: expiresInMs!, maxItems: maxItems! },
    counts: { waiting: waiting!, processing: processing!, flagged: flagged!, byPriority },
    dropping: v[9] as boolean,
  };
  return v.length === 11 ? withExtra(base, v[10]) : base;
}

function withExtra(d: JournalDefinition, raw: unknown): JournalDefinition {
  const pair = (x: unknown): [number, number] | null => {
    if (x === null) return null;
    if (!Array.isArray(x) || x.length !== 2 || !x.every(isCount)) throw new CorruptValueError('journal definition pair is malformed');
    return [x[0] as number, x[1] as number];
  };
  if (!Array.isArray(raw) || raw.length !== 6 || !(raw[1] === null || isCount(raw[1])) || !isCount(raw[3]) || !isCount(raw[5])) throw new CorruptValueError('journal definition extra is malformed');
  const retry = decodeRetry(raw[0]);
  const rate = pair(raw[2]);
  const window = pair(raw[4]);
  return {
    ...d,
    settings: {
      ...d.settings,
      ...(retry === undefined ? {} : { retry }),
      ...(raw[1] === null ? {} : { keepResultsMs: raw[1] as number }),
      ...(rate === null ? {} : { rateLimit: { max: rate[0], windowMs: rate[1] } }),
    },
    ...(raw[3] === 1 ? { paused: true } : {}),
    ...(window === null ? {} : { window: { start: window[0], claimed: window[1] } }),
    ...(raw[5] === 0 ? {} : { results: raw[5] as number }),
  };
}

export function encodeItem(item: JournalItem): Buffer {
  return pack(itemFields(item));
}

/**
 * The failure count is a twelfth field, written only when it is not 0: an item without
 * failures is the eleven fields it always was, byte for byte (records written before the
 * count existed decode as 0 failures, and a member still on an older build reads every
 * record written before the cluster turned the count on). An item charged to a user adds
 * the user and the charged bytes as a thirteenth and fourteenth (the failure count then
 * written even when 0); an item charged to nobody is written as before.
 */
function itemFields(i: JournalItem): unknown[] {
  const next = i.next === null ? null : [i.next.data, i.next.priority, i.next.processAt, i.next.expiresAt];
  const fields = [i.key, i.data, i.priority, i.processAt, i.insertedAt, i.expiresAt, i.status === 'processing' ? 1 : 0, i.startedAt, i.timeouts, i.lease, next];
  // Command version 9's extras (cancelled, last error, progress, retry policy): a fifteenth
  // field, written only when one is set (the user then null when nobody is charged).
  const extra = i.cancelled === true || i.lastError !== undefined || i.progress !== undefined || i.retry !== undefined;
  if (extra) fields.push(i.failures, i.user ?? null, i.chargedBytes ?? 0, [i.cancelled === true ? 1 : 0, i.lastError ?? null, i.progress ?? null, encodeRetry(i.retry)]);
  else if (i.user !== undefined) fields.push(i.failures, i.user, i.chargedBytes ?? 0);
  else if (i.failures !== 0) fields.push(i.failures);
  return fields;
}

/** What an item is charged (its key and data, and a next version's data, as packed): a function of its content alone. */
export function chargeOf(i: JournalItem): number {
  return pack([i.key, i.data, i.next === null ? null : i.next.data]).byteLength;
}

export function decodeItem(bytes: Uint8Array): JournalItem {
  return itemFrom(unpack(bytes));
}

function itemFrom(v: unknown): JournalItem {
  if (
    !Array.isArray(v) ||
    (v.length !== 11 &&
      !(v.length === 12 && isCount(v[11]) && v[11] > 0) &&
      !(v.length === 14 && isCount(v[11]) && typeof v[12] === 'string' && v[12].length > 0 && isCount(v[13])) &&
      !(v.length === 15 && isCount(v[11]) && (v[12] === null || (typeof v[12] === 'string' && v[12].length > 0)) && isCount(v[13]) && Array.isArray(v[14]) && v[14].length === 4)) ||
    typeof v[0] !== 'string' ||
    ![2, 3, 4, 5, 7, 8, 9].every((i) => isCount(v[i])) ||
    (v[6] !== 0 && v[6] !== 1)
  ) {
    throw new CorruptValueError('journal item is not [key, data, priority, processAt, insertedAt, expiresAt, status, startedAt, timeouts, lease, next, failures?, user?, chargedBytes?]');
  }
  let next: NextVersion | null = null;
  if (v[10] !== null) {
    const n = v[10] as unknown;
    if (!Array.isArray(n) || n.length !== 4 || !isCount(n[1]) || !isCount(n[2]) || !isCount(n[3])) throw new CorruptValueError('journal item next version is malformed');
    next = { data: n[0], priority: n[1], processAt: n[2], expiresAt: n[3] };
  }
  const item: JournalItem = {
    key: v[0],
    data: v[1],
    priority: v[2],
    processAt: v[3],
    insertedAt: v[4],
    expiresAt: v[5],
    status: v[6] === 1 ? 'processing' : 'waiting',
    startedAt: v[7],
    timeouts: v[8],
    failures: v.length >= 12 ? (v[11] as number) : 0,
    lease: v[9],
    next,
  };
  const charged = (v.length === 14 || v.length === 15) && typeof v[12] === 'string' ? { ...item, user: v[12], chargedBytes: v[13] as number } : item;
  if (v.length !== 15) return charged;
  const [cancelled, lastError, progress, retry] = v[14] as unknown[];
  if ((cancelled !== 0 && cancelled !== 1) || (lastError !== null && typeof lastError !== 'string')) throw new CorruptValueError('journal item extra is malformed');
  const policy = decodeRetry(retry);
  return {
    ...charged,
    ...(cancelled === 1 ? { cancelled: true as const } : {}),
    ...(lastError === null ? {} : { lastError }),
    ...(progress === null ? {} : { progress }),
    ...(policy === undefined ? {} : { retry: policy }),
  };
}

export function encodeFlagged(f: FlaggedItem): Buffer {
  return pack([itemFields(f.item), f.flaggedAt]);
}

export function decodeFlagged(bytes: Uint8Array): FlaggedItem {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 2 || !isCount(v[1])) throw new CorruptValueError('flagged journal item is not [item, flaggedAt]');
  return { item: itemFrom(v[0]), flaggedAt: v[1] };
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}
