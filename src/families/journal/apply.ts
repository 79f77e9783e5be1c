// Planning the journal family's entries. Plans read the items they touch through
// ctx.reads (the db as planned so far), so journal entries share LevelDB batches;
// a drop reads the db itself and goes alone. `now` is the replicated clock, the
// same on every member, and the lease of a claim is its entry's index.
import type { ApplyError } from '../../statemachine/types.js';
import { failure, type BatchOp, type Plan, type PlanContext, type States } from '../family.js';
import { type AddedItem, type JournalCommand } from './commands.js';
import type { StorageLimits } from '../quota/index.js';
import { chargeUser, changeUser } from '../quota/index.js';
import { dueRange, expiredRange, journalRange, JournalBucket, keyAfterDate, definitionKey, limitsKey, priorityRange } from './keys.js';
import { decodeFlagged, decodeItem, encodeDefinition, encodeLimits, type FlaggedItem, type JournalDefinition, type JournalItem } from './records.js';
import { added, afterDone, afterExpiry, afterFailure, backToWaiting, isExpired, notBeforeInsertion, type Incoming } from './rules.js';
import { cluster } from '../cluster/index.js';
import { FAILURES_SINCE } from './index.js';
import type { DueFront, JournalState } from './state.js';
import type { PlanReads } from '../../statemachine/pending-reads.js';
import { JournalTx, type UsageChange } from './tx.js';

/** Expired items a claim deletes when it meets them, at most, per entry (the rest wait for the expiry duty). */
const EXPIRED_PER_CLAIM = 1000;
/** Keys one drop entry deletes, at most. */
export const DROP_BATCH = 5000;

/** What a claim hands a worker for each item. */
export interface ClaimedItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  readonly insertedAt: number;
  readonly timeouts: number;
  /** Failed processings so far, merges notwithstanding (0 before command version 9): a worker's backoff counts from it. */
  readonly failures: number;
}

export type JournalValue =
  | { readonly op: 'create' | 'configure' | 'drop' | 'extend' | 'requeue' | 'forget'; readonly journal: string }
  /** `flagged`: the release was the failure past the journal's maximum, and the item was flagged. */
  | { readonly op: 'release'; readonly journal: string; readonly key: string; readonly flagged: boolean }
  /** `requeued`: a version added while the item was processed is Waiting now; `next`: what a done that also claimed took. */
  | { readonly op: 'done'; readonly journal: string; readonly requeued: boolean; readonly next?: { readonly lease: number; readonly items: readonly ClaimedItem[] } }
  /** `lost`: keys whose lease was stale (nothing changed for them); `requeued`: versions added while processed, Waiting now. */
  | { readonly op: 'doneMany'; readonly journal: string; readonly done: number; readonly lost: readonly string[]; readonly requeued: number; readonly next?: { readonly lease: number; readonly items: readonly ClaimedItem[] } }
  | { readonly op: 'add'; readonly journal: string; readonly inserted: number; readonly merged: number; readonly deferred: number }
  | { readonly op: 'claim'; readonly journal: string; readonly lease: number; readonly items: readonly ClaimedItem[] }
  | { readonly op: 'timeout'; readonly journal: string; readonly requeued: readonly string[]; readonly flagged: readonly string[] }
  | { readonly op: 'expire'; readonly journal: string; readonly expired: number }
  | { readonly op: 'limits'; readonly maxJournals: number };

function success(value: JournalValue, ops: BatchOp[], after: Array<() => void>): Plan {
  return { result: { ok: true, op: 'family', family: 'journal', value }, ops, events: [], after };
}

