// Planning the journal family's entries. Plans read the items they touch through
// ctx.reads (the db as planned so far), so journal entries share LevelDB batches;
// a drop reads the db itself and goes alone. `now` is the replicated clock, the
// same on every member, and the lease of a claim is its entry's index.
import type { ApplyError } from '../../statemachine/types.js';
import { failure, type BatchOp, type Plan, type PlanContext, type States } from '../../statemachine/family.js';
import { type AddedItem, type JournalCommand } from './commands.js';
import type { StorageLimits } from '../../kit/index.js';
import { dueRange, expiredRange, journalRange, JournalBucket, keyAfterDate, definitionKey, limitsKey, priorityRange, resultsGoneRange } from './keys.js';
import { DEFAULT_KEEP_RESULTS_MS, decodeFlagged, decodeItem, encodeDefinition, encodeLimits, type FlaggedItem, type JournalDefinition, type JournalItem, type RetryPolicy } from './records.js';
import { added, afterDone, afterExpiry, afterFailure, backToWaiting, isExpired, notBeforeInsertion, retryDelay, type Incoming } from './rules.js';
import { MAX_DATE, type ClaimedItem as WireClaimedItem } from './wire.js';
import { settingsNeedV9 } from './commands.js';
import { cluster } from '../cluster/public.js';
import { FAILURES_SINCE } from './index.js';
import type { DueFront, JournalState } from './state.js';
import type { PlanReads } from '../../statemachine/pending-reads.js';
import { JournalTx, type UsageChange } from './tx.js';
import { clockOf, decodeSchedule, encodeSchedule, MAX_SCHEDULES_PER_JOURNAL, NONE_GRACE_MS, tickKey, type Schedule } from './schedules.js';
import { scheduleKey } from './keys.js';

/** Expired items a claim deletes when it meets them, at most, per entry (the rest wait for the expiry duty). */
const EXPIRED_PER_CLAIM = 1000;
/** Keys one drop entry deletes, at most. */
export const DROP_BATCH = 5000;
/**
 * How far past its entry's clock a claim's `dueBy` may reach, at most (a later one counts as
 * this far): a claim proposed a Raft round ahead of an item's date takes it, and its serving
 * member holds the reply until the date. Part of what every member applies: never change it.
 */
export const CLAIM_AHEAD_MAX_MS = 50;

/**
 * The date a claim takes items due by: the entry's clock, or the claim's `dueBy` when later
 * (bounded). From the entry alone; the replicated clock is not moved.
 */
function claimsThrough(now: number, dueBy: number | undefined): number {
  return dueBy === undefined ? now : Math.max(now, Math.min(dueBy, now + CLAIM_AHEAD_MAX_MS));
}

/** What a claim hands a worker for each item: the wire's, as this server always fills it in. */
export interface ClaimedItem extends WireClaimedItem {
  /** Failed processings so far, merges notwithstanding (0 before command version 9): a worker's backoff counts from it. */
  readonly failures: number;
  /** The item's own retry policy, when it has one (the server then chooses when a failure is retried). */
  readonly retry?: RetryPolicy;
}

/** Results one journal keeps, at most (and no more than its maxItems): past it, a done's result pushes out the oldest. */
export const MAX_RESULTS_PER_JOURNAL = 100_000;
/** What the holder of a cancelled item is told (the server adds `reason: cancelled`). */
export const CANCELLED = 'cancelled:';
/** The last error a timeout leaves on an item. */
export const TIMED_OUT = 'timed out: no done, release or extend within the journal timeout';

