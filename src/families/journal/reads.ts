// The journal's reads, from one snapshot of the db: flagged items, and the
// earliest process date of a journal's Waiting items (for waking claimers).
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { decodeSchedule, type Schedule } from './schedules.js';
import { afterHead, dueRange, expiredRange, flaggedKey, flaggedRange, itemKey, JournalBucket, journalRange, keyAfterDate, priorityRange, processAtIn, resultKey, withHead } from './keys.js';
import { decodeFlagged, decodeItem, decodeResult, type FlaggedItem, type JournalCounts, type JournalDefinition, type JournalItem, type KeptResult } from './records.js';
import { afterExpiry, isExpired } from './rules.js';

/** Expired items not yet deleted that a count looks at, at most (the leader deletes them 1000 an entry, every 250 ms). */
export const EXPIRED_COUNT_CAP = 10_000;

/**
 * The journal's counts with the items expired by `now` (the replicated clock) taken as absent,
 * as a claim takes them, before the leader's expiry pass has deleted them: each is what its
 * expiry leaves (nothing, or the version added while it was processed, Waiting). Looks at up to
 * EXPIRED_COUNT_CAP of them.
 */
export async function liveCounts(db: VeraDb, snapshot: DbSnapshot, name: string, definition: JournalDefinition, now: number): Promise<JournalCounts> {
  let { waiting, processing } = definition.counts;
  const byPriority: Record<number, number> = { ...definition.counts.byPriority };
  for await (const indexKey of db.keys({ ...expiredRange(name, now), snapshot, limit: EXPIRED_COUNT_CAP })) {
    const raw = await db.get(itemKey(name, keyAfterDate(indexKey, name, 0)), { snapshot });
    if (raw === undefined) continue;
    const item = decodeItem(raw);
    if (!isExpired(item.expiresAt, now)) continue;
    if (item.status === 'processing') processing--;
    else {
      waiting--;
      byPriority[item.priority] = (byPriority[item.priority] ?? 0) - 1;
    }
    const left = afterExpiry(item, now);
    if (left !== null) {
      waiting++;
      byPriority[left.priority] = (byPriority[left.priority] ?? 0) + 1;
    }
  }
  for (const p of Object.keys(byPriority)) if (byPriority[Number(p)]! <= 0) delete byPriority[Number(p)];
  return { waiting, processing, flagged: definition.counts.flagged, byPriority };
}

export async function readFlagged(db: VeraDb, snapshot: DbSnapshot, name: string, limit: number): Promise<FlaggedItem[]> {
  const out: FlaggedItem[] = [];
  for await (const value of db.values({ ...flaggedRange(name), snapshot, limit })) out.push(decodeFlagged(value));
  return out;
}

/** The smallest process date of a Waiting item (later than `after`, when given; one seek per priority that has some), or null when none waits. */
export async function earliestProcessAt(db: VeraDb, snapshot: DbSnapshot, name: string, definition: JournalDefinition, after?: number): Promise<number | null> {
  let earliest: number | null = null;
  for (const p of Object.keys(definition.counts.byPriority)) {
    const range = priorityRange(name, Number(p));
    if (after !== undefined) range.gte = dueRange(name, Number(p), after).lt;
    for await (const key of db.keys({ ...range, snapshot, limit: 1 })) {
      const date = processAtIn(key, name);
      if (earliest === null || date < earliest) earliest = date;
    }
  }
  return earliest;
}

/** Waiting items due by `now`, counted up to `cap` (expired ones not yet deleted included). */
export async function countDue(db: VeraDb, snapshot: DbSnapshot, name: string, definition: JournalDefinition, now: number, cap: number): Promise<number> {
  let n = 0;
  for (const p of Object.keys(definition.counts.byPriority)) {
    for await (const _ of db.keys({ ...dueRange(name, Number(p), now), snapshot, limit: cap - n })) n++;
    if (n >= cap) break;
  }
  return n;
}

/** What a journal holds for one key: its live item (expired ones count as absent), else its flagged copy. */
export async function readJob(db: VeraDb, snapshot: DbSnapshot, name: string, key: string, now: number): Promise<JournalItem | FlaggedItem | null> {
  const raw = await db.get(itemKey(name, key), { snapshot });
  if (raw !== undefined) {
    const item = decodeItem(raw);
    const live = isExpired(item.expiresAt, now) ? afterExpiry(item, now) : item;
    if (live !== null) return live;
  }
  const flagged = await db.get(flaggedKey(name, key), { snapshot });
  return flagged === undefined ? null : decodeFlagged(flagged);
}

/** A result kept for `key`, unless its time is up (the leader's duty deletes it soon). */
export async function readResult(db: VeraDb, snapshot: DbSnapshot, name: string, key: string, now: number): Promise<KeptResult | null> {
  const raw = await db.get(resultKey(name, key), { snapshot });
  if (raw === undefined) return null;
  const kept = decodeResult(raw);
  return kept.keptUntil <= now ? null : kept;
}

export type ItemStatus = 'waiting' | 'processing' | 'flagged';

/**
 * One page of a journal's items of one status, in the order of its index (Waiting: claim
 * order; Processing: by claim start; flagged: by key), after `after` (an index key's tail, a
 * previous page's `next`). Stops at `limit` index keys looked at or past `maxBytes` of records
 * (at least one item); `next` is null once the index is read to its end. Expired items are
 * left out, as a claim leaves them.
 */
export async function readPage(
  db: VeraDb,
  snapshot: DbSnapshot,
  name: string,
  status: ItemStatus,
  after: Buffer | null,
  limit: number,
  maxBytes: number,
  now: number,
): Promise<{ items: Array<JournalItem | FlaggedItem>; next: Buffer | null }> {
  const bucket = status === 'waiting' ? JournalBucket.waiting : status === 'processing' ? JournalBucket.processing : JournalBucket.flagged;
  const all = journalRange(bucket, name);
  const range = after === null ? { gte: all.gte, lt: all.lt } : { gt: withHead(bucket, name, after), lt: all.lt };
  const items: Array<JournalItem | FlaggedItem> = [];
  let bytes = 0;
  let looked = 0;
  let last: Buffer | null = null;
  for await (const [indexKey, value] of db.iterator({ ...range, snapshot, limit })) {
    looked++;
    let record: JournalItem | FlaggedItem | null;
    let size: number;
    if (status === 'flagged') {
      record = decodeFlagged(value);
      size = value.length;
    } else {
      const raw = await db.get(itemKey(name, keyAfterDate(indexKey, name, status === 'waiting' ? 1 : 0)), { snapshot });
      const item = raw === undefined ? null : decodeItem(raw);
      record = item === null || item.status !== status || isExpired(item.expiresAt, now) ? null : item;
      size = raw?.length ?? 0;
    }
    if (record !== null && items.length > 0 && bytes + size > maxBytes) return { items, next: last === null ? null : afterHead(bucket, name, last) };
    last = indexKey;
    if (record === null) continue;
    items.push(record);
    bytes += size;
  }
  return { items, next: looked < limit || last === null ? null : afterHead(bucket, name, last) };
}

/** A journal's schedules, by id (at most MAX_SCHEDULES_PER_JOURNAL). */
export async function readSchedules(db: VeraDb, snapshot: DbSnapshot, name: string): Promise<Schedule[]> {
  const out: Schedule[] = [];
  for await (const value of db.values({ ...journalRange(JournalBucket.schedule, name), snapshot })) out.push(decodeSchedule(value));
  return out;
}