export async function planJournal(c: JournalCommand, ctx: PlanContext, state: JournalState): Promise<Plan | ApplyError> {
  if (c.op === 'limits') {
    const limits = { maxJournals: c.maxJournals };
    return success({ op: 'limits', maxJournals: c.maxJournals }, [{ type: 'put', key: limitsKey(), value: encodeLimits(limits) }], [() => (state.limits = limits)]);
  }
  if (c.op === 'create') return create(c.name, c.settings, state);
  const existing = state.journals.get(c.name);
  if (existing === undefined) return failure('NOT_FOUND', `no journal ${c.name}`);
  if (c.op === 'drop') return drop(c.name, existing, ctx, state);
  if (existing.dropping) return failure('NOT_FOUND', `journal ${c.name} is being dropped`);
  const tx = new JournalTx(ctx.reads, state, c.name, existing);
  const commit = (value: JournalValue, definition = tx.definitionAfter()): Plan | ApplyError => {
    // What each user stores changes with the entry's items; only an add's own user is judged.
    const refused = settleUsage(ctx.states, tx.usageChanges(), c.op === 'add' && c.user !== undefined && c.userQuota !== undefined ? { user: c.user, limits: c.userQuota } : undefined);
    if (refused !== null) return refused;
    const ops = tx.ops(definition);
    const changes = [...tx.waitingChanges];
    const written = [...tx.itemsWritten];
    return success(value, ops, [
      () => {
        state.journals.set(c.name, definition);
        for (const [key, record] of written) state.recent.remember(c.name, key, record);
        // Fronts a claim read hold the index as it was before this entry; then this entry's changes.
        for (const [priority, front] of tx.frontsRead) state.setFront(c.name, priority, front);
        for (const w of changes) state.noteWaiting(c.name, w.priority, w.key, w.put);
      },
    ]);
  };
  const journal = c.name;
  // Failure accounting (index.ts, FAILURES_SINCE) from the replicated command version at this entry.
  const accounting = ctx.states.of(cluster).active >= FAILURES_SINCE;
  switch (c.op) {
    case 'configure':
      return commit({ op: 'configure', journal }, tx.definitionAfter({ settings: c.settings }));
    case 'add':
      return add(c.items, c.user, tx, ctx.now, accounting, commit);
    case 'claim':
      return commit({ op: 'claim', journal, lease: ctx.index, items: await claim(tx, c.max, c.maxBytes, ctx, state) });
    case 'extend':
    case 'done':
    case 'release': {
      const item = await tx.get(c.key);
      if (item === null || item.status !== 'processing' || item.lease !== c.lease) {
        return failure('CONFLICT', `${c.key} in ${journal} is not held by lease ${c.lease} (it timed out, was done or released, or was claimed again)`);
      }
      if (c.op === 'done') {
        const after = afterDone(item);
        tx.set(c.key, after);
        if (c.claim === undefined) return commit({ op: 'done', journal, requeued: after !== null });
        // The worker's next job in the same entry: claimed after the done, under this entry's lease.
        const items = await claim(tx, c.claim, c.claimBytes, ctx, state);
        return commit({ op: 'done', journal, requeued: after !== null, next: { lease: ctx.index, items } });
      }
      if (c.op === 'extend') {
        tx.set(c.key, { ...item, startedAt: ctx.now });
        return commit({ op: 'extend', journal });
      }
      const processAt = c.processAt === undefined ? item.processAt : accounting ? notBeforeInsertion(c.processAt, item.insertedAt) : c.processAt;
      const back = { ...item, processAt };
      if (!accounting || c.failure === false) {
        tx.set(c.key, backToWaiting(back));
        return commit({ op: 'release', journal, key: c.key, flagged: false });
      }
      const flagged = await endFailed(tx, c.key, back, ctx.now, true);
      return commit({ op: 'release', journal, key: c.key, flagged });
    }
    case 'doneMany': {
      const lost: string[] = [];
      let requeued = 0;
      for (const [key, lease] of c.items) {
        const item = await tx.get(key);
        if (item === null || item.status !== 'processing' || item.lease !== lease) {
          lost.push(key);
          continue;
        }
        const after = afterDone(item);
        tx.set(key, after);
        if (after !== null) requeued++;
      }
      const value = { op: 'doneMany', journal, done: c.items.length - lost.length, lost, requeued } as const;
      if (c.claim === undefined) return commit(value);
      return commit({ ...value, next: { lease: ctx.index, items: await claim(tx, c.claim, c.claimBytes, ctx, state) } });
    }
    case 'timeout':
      return commit(await timeout(c.claims, tx, ctx.now, accounting));
    case 'expire':
      return commit({ op: 'expire', journal, expired: await expire(tx, c.max, ctx) });
    case 'requeue': {
      const flagged = await tx.getFlagged(c.key);
      if (flagged === null) return failure('NOT_FOUND', `no flagged item ${c.key} in ${journal}`);
      if ((await tx.get(c.key)) !== null) return failure('CONFLICT', `${c.key} was added to ${journal} again since it was flagged; forget the flagged copy instead`);
      tx.set(c.key, { ...flagged.item, status: 'waiting', startedAt: 0, lease: 0, timeouts: 0, failures: 0, next: null, processAt: ctx.now });
      await tx.setFlagged(c.key, null);
      return commit({ op: 'requeue', journal });
    }
    case 'forget': {
      if ((await tx.getFlagged(c.key)) === null) return failure('NOT_FOUND', `no flagged item ${c.key} in ${journal}`);
      await tx.setFlagged(c.key, null);
      return commit({ op: 'forget', journal });
    }
  }
}