export type JournalValue =
  | { readonly op: 'create' | 'configure' | 'drop' | 'extend' | 'requeue' | 'forget'; readonly journal: string }
  | { readonly op: 'progress'; readonly journal: string; readonly key: string }
  /** `status`: what the removal did (a Waiting item is deleted, a Processing one cancelled). */
  | { readonly op: 'remove'; readonly journal: string; readonly key: string; readonly status: 'removed' | 'cancelled' }
  | { readonly op: 'pause'; readonly journal: string; readonly paused: boolean }
  /** `more`: the entry stopped at its maximum; Waiting items may be left. */
  | { readonly op: 'drain'; readonly journal: string; readonly removed: number; readonly more: boolean; readonly keys?: readonly string[] }
  | { readonly op: 'expireResults'; readonly journal: string; readonly expired: number }
  /** `flagged`: the release was the failure past the journal's maximum, and the item was flagged. */
  | { readonly op: 'release'; readonly journal: string; readonly key: string; readonly flagged: boolean; readonly failure?: boolean }
  /** `requeued`: a version added while the item was processed is Waiting now; `next`: what a done that also claimed took. */
  | { readonly op: 'done'; readonly journal: string; readonly key?: string; readonly requeued: boolean; readonly next?: { readonly lease: number; readonly items: readonly ClaimedItem[] } }
  /** `lost`: keys whose lease was stale (nothing changed for them); `requeued`: versions added while processed, Waiting now. */
  | { readonly op: 'doneMany'; readonly journal: string; readonly done: number; readonly lost: readonly string[]; readonly requeued: number; readonly keys?: readonly string[]; readonly next?: { readonly lease: number; readonly items: readonly ClaimedItem[] } }
  /** `keys`: the keys added, in order (for the lifecycle events). */
  | { readonly op: 'add'; readonly journal: string; readonly inserted: number; readonly merged: number; readonly deferred: number; readonly keys?: readonly string[] }
  | { readonly op: 'claim'; readonly journal: string; readonly lease: number; readonly items: readonly ClaimedItem[] }
  /** `ended`: cancelled items whose claim ended (deleted, or the version added since the cancel waits). */
  | { readonly op: 'timeout'; readonly journal: string; readonly requeued: readonly string[]; readonly flagged: readonly string[]; readonly ended?: readonly string[] }
  | { readonly op: 'expire'; readonly journal: string; readonly expired: number }
  | { readonly op: 'limits'; readonly maxJournals: number }
  | { readonly op: 'schedule'; readonly journal: string; readonly id: string; readonly replaced: boolean }
  | { readonly op: 'unschedule'; readonly journal: string; readonly id: string }
  /** `key`: the job this tick made (null: skipped, with `skipped` saying why). */
  | { readonly op: 'tick'; readonly journal: string; readonly id: string; readonly tick: number; readonly key: string | null; readonly skipped?: 'late' | 'full' };

function success(value: JournalValue, ops: BatchOp[], after: Array<() => void>): Plan {
  return { result: { ok: true, op: 'family', family: 'journal', value }, ops, events: [], after };
}

