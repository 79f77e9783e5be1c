// Node assignment's reads, each from one snapshot of the db: a user's records,
// purge candidates, and counting users as of a time.
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { AssignBucket, byNodeKey, byNodeRange, lookupKey, replacedBeforeRange, uidAtEnd, userKey, type PurgeCursor } from './keys.js';
import { decodeUids, decodeUser, type UserRecord } from './records.js';

/** A user's records: point reads, synchronous (each a LevelDB lookup in memory or cache, cheaper than a thread-pool trip). */
export function userRecords(db: VeraDb, snapshot: DbSnapshot, email: string, service: string): UserRecord[] {
  const list = db.getSync(lookupKey(email, service), { snapshot });
  if (list === undefined) return [];
  const out: UserRecord[] = [];
  for (const uid of decodeUids(list)) {
    const raw = db.getSync(userKey(uid), { snapshot });
    if (raw !== undefined) out.push(decodeUser(raw));
  }
  return out;
}

/** Up to `limit` records of `service` replaced before `before` (and after `after`), earliest replaced first. */
export async function replacedBefore(db: VeraDb, snapshot: DbSnapshot, service: string, before: number, limit: number, after?: PurgeCursor): Promise<UserRecord[]> {
  const out: UserRecord[] = [];
  for await (const key of db.keys({ ...replacedBeforeRange(service, before, after), snapshot, limit })) {
    const raw = db.getSync(userKey(uidAtEnd(key)), { snapshot });
    if (raw !== undefined) out.push(decodeUser(raw));
  }
  return out;
}

/** How many records of `service` were replaced before `before`, counting up to `limit` (keys only: no record is decoded). */
export async function countReplacedBefore(db: VeraDb, snapshot: DbSnapshot, service: string, before: number, limit: number): Promise<number> {
  let n = 0;
  for await (const _key of db.keys({ ...replacedBeforeRange(service, before), snapshot, limit })) n++;
  return n;
}

/**
 * Users of `service` assigned at time `at` (Tokenserver's count_users): records created
 * by then and not replaced by then. An email has at most one current record at any
 * moment (a key change replaces the old record in the entry that makes the new one),
 * so this counts emails; a decommissioned user is not counted from its decommission
 * until its next request moves it. One pass over the user records.
 */
export async function countUsers(db: VeraDb, snapshot: DbSnapshot, service: string, at: number): Promise<number> {
  let n = 0;
  for await (const raw of db.values({ ...bucketRange(AssignBucket.user), snapshot })) {
    const u = decodeUser(raw);
    if (u.service === service && u.createdAt <= at && (u.replacedAt === 0 || u.replacedAt > at)) n++;
  }
  return n;
}

/** Up to `limit` current records on one node, by uid, past `after`; and whether more follow. */
/** The uids of up to `limit` current records on the node, lowest first (keys only: no record is read). */
export async function currentUids(db: VeraDb, snapshot: DbSnapshot, service: string, node: string, limit: number): Promise<number[]> {
  return (await db.keys({ ...byNodeRange(service, node), snapshot, limit }).all()).map(uidAtEnd);
}

export async function usersOnNode(db: VeraDb, snapshot: DbSnapshot, service: string, node: string, limit: number, after = 0): Promise<{ users: UserRecord[]; more: boolean }> {
  const range = byNodeRange(service, node);
  const users: UserRecord[] = [];
  let more = false;
  for await (const key of db.keys({ gt: byNodeKey(service, node, after), lt: range.lt, snapshot, limit: limit + 1 })) {
    if (users.length === limit) {
      more = true;
      break;
    }
    const raw = db.getSync(userKey(uidAtEnd(key)), { snapshot });
    if (raw !== undefined) users.push(decodeUser(raw));
  }
  return { users, more };
}