function create(name: string, settings: JournalDefinition['settings'], state: JournalState): Plan | ApplyError {
  const existing = state.journals.get(name);
  if (existing !== undefined) return failure('CONFLICT', existing.dropping ? `journal ${name} is still being dropped` : `journal ${name} exists`);
  // A lowered limit keeps the journals there are and refuses new ones until enough are dropped.
  const { maxJournals } = state.limits;
  if (state.journals.size >= maxJournals) return failure('QUOTA_EXCEEDED', `the cluster holds ${state.journals.size} journals and its limit is ${maxJournals} (journal.limits raises it)`);
  const definition: JournalDefinition = { settings, counts: { waiting: 0, processing: 0, flagged: 0, byPriority: {} }, dropping: false };
  return success({ op: 'create', journal: name }, [{ type: 'put', key: definitionKey(name), value: encodeDefinition(definition) }], [
    () => state.journals.set(name, definition),
  ]);
}

/**
 * The users' usage changes of an entry, into the quota family's ledger. `judged`: the add's
 * user and the leader's default limits; a growth of that user's usage is judged against its
 * limits (refused, charging no one, past them). Credits and other users' changes (a merge
 * takes an item over from the user who added it before) are never refused.
 */
function settleUsage(states: States, changes: ReadonlyMap<string, UsageChange>, judged: { readonly user: string; readonly limits: StorageLimits } | undefined): ApplyError | null {
  if (judged !== undefined) {
    const own = changes.get(judged.user);
    if (own !== undefined && (own.items > 0 || own.bytes > 0)) {
      const refused = chargeUser(states, judged.user, own.items, own.bytes, judged.limits);
      if (refused !== null) return refused;
    }
  }
  for (const [user, change] of changes) if (user !== judged?.user || (change.items <= 0 && change.bytes <= 0)) changeUser(states, user, change.items, change.bytes);
  return null;
}

async function add(items: readonly AddedItem[], user: string | undefined, tx: JournalTx, now: number, accounting: boolean, commit: (v: JournalValue) => Plan | ApplyError): Promise<Plan | ApplyError> {
  const { settings } = tx.definition;
  let inserted = 0;
  let merged = 0;
  let deferred = 0;
  for (const a of items) {
    let incoming: Incoming = {
      key: a.key,
      data: a.data,
      priority: a.priority ?? settings.priority,
      processAt: a.processAt ?? now,
      expiresAt: a.expiresAt ?? (settings.expiresInMs === 0 ? 0 : now + settings.expiresInMs),
    };
    let existing = await tx.get(a.key);
    if (existing !== null && isExpired(existing.expiresAt, now)) existing = afterExpiry(existing, now); // an expired item is as good as gone
    // Never before the insertion date (the item's, kept by a merge; now for a new key).
    if (accounting) incoming = { ...incoming, processAt: notBeforeInsertion(incoming.processAt, existing?.insertedAt ?? now) };
    if (existing === null) inserted++;
    else if (existing.status === 'waiting') merged++;
    else deferred++;
    tx.set(a.key, chargedTo(added(existing, incoming, now), user));
  }
  const counts = tx.counts();
  if (counts.waiting + counts.processing > settings.maxItems) {
    return failure('QUOTA_EXCEEDED', `journal ${tx.name} would hold ${counts.waiting + counts.processing} items, over its limit of ${settings.maxItems}`);
  }
  return commit({ op: 'add', journal: tx.name, inserted, merged, deferred });
}

