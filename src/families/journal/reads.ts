// The journal's reads, from one snapshot of the db: flagged items, and the
// earliest process date of a journal's Waiting items (for waking claimers).
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { dueRange, expiredRange, flaggedRange, itemKey, keyAfterDate, priorityRange, processAtIn } from './keys.js';
import { decodeFlagged, decodeItem, type FlaggedItem, type JournalCounts, type JournalDefinition } from './records.js';
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

/** The smallest process date of a Waiting item (one seek per priority that has some), or null when none waits. */
export async function earliestProcessAt(db: VeraDb, snapshot: DbSnapshot, name: string, definition: JournalDefinition): Promise<number | null> {
  let earliest: number | null = null;
  for (const p of Object.keys(definition.counts.byPriority)) {
    for await (const key of db.keys({ ...priorityRange(name, Number(p)), snapshot, limit: 1 })) {
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
