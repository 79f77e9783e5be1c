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
}

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
  return pack([s.timeoutMs, s.maxTimeouts, s.priority, s.expiresInMs, s.maxItems, c.waiting, c.processing, c.flagged, byPriority, d.dropping]);
}

export function decodeDefinition(bytes: Uint8Array): JournalDefinition {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 10 || !v.slice(0, 8).every(isCount) || !Array.isArray(v[8]) || typeof v[9] !== 'boolean') {
    throw new CorruptValueError('journal definition is not [settings..., counts..., byPriority, dropping]');
  }
  const byPriority: Record<number, number> = {};
  for (const pair of v[8] as unknown[]) {
    if (!Array.isArray(pair) || pair.length !== 2 || !isCount(pair[0]) || !isCount(pair[1])) throw new CorruptValueError('journal priority count is not [priority, count]');
    byPriority[pair[0]] = pair[1];
  }
  const [timeoutMs, maxTimeouts, priority, expiresInMs, maxItems, waiting, processing, flagged] = v as number[];
  return {
    settings: { timeoutMs: timeoutMs!, maxTimeouts: maxTimeouts!, priority: priority!, expiresInMs: expiresInMs!, maxItems: maxItems! },
    counts: { waiting: waiting!, processing: processing!, flagged: flagged!, byPriority },
    dropping: v[9] as boolean,
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
  if (i.user !== undefined) fields.push(i.failures, i.user, i.chargedBytes ?? 0);
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
    (v.length !== 11 && !(v.length === 12 && isCount(v[11]) && v[11] > 0) && !(v.length === 14 && isCount(v[11]) && typeof v[12] === 'string' && v[12].length > 0 && isCount(v[13]))) ||
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
  return v.length === 14 ? { ...item, user: v[12] as string, chargedBytes: v[13] as number } : item;
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