export async function planJournal(c: JournalCommand, ctx: PlanContext, state: JournalState): Promise<Plan | ApplyError> {
  if (c.op === 'limits') {
    const limits = { maxJournals: c.maxJournals };
    return success({ op: 'limits', maxJournals: c.maxJournals }, [{ type: 'put', key: limitsKey(), value: encodeLimits(limits) }], [() => (state.limits = limits)]);
  }
  // Settings of command version 9 need it active: before, members that do not know them may still apply the log.
  if ((c.op === 'create' || c.op === 'configure') && settingsNeedV9(c.settings) && ctx.states.of(cluster).active < FAILURES_SINCE) {
    return failure('BAD_REQUEST', 'retry, keepResultsMs and rateLimit need command version 9, which this cluster does not run yet');
  }
  if ((c.op === 'schedule' || c.op === 'unschedule' || c.op === 'tick') && ctx.states.of(cluster).active < FAILURES_SINCE) {
    return failure('BAD_REQUEST', 'schedules need command version 9, which this cluster does not run yet');
  }
  if (c.op === 'create') return create(c.name, c.settings, state);
  const existing = state.journals.get(c.name);
  if (existing === undefined) return failure('NOT_FOUND', `no journal ${c.name}`);
  if (c.op === 'drop') return drop(c.name, existing, ctx, state);
  if (existing.dropping) return failure('NOT_FOUND', `journal ${c.name} is being dropped`);
  const tx = new JournalTx(ctx.reads, state, c.name, existing);
  // A schedule's record, written beside the entry's item changes (schedule ops only).
  let scheduleWrite: { readonly id: string; readonly after: Schedule | null } | null = null;
  const commit = (value: JournalValue, definition = tx.definitionAfter()): Plan | ApplyError => {
    // What each user stores changes with the entry's items; only an add's own user is judged.
    const refused = settleUsage(ctx.states, tx.usageChanges(), c.op === 'add' && c.user !== undefined && c.userQuota !== undefined ? { user: c.user, limits: c.userQuota } : undefined);
    if (refused !== null) return refused;
    const ops = tx.ops(definition);
    const changes = [...tx.waitingChanges];
    const written = [...tx.itemsWritten];
    const sw = scheduleWrite;
    if (sw !== null) ops.push(sw.after === null ? { type: 'del', key: scheduleKey(c.name, sw.id) } : { type: 'put', key: scheduleKey(c.name, sw.id), value: encodeSchedule(sw.after) });
    return success(value, ops, [
      () => {
        if (sw !== null) {
          if (sw.after === null) state.deleteSchedule(c.name, sw.id);
          else state.setSchedule(c.name, clockOf(sw.after));
        }
        state.journals.set(c.name, definition);
        for (const [key, record, handle] of written) state.recent.remember(c.name, key, record, handle);
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
      return commit({ op: 'claim', journal, lease: ctx.index, items: await claim(tx, c.max, c.maxBytes, ctx, state, claimsThrough(ctx.now, c.dueBy)) });
    case 'extend':
    case 'done':
    case 'progress':
    case 'release': {
      const item = await tx.get(c.key);
      if (item === null || item.status !== 'processing' || item.lease !== c.lease) {
        return failure('CONFLICT', `${c.key} in ${journal} is not held by lease ${c.lease} (it timed out, was done or released, or was claimed again)`);
      }
      if (item.cancelled === true) return failure('CONFLICT', `${CANCELLED} ${c.key} in ${journal} was removed while lease ${c.lease} held it; stop working on it`);
      if (c.op === 'progress') {
        // A report of progress is also a sign of life: the claim's clock restarts.
        tx.set(c.key, { ...item, progress: c.progress, startedAt: ctx.now });
        return commit({ op: 'progress', journal, key: c.key });
      }
      if (c.op === 'done') {
        const after = afterDone(item);
        tx.set(c.key, after);
        if (c.result !== undefined) await keepResult(tx, c.key, c.result, ctx);
        if (c.claim === undefined) return commit({ op: 'done', journal, key: c.key, requeued: after !== null });
        // The worker's next job in the same entry: claimed after the done, under this entry's lease.
        const items = await claim(tx, c.claim, c.claimBytes, ctx, state, ctx.now);
        return commit({ op: 'done', journal, key: c.key, requeued: after !== null, next: { lease: ctx.index, items } });
      }
      if (c.op === 'extend') {
        tx.set(c.key, { ...item, startedAt: ctx.now });
        return commit({ op: 'extend', journal });
      }
      const processAt = c.processAt === undefined ? item.processAt : accounting ? notBeforeInsertion(c.processAt, item.insertedAt) : c.processAt;
      const back = { ...item, processAt, ...(c.error === undefined ? {} : { lastError: c.error }) };
      if (!accounting || c.failure === false) {
        tx.set(c.key, backToWaiting(back));
        return commit({ op: 'release', journal, key: c.key, flagged: false, failure: false });
      }
      // Without a date of its own, a failure is retried when the retry policy says.
      const flagged = await endFailed(tx, c.key, back, ctx.now, true, { retryAt: c.processAt === undefined, unrecoverable: c.unrecoverable === true });
      return commit({ op: 'release', journal, key: c.key, flagged, failure: true });
    }
    case 'doneMany': {
      const lost: string[] = [];
      const doneKeys: string[] = [];
      let requeued = 0;
      for (const [key, lease, result] of c.items) {
        const known = tx.known(key);
        const item = known !== undefined ? known : await tx.get(key);
        // A cancelled item is lost to its holder too: it was removed.
        if (item === null || item.status !== 'processing' || item.lease !== lease || item.cancelled === true) {
          lost.push(key);
          continue;
        }
        const after = afterDone(item);
        tx.set(key, after);
        if (result !== undefined) await keepResult(tx, key, result, ctx);
        doneKeys.push(key);
        if (after !== null) requeued++;
      }
      const value = { op: 'doneMany', journal, done: c.items.length - lost.length, lost, requeued, keys: doneKeys } as const;
      if (c.claim === undefined) return commit(value);
      return commit({ ...value, next: { lease: ctx.index, items: await claim(tx, c.claim, c.claimBytes, ctx, state, claimsThrough(ctx.now, c.dueBy)) } });
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
    case 'remove': {
      let item = await tx.get(c.key);
      if (item !== null && isExpired(item.expiresAt, ctx.now)) item = afterExpiry(item, ctx.now);
      if (item === null) return failure('NOT_FOUND', `no job ${c.key} in ${journal} (waiting or processing)`);
      if (item.status === 'waiting') {
        tx.set(c.key, null);
        return commit({ op: 'remove', journal, key: c.key, status: 'removed' });
      }
      // Its holder may be running it: cancelled, it stays Processing (the version added meanwhile
      // goes too) until its claim ends; the holder's next extend, progress, done or release is refused.
      tx.set(c.key, { ...item, cancelled: true, next: null });
      return commit({ op: 'remove', journal, key: c.key, status: 'cancelled' });
    }
    case 'schedule': {
      const before = await readSchedule(ctx, journal, c.schedule.id);
      if (before === null && (state.schedules.get(journal)?.size ?? 0) >= MAX_SCHEDULES_PER_JOURNAL) {
        return failure('QUOTA_EXCEEDED', `journal ${journal} has ${MAX_SCHEDULES_PER_JOURNAL} schedules, the most it may have`);
      }
      // Replacing keeps what the ticks did so far: a tick already made is not made again.
      const after: Schedule = { ...c.schedule, createdAt: before?.createdAt ?? ctx.now, lastTick: before?.lastTick ?? ctx.now, produced: before?.produced ?? 0, skipped: before?.skipped ?? 0 };
      scheduleWrite = { id: after.id, after };
      return commit({ op: 'schedule', journal, id: after.id, replaced: before !== null });
    }
    case 'unschedule': {
      if ((await readSchedule(ctx, journal, c.id)) === null) return failure('NOT_FOUND', `no schedule ${c.id} in ${journal}`);
      scheduleWrite = { id: c.id, after: null };
      return commit({ op: 'unschedule', journal, id: c.id });
    }
    case 'tick':
      return tick(c.id, c.tick, tx, ctx, accounting, commit, (after) => (scheduleWrite = { id: c.id, after }));
    case 'pause':
      tx.definitionChanges.paused = c.paused;
      return commit({ op: 'pause', journal, paused: c.paused });
    case 'drain': {
      const removedKeys: string[] = [];
      const keys = await ctx.reads.keys({ ...journalRange(JournalBucket.waiting, journal), limit: c.max });
      for (const indexKey of keys) {
        const key = keyAfterDate(indexKey, journal, 1);
        const item = await tx.get(key);
        if (item === null || item.status !== 'waiting') continue;
        tx.set(key, null);
        removedKeys.push(key);
      }
      return commit({ op: 'drain', journal, removed: removedKeys.length, more: keys.length === c.max, keys: removedKeys });
    }
    case 'expireResults': {
      let expired = 0;
      for (const indexKey of await ctx.reads.keys({ ...resultsGoneRange(journal, ctx.now), limit: c.max })) {
        const key = keyAfterDate(indexKey, journal, 0);
        const kept = await tx.getResult(key);
        if (kept === null || kept.keptUntil > ctx.now) continue;
        await tx.setResult(key, null);
        expired++;
      }
      return commit({ op: 'expireResults', journal, expired });
    }
  }
}

async function readSchedule({ reads }: PlanContext, journal: string, id: string): Promise<Schedule | null> {
  const raw = await reads.get(scheduleKey(journal, id));
  return raw === undefined ? null : decodeSchedule(raw);
}

/**
 * One tick of a schedule: a job keyed by the schedule and the tick, unless the tick is not
 * after the schedule's last (made already: refused, so a tick proposed twice makes one job),
 * or catchUp 'none' and the tick came more than NONE_GRACE_MS late (skipped), or the
 * journal is full (skipped). Either way the schedule's last tick moves to this one.
 */
async function tick(
  id: string,
  at: number,
  tx: JournalTx,
  ctx: PlanContext,
  accounting: boolean,
  commit: (v: JournalValue) => Plan | ApplyError,
  write: (after: Schedule) => void,
): Promise<Plan | ApplyError> {
  const journal = tx.name;
  const s = await readSchedule(ctx, journal, id);
  if (s === null) return failure('NOT_FOUND', `no schedule ${id} in ${journal}`);
  if (at <= s.lastTick) return failure('CONFLICT', `tick ${at} of schedule ${id} in ${journal} is not after its last tick ${s.lastTick} (made already)`);
  if (at > ctx.now) return failure('BAD_REQUEST', `tick ${at} of schedule ${id} is after the entry's time ${ctx.now}`);
  if ('everyMs' in s.timing && at % s.timing.everyMs !== 0) return failure('BAD_REQUEST', `tick ${at} is not a multiple of schedule ${id}'s everyMs ${s.timing.everyMs}`);
  const counts = tx.counts();
  const skipped = s.catchUp === 'none' && ctx.now - at > NONE_GRACE_MS ? 'late' : counts.waiting + counts.processing >= tx.definition.settings.maxItems ? 'full' : null;
  if (skipped !== null) {
    write({ ...s, lastTick: at, skipped: s.skipped + 1 });
    return commit({ op: 'tick', journal, id, tick: at, key: null, skipped });
  }
  write({ ...s, lastTick: at, produced: s.produced + 1 });
  const key = tickKey(id, at);
  const job: AddedItem = { key, data: s.job.data, ...(s.job.priority === undefined ? {} : { priority: s.job.priority }), ...(s.job.retry === undefined ? {} : { retry: s.job.retry }) };
  return add([job], undefined, tx, ctx.now, accounting, () => commit({ op: 'tick', journal, id, tick: at, key }));
}

/**
 * A done's result, kept for the journal's keepResultsMs (none when 0), replacing an older one
 * of the key. Past MAX_RESULTS_PER_JOURNAL the oldest kept go first.
 */
async function keepResult(tx: JournalTx, key: string, result: unknown, { now, reads }: PlanContext): Promise<void> {
  const keepMs = tx.definition.settings.keepResultsMs ?? DEFAULT_KEEP_RESULTS_MS;
  if (keepMs === 0) return;
  await tx.setResult(key, { result, doneAt: now, keptUntil: Math.min(MAX_DATE, now + keepMs) });
  const cap = Math.min(MAX_RESULTS_PER_JOURNAL, tx.definition.settings.maxItems);
  const excess = tx.resultCount() - cap;
  if (excess <= 0) return;
  for (const indexKey of await reads.keys({ ...resultsGoneRange(tx.name, MAX_DATE), limit: excess + 1 })) {
    const oldest = keyAfterDate(indexKey, tx.name, 0);
    if (oldest === key || (await tx.getResult(oldest)) === null) continue;
    await tx.setResult(oldest, null);
    if (tx.resultCount() <= cap) return;
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
      const refused = states.users.charge(judged.user, own.items, own.bytes, judged.limits);
      if (refused !== null) return refused;
    }
  }
  for (const [user, change] of changes) if (user !== judged?.user || (change.items <= 0 && change.bytes <= 0)) states.users.change(user, change.items, change.bytes);
  return null;
}

async function add(items: readonly AddedItem[], user: string | undefined, tx: JournalTx, now: number, accounting: boolean, commit: (v: JournalValue) => Plan | ApplyError): Promise<Plan | ApplyError> {
  const { settings } = tx.definition;
  let inserted = 0;
  let merged = 0;
  let deferred = 0;
  const keys: string[] = [];
  for (const a of items) {
    let incoming: Incoming = {
      key: a.key,
      data: a.data,
      priority: a.priority ?? settings.priority,
      processAt: a.processAt ?? now,
      expiresAt: a.expiresAt ?? (settings.expiresInMs === 0 ? 0 : now + settings.expiresInMs),
      ...(a.retry === undefined ? {} : { retry: a.retry }),
    };
    const known = tx.known(a.key);
    let existing = known !== undefined ? known : await tx.get(a.key);
    if (existing !== null && isExpired(existing.expiresAt, now)) existing = afterExpiry(existing, now); // an expired item is as good as gone
    // Never before the insertion date (the item's, kept by a merge; now for a new key).
    if (accounting) incoming = { ...incoming, processAt: notBeforeInsertion(incoming.processAt, existing?.insertedAt ?? now) };
    if (existing === null) inserted++;
    else if (existing.status === 'waiting') merged++;
    else deferred++;
    tx.set(a.key, chargedTo(added(existing, incoming, now), user));
    keys.push(a.key);
  }
  const counts = tx.counts();
  if (counts.waiting + counts.processing > settings.maxItems) {
    return failure('QUOTA_EXCEEDED', `journal ${tx.name} would hold ${counts.waiting + counts.processing} items, over its limit of ${settings.maxItems}`);
  }
  return commit({ op: 'add', journal: tx.name, inserted, merged, deferred, keys });
}

/** The item charged to `user` (the add's), or to nobody when the add names none. */
function chargedTo(item: JournalItem, user: string | undefined): JournalItem {
  if (item.user === user) return item;
  if (user !== undefined) return { ...item, user };
  const { user: _user, chargedBytes: _bytes, ...rest } = item;
  return rest;
}

/**
 * Up to `max` Waiting, unexpired items due by `through` (the entry's clock, or a claim's
 * `dueBy`: claimsThrough) in (priority, process date, key) order become Processing under
 * this entry's lease, stopping before their stored bytes pass `maxBytes` (the reply must fit
 * the serving member's budget; the first item is always taken). Expiry, the lease's start and
 * the rate limit's window go by the entry's clock.
 */
async function claim(tx: JournalTx, wanted: number, maxBytes: number | undefined, { reads, now, index }: PlanContext, state: JournalState, through: number): Promise<ClaimedItem[]> {
  const claimed: ClaimedItem[] = [];
  // The definition as this entry has left it so far (not definitionAfter: its counts walk every staged item).
  const d = { ...tx.definition, ...tx.definitionChanges };
  if (d.paused === true) return claimed;
  // The rate limit's window, aligned on the replicated clock (the same on every member, and
  // kept in the definition, so a new leader goes on counting where the old one stopped).
  const rate = d.settings.rateLimit;
  const windowStart = rate === undefined ? 0 : now - (now % rate.windowMs);
  const inWindow = rate === undefined || d.window === undefined || d.window.start !== windowStart ? 0 : d.window.claimed;
  const max = rate === undefined ? wanted : Math.min(wanted, rate.max - inWindow);
  if (max <= 0) return claimed;
  let claimedBytes = 0;
  let full = false;
  let expiredBudget = EXPIRED_PER_CLAIM;
  // The priorities with Waiting items as this entry has left them so far (a done may have put one back).
  const priorities = Object.keys(tx.counts().byPriority)
    .map(Number)
    .sort((a, b) => a - b);
  for (const priority of priorities) {
    if (claimed.length >= max || full) break;
    const due = dueRange(tx.name, priority, through);
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
      const known = tx.known(key);
      const item = known !== undefined ? known : await tx.get(key);
      if (item === null || item.status !== 'waiting' || !tx.indexKeysOf(key)[0]!.equals(indexKey)) continue;
      if (isExpired(item.expiresAt, now)) {
        if (expiredBudget === 0) continue;
        expiredBudget--;
        tx.set(key, afterExpiry(item, now));
        continue;
      }
      // Taken ahead of its date (dueBy), it reaches the worker at the date: not if it expires by then.
      if (item.processAt > now && isExpired(item.expiresAt, item.processAt)) continue;
      const bytes = tx.storedBytes(key);
      if (maxBytes !== undefined && claimed.length > 0 && claimedBytes + bytes > maxBytes) {
        full = true;
        break;
      }
      claimedBytes += bytes;
      // One spread (V8 clones the item's shape); the old progress, if any, is cleared after.
      const taken: { -readonly [K in keyof JournalItem]: JournalItem[K] } = { ...item, status: 'processing', startedAt: now, lease: index };
      if (taken.progress !== undefined) taken.progress = undefined;
      tx.set(key, taken);
      const c: ClaimedItem = { key, data: item.data, priority: item.priority, processAt: item.processAt, insertedAt: item.insertedAt, timeouts: item.timeouts, failures: item.failures };
      claimed.push(item.retry === undefined ? c : { ...c, retry: item.retry });
    }
  }
  if (rate !== undefined && claimed.length > 0) tx.definitionChanges.window = { start: windowStart, claimed: inWindow + claimed.length };
  return claimed;
}

/**
 * Index keys a front is read with at a time, at least, and at most: twice what the claim still
 * wants, within these (a claim of a thousand reads its front in one go, not four, and the
 * keys it takes leave the front as it takes them).
 */
const FRONT_KEYS = 256;
const MAX_FRONT_KEYS = 2048;

/**
 * Live Waiting index keys from `from` (about twice `wanted`: a busy worker's next claim finds
 * them in memory too, and a read's fixed costs, an iterator and a pass over the batch's unwritten
 * ops, are paid half as often), and where what was read stops being complete.
 */
async function readFront(reads: PlanReads, from: Buffer, to: Buffer, wanted: number): Promise<DueFront> {
  const limit = Math.min(MAX_FRONT_KEYS, Math.max(FRONT_KEYS, 2 * wanted));
  const keys = await reads.keys({ gte: from, lt: to, limit });
  return { keys, end: keys.length < limit ? null : Buffer.concat([keys[keys.length - 1]!, ZERO]) };
}

const ZERO = Buffer.from([0]);

/** Claims the leader found past the journal's timeout: back to Waiting with one more timeout, or flagged past the maximum. */
async function timeout(claims: ReadonlyArray<readonly [string, number]>, tx: JournalTx, now: number, accounting: boolean): Promise<JournalValue> {
  const { timeoutMs } = tx.definition.settings;
  const requeued: string[] = [];
  const flagged: string[] = [];
  const ended: string[] = [];
  for (const [key, lease] of claims) {
    const item = await tx.get(key);
    // Extended, done or released since the leader looked: nothing to do.
    if (item === null || item.status !== 'processing' || item.lease !== lease || item.startedAt + timeoutMs > now) continue;
    if (item.cancelled === true) {
      // Removed while held: its claim is over, and with it the item (a version added since waits).
      const { cancelled: _c, ...rest } = item;
      tx.set(key, afterDone(rest));
      ended.push(key);
      continue;
    }
    if (await endFailed(tx, key, accounting ? { ...item, lastError: TIMED_OUT } : item, now, accounting, { retryAt: true, unrecoverable: false })) flagged.push(key);
    else requeued.push(key);
  }
  return ended.length === 0 ? { op: 'timeout', journal: tx.name, requeued, flagged } : { op: 'timeout', journal: tx.name, requeued, flagged, ended };
}

/**
 * A Processing item's processing failed (timed out, or released as a failure): back to
 * Waiting with its counters raised, or flagged (moved aside, with its history) once past the
 * journal's maximum; a version added meanwhile waits in its place. True when flagged.
 */
async function endFailed(tx: JournalTx, key: string, item: JournalItem, now: number, accounting: boolean, how: { readonly retryAt: boolean; readonly unrecoverable: boolean }): Promise<boolean> {
  // Retry policies and unrecoverable failures came with command version 9 (accounting).
  const policy = accounting ? (item.retry ?? tx.definition.settings.retry) : undefined;
  const { item: failed, flag } = afterFailure(item, tx.definition.settings.maxTimeouts, accounting, policy);
  if (!flag && !how.unrecoverable) {
    const retryAt = policy !== undefined && how.retryAt ? Math.max(failed.processAt, now + retryDelay(policy, key, failed.failures)) : failed.processAt;
    tx.set(key, backToWaiting({ ...failed, processAt: retryAt }));
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
  for (const bucket of [JournalBucket.item, JournalBucket.waiting, JournalBucket.processing, JournalBucket.expiry, JournalBucket.flagged, JournalBucket.result, JournalBucket.resultExpiry, JournalBucket.schedule]) {
    const range = { ...journalRange(bucket, name), limit: DROP_BATCH - ops.length };
    if (bucket === JournalBucket.item || bucket === JournalBucket.flagged) {
      // Records, not just keys: each gives its user back what it was charged.
      for await (const [key, value] of db.iterator(range)) {
        ops.push({ type: 'del', key });
        const item = bucket === JournalBucket.item ? decodeItem(value) : decodeFlagged(value).item;
        if (item.user !== undefined) states.users.change(item.user, -1, -(item.chargedBytes ?? 0));
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
      state.schedules.delete(name); // and its schedules (their keys go with this batch or an earlier one)
      if (!finished) return void state.journals.set(name, after);
      state.journals.delete(name);
    },
  ]);
}