/** The item charged to `user` (the add's), or to nobody when the add names none. */
function chargedTo(item: JournalItem, user: string | undefined): JournalItem {
  if (item.user === user) return item;
  if (user !== undefined) return { ...item, user };
  const { user: _user, chargedBytes: _bytes, ...rest } = item;
  return rest;
}

/**
 * Up to `max` Waiting, due, unexpired items in (priority, process date, key) order become
 * Processing under this entry's lease, stopping before their stored bytes pass `maxBytes`
 * (the reply must fit the serving member's budget; the first item is always taken).
 */
async function claim(tx: JournalTx, max: number, maxBytes: number | undefined, { reads, now, index }: PlanContext, state: JournalState): Promise<ClaimedItem[]> {
  const claimed: ClaimedItem[] = [];
  let claimedBytes = 0;
  let full = false;
  let expiredBudget = EXPIRED_PER_CLAIM;
  // The priorities with Waiting items as this entry has left them so far (a done may have put one back).
  const priorities = Object.keys(tx.counts().byPriority)
    .map(Number)
    .sort((a, b) => a - b);
  for (const priority of priorities) {
    if (claimed.length >= max || full) break;
    const due = dueRange(tx.name, priority, now);
    const all = priorityRange(tx.name, priority);
    // At most this many index keys are looked at in this priority: what is still wanted plus
    // the expired items a claim may clear on the way.
    const bound = max - claimed.length + expiredBudget;
    // The index's front in memory (state.ts), read from the db when there is none yet.
    let front = state.frontOf(tx.name, priority);
    if (front === undefined) {
      front = await readFront(reads, all.gte, all.lt, max - claimed.length);
      tx.frontsRead.set(priority, front);
    }
    let looked = 0;
    // Items this entry itself put back to Waiting (a done that claims next) are not in the front yet.
    const staged = tx.stagedWaitingKeys(priority);
    for (let i = 0, j = 0; claimed.length < max && looked < bound; ) {
      if (i === front.keys.length && front.end !== null && Buffer.compare(front.end, due.lt) < 0) {
        // Past what the front holds: more of the index may be due beyond it.
        const more = await readFront(reads, front.end, all.lt, max - claimed.length);
        front = { keys: front.keys.concat(more.keys), end: more.end };
        tx.frontsRead.set(priority, front);
      }
      const fromFront = i < front.keys.length ? front.keys[i]! : null;
      const fromEntry = j < staged.length ? staged[j]! : null;
      let indexKey: Buffer;
      if (fromFront !== null && (fromEntry === null || Buffer.compare(fromFront, fromEntry) <= 0)) {
        indexKey = fromFront;
        i++;
      } else if (fromEntry !== null) {
        indexKey = fromEntry;
        j++;
      } else {
        break;
      }
      if (Buffer.compare(indexKey, due.lt) >= 0) break; // in order: the rest are not due yet
      looked++;
      const key = keyAfterDate(indexKey, tx.name, 1);
      const item = await tx.get(key);
      if (item === null || item.status !== 'waiting' || !tx.indexKeysOf(key)[0]!.equals(indexKey)) continue;
      if (isExpired(item.expiresAt, now)) {
        if (expiredBudget === 0) continue;
        expiredBudget--;
        tx.set(key, afterExpiry(item, now));
        continue;
      }
      const bytes = tx.storedBytes(key);
      if (maxBytes !== undefined && claimed.length > 0 && claimedBytes + bytes > maxBytes) {
        full = true;
        break;
      }
      claimedBytes += bytes;
      tx.set(key, { ...item, status: 'processing', startedAt: now, lease: index });
      claimed.push({ key, data: item.data, priority: item.priority, processAt: item.processAt, insertedAt: item.insertedAt, timeouts: item.timeouts, failures: item.failures });
    }
  }
  return claimed;
}

/**
 * Index keys a front is read with at a time, at least, and at most: what the claim still
 * wants, within these (a claim of a thousand reads its front in one go, not four, and the
 * keys it takes leave the front as it takes them).
 */
const FRONT_KEYS = 256;
const MAX_FRONT_KEYS = 1024;

