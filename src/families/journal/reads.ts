// The journal's reads, from one snapshot of the db: flagged items, and the
// earliest process date of a journal's Waiting items (for waking claimers).
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { dueRange, flaggedRange, priorityRange, processAtIn } from './keys.js';
import { decodeFlagged, type FlaggedItem, type JournalDefinition } from './records.js';

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