/** Live Waiting index keys from `from` (about `wanted`), and where what was read stops being complete. */
async function readFront(reads: PlanReads, from: Buffer, to: Buffer, wanted: number): Promise<DueFront> {
  const limit = Math.min(MAX_FRONT_KEYS, Math.max(FRONT_KEYS, wanted));
  const keys = await reads.keys({ gte: from, lt: to, limit });
  return { keys, end: keys.length < limit ? null : Buffer.concat([keys[keys.length - 1]!, ZERO]) };
}

const ZERO = Buffer.from([0]);

/** Claims the leader found past the journal's timeout: back to Waiting with one more timeout, or flagged past the maximum. */
async function timeout(claims: ReadonlyArray<readonly [string, number]>, tx: JournalTx, now: number, accounting: boolean): Promise<JournalValue> {
  const { timeoutMs } = tx.definition.settings;
  const requeued: string[] = [];
  const flagged: string[] = [];
  for (const [key, lease] of claims) {
    const item = await tx.get(key);
    // Extended, done or released since the leader looked: nothing to do.
    if (item === null || item.status !== 'processing' || item.lease !== lease || item.startedAt + timeoutMs > now) continue;
    if (await endFailed(tx, key, item, now, accounting)) flagged.push(key);
    else requeued.push(key);
  }
  return { op: 'timeout', journal: tx.name, requeued, flagged };
}

/**
 * A Processing item's processing failed (timed out, or released as a failure): back to
 * Waiting with its counters raised, or flagged (moved aside, with its history) once past the
 * journal's maximum; a version added meanwhile waits in its place. True when flagged.
 */
async function endFailed(tx: JournalTx, key: string, item: JournalItem, now: number, accounting: boolean): Promise<boolean> {
  const { item: failed, flag } = afterFailure(item, tx.definition.settings.maxTimeouts, accounting);
  if (!flag) {
    tx.set(key, backToWaiting(failed));
    return false;
  }
  const record: FlaggedItem = { item: { ...failed, next: null }, flaggedAt: now };
  await tx.setFlagged(key, record);
  tx.set(key, item.next === null ? null : backToWaiting(failed));
  return true;
}

/** Deletes up to `max` expired items through the expiration index. */
async function expire(tx: JournalTx, max: number, { reads, now }: PlanContext): Promise<number> {
  let expired = 0;
  for (const indexKey of await reads.keys({ ...expiredRange(tx.name, now), limit: max })) {
    const key = keyAfterDate(indexKey, tx.name, 0);
    const item = await tx.get(key);
    if (item === null || !isExpired(item.expiresAt, now)) continue;
    tx.set(key, afterExpiry(item, now));
    expired++;
  }
  return expired;
}

/** Deletes up to DROP_BATCH of the journal's keys; the definition goes with the last of them. */
async function drop(name: string, definition: JournalDefinition, { db, states }: PlanContext, state: JournalState): Promise<Plan> {
  const ops: BatchOp[] = [];
  for (const bucket of [JournalBucket.item, JournalBucket.waiting, JournalBucket.processing, JournalBucket.expiry, JournalBucket.flagged]) {
    const range = { ...journalRange(bucket, name), limit: DROP_BATCH - ops.length };
    if (bucket === JournalBucket.item || bucket === JournalBucket.flagged) {
      // Records, not just keys: each gives its user back what it was charged.
      for await (const [key, value] of db.iterator(range)) {
        ops.push({ type: 'del', key });
        const item = bucket === JournalBucket.item ? decodeItem(value) : decodeFlagged(value).item;
        if (item.user !== undefined) changeUser(states, item.user, -1, -(item.chargedBytes ?? 0));
      }
    } else {
      for await (const key of db.keys(range)) ops.push({ type: 'del', key });
    }
    if (ops.length >= DROP_BATCH) break;
  }
  const finished = ops.length < DROP_BATCH;
  const after: JournalDefinition = { ...definition, dropping: true };
  if (finished) ops.push({ type: 'del', key: definitionKey(name) });
  else ops.push({ type: 'put', key: definitionKey(name), value: encodeDefinition(after) });
  return success({ op: 'drop', journal: name }, ops, [
    () => {
      state.forgetFronts(name); // a drop deletes index keys behind the fronts' back
      state.recent.forgetJournal(name); // and its items
      if (!finished) return void state.journals.set(name, after);
      state.journals.delete(name);
    },
  ]);
}
