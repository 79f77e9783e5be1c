// The journal on the server: its client ops (wire.ts checks them), the leader's
// duties (timeouts, expiry, finishing drops) and waking claimers that wait.
import { VeraError, typedRequest, type FamilyRequest, type FamilyResult, type RequestOfSchema } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import { expectOk } from '../../server/front/context.js';
import { familyOps, proposeTimed, type FamilyHttpRoute, type FamilyOpCall, type LeaderDuty, type ServerPart } from '../../server/front/family-part.js';
import type { Need } from '../../server/guard/access.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import type { JournalValue } from './apply.js';
import type { AddedItem, DoneItem, JournalCommand } from './commands.js';
import { journal } from './index.js';
import { expiredRange, startedByRange, keyAfterDate, itemKey } from './keys.js';
import { countDue, earliestProcessAt, liveCounts, readFlagged, readJob, readPage, readResult, readSchedules } from './reads.js';
import { latestTick, nextTick, type Schedule, type ScheduleClock, type ScheduleSpec } from './schedules.js';
import { parseCron, timeZoneProblem } from './cron.js';
import { decodeItem, type RetryPolicy, type FlaggedItem, type JournalDefinition, type JournalItem, type JournalSettings } from './records.js';
import { CANCELLED } from './apply.js';
import { resultsGoneRange } from './keys.js';
import { lifecycleEvents, type LifecycleEvent } from './lifecycle.js';
import { JournalWaiters, type ClaimTicket } from './waiters.js';
import { JournalMember } from './member.js';
import { HeldAcks, splitResult, type HeldAck } from './held-acks.js';
import { CANCEL_WAIT_OP, CLAIM_OP, JOURNAL_OPS, TYPED_OPS } from './wire.js';
import { cluster } from '../cluster/index.js';
import { FAILURES_SINCE } from './index.js';
import { userQuotaField } from '../quota/propose.js';

export const DEFAULT_SETTINGS: JournalSettings = { timeoutMs: 30_000, maxTimeouts: 5, priority: 100, expiresInMs: 0, maxItems: 10_000_000 };
/** Timed-out claims or expired items one duty entry handles, at most. */
const DUTY_BATCH = 1000;

const members = new WeakMap<FrontEnd, JournalMember>();
/** The journal's state on the member `fe` serves (member.ts). */
function member(fe: FrontEnd): JournalMember {
  let m = members.get(fe);
  if (m === undefined) {
    // Sent alone: each held request is answered with the outcome, failure included; nothing else waits on it.
    m = new JournalMember(
      new JournalWaiters(fe),
      new HeldAcks((name, requests) => void proposeHeld(fe, name, requests, undefined).catch(() => undefined)),
      // The newest entry reported applied (its hooks run), not the newest the state machine's db
      // holds: a batch is reported as it goes to LevelDB, so the db's index trails the hooks.
      () => fe.node.appliedIndex,
    );
    members.set(fe, m);
  }
  return m;
}

/**
 * One doneMany entry for held acknowledgements, claiming `claim` items too when a waiting
 * claim carries them; each held request is answered with its part. Resolves with the
 * entry's result (or rejects as the proposal did, after answering the held requests so).
 */
async function proposeHeld(fe: FrontEnd, name: string, requests: readonly HeldAck[], claim: number | undefined): Promise<JournalValue & { op: 'doneMany' }> {
  // At most MAX_CLAIM_ITEMS keys of at most MAX_KEY_BYTES each (take): the entry is no larger than one doneMany's.
  const items: Array<readonly [string, number]> = [];
  for (const r of requests) for (const item of r.items) items.push(item);
  try {
    const value = await proposeDoneMany(fe, name, items, claim);
    const parts = splitResult(requests, value.lost);
    requests.forEach((r, i) => r.resolve(parts[i]!));
    return value;
  } catch (err) {
    for (const r of requests) r.reject(err);
    throw err;
  }
}

async function proposeDoneMany(fe: FrontEnd, name: string, items: readonly DoneItem[], claim: number | undefined): Promise<JournalValue & { op: 'doneMany' }> {
  const value = await propose(fe, { op: 'doneMany', name, items, ...(claim === undefined ? {} : { claim, claimBytes: fe.limits.replyBytes }) });
  if (value.op !== 'doneMany') throw new VeraError('INTERNAL', 'doneMany gave another result');
  return value;
}

async function propose(fe: FrontEnd, command: JournalCommand): Promise<JournalValue> {
  const outcome = await proposeTimed(fe, { family: 'journal', ...command });
  // A removed job's holder is told so in a way a program can test: CONFLICT with reason cancelled.
  if (!outcome.result.ok && outcome.result.code === 'CONFLICT' && outcome.result.message.startsWith(CANCELLED)) {
    throw new VeraError('CONFLICT', outcome.result.message, { reason: 'cancelled' });
  }
  const r = expectOk(outcome);
  if (r.op !== 'family' || r.family !== 'journal') throw new VeraError('INTERNAL', `journal ${command.op} applied as ${r.op}`);
  return r.value as JournalValue;
}

function definitionOf(fe: FrontEnd, name: string): JournalDefinition {
  const d = fe.node.stateMachine.stateOf(journal).live(name);
  if (d === null) throw new VeraError('NOT_FOUND', `no journal ${name}`);
  return d;
}

/** A journal's settings and counts; expired items count as absent though not deleted yet (reads.ts). */
async function describeJournal(fe: FrontEnd, name: string, d: JournalDefinition): Promise<FamilyResult> {
  const { waiting, processing, flagged, byPriority } = await countsNow(fe, name, d);
  const settings: Record<string, unknown> = { ...d.settings };
  for (const k of ['retry', 'rateLimit'] as const) if (d.settings[k] !== undefined) settings[k] = { ...d.settings[k] };
  return { name, settings: settings as FamilyResult, counts: { waiting, processing, flagged, byPriority: { ...byPriority }, results: d.results ?? 0 }, paused: d.paused === true };
}

function countsNow(fe: FrontEnd, name: string, d: JournalDefinition): Promise<JournalDefinition['counts']> {
  if (d.counts.waiting + d.counts.processing === 0) return Promise.resolve(d.counts);
  const now = fe.node.stateMachine.clock;
  return fe.node.stateMachine.read(`journal ${name}`, (db, snapshot) => liveCounts(db, snapshot, name, d, now));
}

/** `base` with the request's settings: a value sets one, null clears one of command version 9's (retry, keepResultsMs, rateLimit). */
function settingsFrom(base: JournalSettings, r: Readonly<Record<string, unknown>>): JournalSettings {
  const out: Record<string, unknown> = { ...base };
  for (const k of ['timeoutMs', 'maxTimeouts', 'priority', 'expiresInMs', 'maxItems', 'retry', 'keepResultsMs', 'rateLimit'] as const) {
    if (r[k] === null) delete out[k];
    else if (r[k] !== undefined) out[k] = r[k];
  }
  return out as unknown as JournalSettings;
}

/** Refuses what needs command version 9 (nested in a request, where the proposal gate does not look) before it runs. */
function requireV9(fe: FrontEnd, what: string): void {
  if (fe.node.stateMachine.stateOf(cluster).active < FAILURES_SINCE) throw new VeraError('BAD_REQUEST', `${what} needs command version 9, which this cluster does not run yet`);
}

/** One job as the inspect ops show it (journal.get, journal.items). */
function jobView(record: JournalItem | FlaggedItem, timeoutMs: number): FamilyResult {
  const flagged = 'flaggedAt' in record;
  const item = flagged ? record.item : record;
  return {
    key: item.key,
    status: flagged ? 'flagged' : item.cancelled === true ? 'cancelled' : item.status,
    data: item.data,
    priority: item.priority,
    processAt: item.processAt,
    insertedAt: item.insertedAt,
    expiresAt: item.expiresAt,
    timeouts: item.timeouts,
    failures: item.failures,
    ...(item.lastError === undefined ? {} : { lastError: item.lastError }),
    ...(item.retry === undefined ? {} : { retry: { ...item.retry } }),
    ...(flagged ? { flaggedAt: record.flaggedAt } : {}),
    ...(!flagged && item.status === 'processing' ? { lease: item.lease, startedAt: item.startedAt, leaseExpiresAt: item.startedAt + timeoutMs } : {}),
    ...(item.progress === undefined ? {} : { progress: item.progress }),
    ...(item.next === null ? {} : { next: { data: item.next.data, priority: item.next.priority, processAt: item.next.processAt, expiresAt: item.next.expiresAt } }),
  };
}

/** One schedule as journal.schedules shows it, with the tick it will make next. */
function scheduleView(s: Schedule): FamilyResult {
  const t = s.timing;
  return {
    schedule: s.id,
    ...('everyMs' in t ? { everyMs: t.everyMs } : { cron: t.cron, tz: t.tz }),
    catchUp: s.catchUp,
    data: s.job.data as FamilyResult[string],
    ...(s.job.priority === undefined ? {} : { priority: s.job.priority }),
    ...(s.job.retry === undefined ? {} : { retry: { ...s.job.retry } }),
    createdAt: s.createdAt,
    lastTick: s.lastTick,
    nextTick: nextTick(t, s.lastTick),
    produced: s.produced,
    skipped: s.skipped,
  };
}

/**
 * A claim: proposed at once when work may be due, else waiting here until woken (an item
 * became available, the earliest process date came, the deadline) or called off by its
 * session, which answers it with no items and no entry (lease 0).
 */
async function claimFor(fe: FrontEnd, r: RequestOfSchema<typeof CLAIM_OP>, ticket: ClaimTicket | undefined): Promise<FamilyResult> {
  const { name, max } = r;
  const deadline = performance.now() + r.waitMs;
  const state = fe.node.stateMachine.stateOf(journal);
  for (let first = true; ; first = false) {
    if (ticket?.cancelled === true) return { lease: 0, items: [] };
    // Paused, or the rate limit's window is full: wait (without an entry) until that ends, or the deadline.
    const clock = Math.max(fe.node.stateMachine.clock, Date.now());
    const blockedUntil = state.claimsBlockedUntil(name, clock);
    if (blockedUntil !== null && performance.now() < deadline) {
      await member(fe).waiters.wait(name, Math.min(deadline, performance.now() + (blockedUntil - clock)), ticket);
      continue;
    }
    // A claim that will wait anyway proposes nothing until woken: what this member has
    // applied says nothing is due yet, and anything applied later wakes it. The last
    // try, at the deadline, always proposes (its reply carries a lease).
    // Nor does one whose items the claims in flight here will take (waiters.ts): it waits for the next date past theirs.
    const now = Math.max(fe.node.stateMachine.clock, Date.now());
    const idle = first && performance.now() < deadline && (state.nothingDue(name, now) || member(fe).waiters.covered(name, now));
    if (!idle) {
      // The items must fit one reply: the entry carries this member's budget, so every member claims the same.
      // Acknowledgements held for this journal ride in the same entry (held-acks.ts).
      const held = member(fe).held.take(name);
      const claiming = member(fe).waiters.claiming(name, max);
      const claimed = await (
        held.length === 0
          ? propose(fe, { op: 'claim', name, max, maxBytes: fe.limits.replyBytes }).then((v) => (v.op === 'claim' ? { lease: v.lease, items: v.items } : undefined))
          : proposeHeld(fe, name, held, max).then((v) => v.next)
      ).finally(claiming);
      if (claimed === undefined) throw new VeraError('INTERNAL', 'claim gave another result');
      if (claimed.items.length > 0 || performance.now() >= deadline) return { lease: claimed.lease, items: claimed.items };
    }
    await member(fe).waiters.wait(name, deadline, ticket, max);
  }
}

type Handler = (call: FamilyOpCall) => Promise<FamilyResult>;

const handlers: Record<string, Handler> = {
  'journal.create': async ({ fe, request: r }) => {
    await propose(fe, { op: 'create', name: r.name as string, settings: settingsFrom(DEFAULT_SETTINGS, r) });
    return {};
  },
  'journal.configure': async ({ fe, request: r }) => {
    const current = definitionOf(fe, r.name as string);
    await propose(fe, { op: 'configure', name: r.name as string, settings: settingsFrom(current.settings, r) });
    return {};
  },
  'journal.drop': async ({ fe, request }) => {
    await propose(fe, { op: 'drop', name: typedRequest(TYPED_OPS.drop, request).name });
    return {};
  },
  'journal.list': async ({ fe }) => {
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const all = [...fe.node.stateMachine.stateOf(journal).journals].filter(([, d]) => !d.dropping).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return { journals: await Promise.all(all.map(([name, d]) => describeJournal(fe, name, d))) };
  },
  'journal.show': async ({ fe, request }) => {
    const { name } = typedRequest(TYPED_OPS.show, request);
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    return describeJournal(fe, name, definitionOf(fe, name));
  },
  'journal.add': async ({ fe, request: r, frameBytes, principal }) => {
    fe.disk.admit(frameBytes);
    // The caller's user is charged for the items, judged in apply (once every member applies that).
    const { userQuota } = userQuotaField(fe);
    const charge = principal === null || userQuota === undefined ? {} : { user: principal, userQuota };
    if ((r.items as AddedItem[]).some((i) => i.retry !== undefined)) requireV9(fe, 'an item retry policy');
    const value = await propose(fe, { op: 'add', name: r.name as string, items: r.items as AddedItem[], ...charge });
    if (value.op !== 'add') throw new VeraError('INTERNAL', 'add gave another result');
    return { inserted: value.inserted, merged: value.merged, deferred: value.deferred };
  },
  'journal.claim': async ({ fe, request, session }) => {
    const r = typedRequest(CLAIM_OP, request);
    // Only a session can call its claim off (journal.cancelWait); an HTTP call has none.
    const ticket = session === '' ? undefined : member(fe).waiters.begin(r.name, session);
    try {
      return await claimFor(fe, r, ticket);
    } finally {
      if (ticket !== undefined) member(fe).waiters.finish(ticket);
    }
  },
  'journal.cancelWait': async ({ fe, request, session }) => {
    const { name } = typedRequest(CANCEL_WAIT_OP, request);
    definitionOf(fe, name);
    return { cancelled: session === '' ? 0 : member(fe).waiters.cancel(name, session) };
  },
  'journal.extend': async ({ fe, request }) => {
    const { name, key, lease } = typedRequest(TYPED_OPS.extend, request);
    await propose(fe, { op: 'extend', name, key, lease });
    return {};
  },
  'journal.done': async ({ fe, request }) => {
    const r = typedRequest(TYPED_OPS.done, request);
    const { claim } = r;
    const value = await propose(fe, {
      op: 'done',
      name: r.name,
      key: r.key,
      lease: r.lease,
      ...(claim === undefined ? {} : { claim, claimBytes: fe.limits.replyBytes }),
      ...(r.result === undefined || fe.node.stateMachine.stateOf(cluster).active < FAILURES_SINCE ? {} : { result: r.result }),
    });
    if (value.op !== 'done') throw new VeraError('INTERNAL', 'done gave another result');
    // With `claim`, the reply is a claim's: the worker's next items, under the done's entry.
    return value.next === undefined ? {} : { lease: value.next.lease, items: value.next.items };
  },
  'journal.doneMany': async ({ fe, request }) => {
    const { name, claim, holdMs, items: asked } = typedRequest(TYPED_OPS.doneMany, request);
    // Before version 9 no result is kept, and the items are done all the same (a worker must not be stuck on its acknowledgements).
    const v9 = fe.node.stateMachine.stateOf(cluster).active >= FAILURES_SINCE;
    const requested = asked.map((i) => (v9 || i.result === undefined ? i : { key: i.key, lease: i.lease }));
    const withResults = requested.some((i) => i.result !== undefined);
    const items = requested.map((i) => (i.result === undefined ? ([i.key, i.lease] as const) : ([i.key, i.lease, i.result] as const)));
    // Held only while a claim of this journal waits or is being proposed here: the entry of the
    // next claim of this journal carries them. Items with results go at once.
    if (holdMs !== undefined && claim === undefined && !withResults && member(fe).waiters.expectsClaim(name) && member(fe).held.hasRoom(name, items.length)) {
      const { done, lost } = await member(fe).held.hold(name, items as Array<readonly [string, number]>, holdMs);
      return { done, lost: [...lost] };
    }
    const value = await proposeDoneMany(fe, name, items, claim);
    const next = value.next === undefined ? {} : { lease: value.next.lease, items: value.next.items };
    return { done: value.done, lost: [...value.lost], ...next };
  },
  'journal.release': async ({ fe, request }) => {
    const r = typedRequest(TYPED_OPS.release, request);
    const { processAt } = r;
    // Before command version 9 no release counts as a failure, so there is nothing to say.
    const v9 = fe.node.stateMachine.stateOf(cluster).active >= FAILURES_SINCE;
    const notFailure = r.failure === false && v9;
    const value = await propose(fe, {
      op: 'release',
      name: r.name,
      key: r.key,
      lease: r.lease,
      ...(processAt === undefined ? {} : { processAt }),
      ...(notFailure ? { failure: false as const } : {}),
      // Before version 9 the failure is counted as before, without its text or its unrecoverable mark (a rolling upgrade).
      ...(r.error === undefined || !v9 ? {} : { error: r.error }),
      ...(r.unrecoverable === true && v9 ? { unrecoverable: true as const } : {}),
    });
    if (value.op !== 'release') throw new VeraError('INTERNAL', 'release gave another result');
    return { flagged: value.flagged };
  },
  'journal.flagged': async ({ fe, request }) => {
    const { name, limit } = typedRequest(TYPED_OPS.flagged, request);
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    definitionOf(fe, name);
    const flagged = await fe.node.stateMachine.read(`journal ${name}`, (db, snapshot) => readFlagged(db, snapshot, name, limit));
    return {
      items: flagged.map(({ item, flaggedAt }) => ({
        key: item.key,
        data: item.data,
        priority: item.priority,
        insertedAt: item.insertedAt,
        timeouts: item.timeouts,
        failures: item.failures,
        flaggedAt,
        ...(item.lastError === undefined ? {} : { lastError: item.lastError }),
      })),
    };
  },
  'journal.flags': async ({ fe, request }) => {
    const r = typedRequest(TYPED_OPS.flags, request);
    const { name } = r;
    definitionOf(fe, name);
    const feed = member(fe).flags;
    const after = r.after ?? feed.now;
    const deadline = performance.now() + r.waitMs;
    for (;;) {
      const page = feed.read(name, after, r.limit);
      if (page.events.length > 0 || page.missed || performance.now() >= deadline) {
        return { events: page.events.map((e) => ({ index: e.index, key: e.key })), next: page.next, missed: page.missed };
      }
      await feed.wait(name, deadline);
      definitionOf(fe, name); // dropped while waiting
    }
  },
  'journal.events': async ({ fe, request }) => {
    const r = typedRequest(TYPED_OPS.events, request);
    const { name, key, types } = r;
    definitionOf(fe, name);
    const feed = member(fe).lifecycle;
    const after = r.after ?? feed.now;
    const deadline = performance.now() + r.waitMs;
    const only = key === undefined && types === undefined ? undefined : (e: LifecycleEvent) => (key === undefined || e.key === key) && (types === undefined || types.includes(e.type));
    for (;;) {
      const page = feed.read(name, after, r.limit, only);
      if (page.events.length > 0 || page.missed || performance.now() >= deadline) {
        return { events: page.events.map((e) => ({ index: e.index, key: e.key, type: e.type })), next: page.next, missed: page.missed };
      }
      await feed.wait(name, deadline);
      definitionOf(fe, name); // dropped while waiting
    }
  },
  'journal.limits': async ({ fe, request: r }) => {
    if (typeof r.maxJournals === 'number') await propose(fe, { op: 'limits', maxJournals: r.maxJournals });
    else await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const state = fe.node.stateMachine.stateOf(journal);
    return { maxJournals: state.limits.maxJournals, journals: state.journals.size };
  },
  'journal.requeue': async ({ fe, request }) => {
    const { name, key } = typedRequest(TYPED_OPS.requeue, request);
    await propose(fe, { op: 'requeue', name, key });
    return {};
  },
  'journal.forget': async ({ fe, request }) => {
    const { name, key } = typedRequest(TYPED_OPS.forget, request);
    await propose(fe, { op: 'forget', name, key });
    return {};
  },
  'journal.remove': async ({ fe, request }) => {
    const { name, key } = typedRequest(TYPED_OPS.remove, request);
    const value = await propose(fe, { op: 'remove', name, key });
    if (value.op !== 'remove') throw new VeraError('INTERNAL', 'remove gave another result');
    return { status: value.status };
  },
  'journal.get': async ({ fe, request }) => {
    const { name, key } = typedRequest(TYPED_OPS.get, request);
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const d = definitionOf(fe, name);
    const now = fe.node.stateMachine.clock;
    const job = await fe.node.stateMachine.read(`journal ${name}`, (db, snapshot) => readJob(db, snapshot, name, key, now));
    if (job === null) throw new VeraError('NOT_FOUND', `no job ${key} in ${name} (waiting, processing or flagged)`);
    return jobView(job, d.settings.timeoutMs);
  },
  'journal.result': async ({ fe, request }) => {
    const { name, key } = typedRequest(TYPED_OPS.result, request);
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    definitionOf(fe, name);
    const now = fe.node.stateMachine.clock;
    const kept = await fe.node.stateMachine.read(`journal ${name}`, (db, snapshot) => readResult(db, snapshot, name, key, now));
    if (kept === null) throw new VeraError('NOT_FOUND', `no result kept for ${key} in ${name}`);
    return { key, result: kept.result as FamilyResult[string], doneAt: kept.doneAt, keptUntil: kept.keptUntil };
  },
  'journal.items': async ({ fe, request }) => {
    const r = typedRequest(TYPED_OPS.items, request);
    const { name } = r;
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const d = definitionOf(fe, name);
    const now = fe.node.stateMachine.clock;
    const after = r.after === undefined ? null : Buffer.from(r.after, 'base64url');
    // A page fits well within one reply: half the member's reply budget.
    const page = await fe.node.stateMachine.read(`journal ${name}`, (db, snapshot) => readPage(db, snapshot, name, r.status, after, r.limit, fe.limits.replyBytes / 2, now));
    return { items: page.items.map((i) => jobView(i, d.settings.timeoutMs)), next: page.next === null ? null : page.next.toString('base64url') };
  },
  'journal.pause': async ({ fe, request }) => {
    await propose(fe, { op: 'pause', name: typedRequest(TYPED_OPS.pause, request).name, paused: true });
    return {};
  },
  'journal.resume': async ({ fe, request }) => {
    await propose(fe, { op: 'pause', name: typedRequest(TYPED_OPS.resume, request).name, paused: false });
    return {};
  },
  'journal.drain': async ({ fe, request }) => {
    // Entries of DRAIN_BATCH until one finds fewer: Waiting items added meanwhile may go too, or stay.
    let removed = 0;
    for (;;) {
      const value = await propose(fe, { op: 'drain', name: typedRequest(TYPED_OPS.drain, request).name, max: DRAIN_BATCH });
      if (value.op !== 'drain') throw new VeraError('INTERNAL', 'drain gave another result');
      removed += value.removed;
      if (!value.more) return { removed };
    }
  },
  'journal.schedule': async ({ fe, request: r }) => {
    requireV9(fe, 'a schedule');
    const name = r.name as string;
    definitionOf(fe, name);
    const timing = r.cron === undefined ? { everyMs: r.everyMs as number } : { cron: r.cron as string, tz: r.tz as string };
    // The expression, the zone and the next tick are judged here, by the member asked (entries carry no zone check: members may hold other zone data).
    if ('tz' in timing) {
      const cron = parseCron(timing.cron);
      const problem = typeof cron === 'string' ? cron : timeZoneProblem(timing.tz);
      if (problem !== null) throw new VeraError('BAD_REQUEST', problem);
    }
    const next = nextTick(timing, Math.max(fe.node.stateMachine.clock, Date.now()));
    if (next === null) throw new VeraError('BAD_REQUEST', `cron ${String(r.cron)} never fires (no tick in the next 9 years)`);
    const schedule: ScheduleSpec = {
      id: r.schedule as string,
      timing,
      catchUp: r.catchUp === 'none' ? 'none' : 'one',
      job: { data: r.data ?? null, ...(r.priority === undefined ? {} : { priority: r.priority as number }), ...(r.retry === undefined ? {} : { retry: r.retry as RetryPolicy }) },
    };
    const value = await propose(fe, { op: 'schedule', name, schedule });
    if (value.op !== 'schedule') throw new VeraError('INTERNAL', 'schedule gave another result');
    return { replaced: value.replaced, nextTick: next };
  },
  'journal.schedules': async ({ fe, request }) => {
    const { name } = typedRequest(TYPED_OPS.schedules, request);
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    definitionOf(fe, name);
    const all = await fe.node.stateMachine.read(`journal ${name}`, (db, snapshot) => readSchedules(db, snapshot, name));
    return { schedules: all.map(scheduleView) };
  },
  'journal.unschedule': async ({ fe, request }) => {
    const { name, schedule } = typedRequest(TYPED_OPS.unschedule, request);
    await propose(fe, { op: 'unschedule', name, id: schedule });
    return {};
  },
  'journal.progress': async ({ fe, request }) => {
    const { name, key, lease, progress } = typedRequest(TYPED_OPS.progress, request);
    await propose(fe, { op: 'progress', name, key, lease, progress });
    return {};
  },
};

/** Waiting items one drain entry deletes, at most. */
const DRAIN_BATCH = 1000;

/** What each op touches: the journal it names ('journal:NAME'), or every journal ('journal:'). */
const one =
  (perm: Need['perm']) =>
  (r: FamilyRequest): readonly Need[] => [{ perm, resource: `journal:${r.name as string}` }];
const NEEDS: Record<string, (r: FamilyRequest) => readonly Need[]> = {
  'journal.create': one('admin'),
  'journal.configure': one('admin'),
  'journal.drop': one('admin'),
  'journal.requeue': one('admin'),
  'journal.forget': one('admin'),
  'journal.limits': () => [{ perm: 'admin', resource: 'journal:' }],
  'journal.list': () => [{ perm: 'read', resource: 'journal:' }],
  'journal.show': one('read'),
  'journal.flagged': one('read'),
  'journal.flags': one('watch'),
  'journal.events': one('watch'),
  'journal.add': one('write'),
  'journal.claim': one('write'),
  'journal.cancelWait': one('write'),
  'journal.extend': one('write'),
  'journal.done': one('write'),
  'journal.doneMany': one('write'),
  'journal.release': one('write'),
  'journal.progress': one('write'),
  // Removing one job is a producer's act, as adding it is.
  'journal.remove': one('write'),
  'journal.get': one('read'),
  'journal.items': one('read'),
  'journal.result': one('read'),
  'journal.pause': one('admin'),
  'journal.resume': one('admin'),
  'journal.drain': one('admin'),
  // Schedules make jobs on their own, uncharged: the journal's admins set them, its readers see them.
  'journal.schedule': one('admin'),
  'journal.unschedule': one('admin'),
  'journal.schedules': one('read'),
};

const protocolOps = familyOps('journal', JOURNAL_OPS, handlers, NEEDS);

function runDuty(fe: FrontEnd, key: string, work: () => Promise<JournalCommand | null>): void {
  const busy = member(fe).dutiesInFlight;
  if (busy.has(key)) return;
  busy.add(key);
  void work()
    .then((command) => (command === null ? null : propose(fe, command)))
    .catch((err: unknown) => fe.logger.debug({ event: 'journal-duty-failed', duty: key, err: String(err) }, 'a journal duty failed; it runs again next tick'))
    .finally(() => busy.delete(key));
}

/** Claims past their journal's timeout go back (or are flagged) through one entry per journal per tick. */
const timeouts: LeaderDuty = {
  name: 'journal-timeouts',
  periodMs: 50,
  tick: (fe) => {
    const now = Date.now();
    for (const [name, d] of fe.node.stateMachine.stateOf(journal).journals) {
      if (d.dropping || d.counts.processing === 0) continue;
      runDuty(fe, `timeout ${name}`, () =>
        fe.node.stateMachine.read(`journal ${name}`, async (db, snapshot) => {
          const claims: Array<readonly [string, number]> = [];
          for await (const indexKey of db.keys({ ...startedByRange(name, now - d.settings.timeoutMs), snapshot, limit: DUTY_BATCH })) {
            const key = keyAfterDate(indexKey, name, 0);
            const raw = await db.get(itemKey(name, key), { snapshot });
            if (raw !== undefined) claims.push([key, decodeItem(raw).lease]);
          }
          return claims.length === 0 ? null : { op: 'timeout', name, claims };
        }),
      );
    }
  },
};

/** Expired items are deleted through the expiration index, a bounded batch per entry. */
const expiry: LeaderDuty = {
  name: 'journal-expiry',
  periodMs: 250,
  tick: (fe) => {
    const now = Date.now();
    for (const [name, d] of fe.node.stateMachine.stateOf(journal).journals) {
      if (d.dropping || d.counts.waiting + d.counts.processing === 0) continue;
      runDuty(fe, `expire ${name}`, () =>
        fe.node.stateMachine.read(`journal ${name}`, async (db, snapshot) => {
          for await (const _ of db.keys({ ...expiredRange(name, now), snapshot, limit: 1 })) return { op: 'expire', name, max: DUTY_BATCH };
          return null;
        }),
      );
    }
  },
};

/** A journal being dropped loses a batch of keys per entry until it is gone. */
const drops: LeaderDuty = {
  name: 'journal-drops',
  periodMs: 100,
  tick: (fe) => {
    for (const [name, d] of fe.node.stateMachine.stateOf(journal).journals) {
      if (d.dropping) runDuty(fe, `drop ${name}`, async () => ({ op: 'drop', name }));
    }
  },
};

function count(fe: FrontEnd, v: Exclude<JournalValue, { op: 'limits' }>): void {
  const byJournal = member(fe).applied;
  const c = member(fe).appliedTo(v.journal);
  if (v.op === 'add') c.added += v.inserted + v.merged + v.deferred;
  else if (v.op === 'tick') c.added += v.key === null ? 0 : 1;
  else if (v.op === 'claim') c.claimed += v.items.length;
  else if (v.op === 'done') {
    c.done++;
    c.claimed += v.next?.items.length ?? 0;
  }
  else if (v.op === 'doneMany') {
    c.done += v.done;
    c.claimed += v.next?.items.length ?? 0;
  } else if (v.op === 'release') {
    c.released++;
    if (v.flagged) c.flagged++;
  }
  else if (v.op === 'timeout') {
    c.timeouts += v.requeued.length + v.flagged.length;
    c.flagged += v.flagged.length;
  } else if (v.op === 'expire') c.expired += v.expired;
  else if (v.op === 'drop') byJournal.delete(v.journal);
}

/** Counts past this many due items are reported as this many (a scrape stays cheap). */
const DUE_COUNT_CAP = 10_000;

/** Per journal: items by status, due now (capped), the oldest due item's age, and what this member applied. */
async function metrics(fe: FrontEnd): Promise<string> {
  const journals = [...fe.node.stateMachine.stateOf(journal).journals].filter(([, d]) => !d.dropping);
  const now = Math.max(fe.node.stateMachine.clock, Date.now());
  const lines: string[] = [];
  const gauge = (name: string, help: string, rows: Array<[string, string, number]>): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [j, extra, n] of rows) lines.push(`${name}{journal="${j}"${extra}} ${n}`);
  };
  const counts = await Promise.all(journals.map(([name, d]) => countsNow(fe, name, d)));
  gauge(
    'vera_journal_items',
    'Items in each journal by status (waiting, processing, flagged); expired ones not yet deleted count as absent.',
    journals.flatMap(([name], i) => [
      [name, ',status="waiting"', counts[i]!.waiting] as [string, string, number],
      [name, ',status="processing"', counts[i]!.processing] as [string, string, number],
      [name, ',status="flagged"', counts[i]!.flagged] as [string, string, number],
    ]),
  );
  const due: Array<[string, string, number]> = [];
  const age: Array<[string, string, number]> = [];
  for (const [name, d] of journals) {
    const [n, earliest] = await fe.node.stateMachine.read(`journal ${name}`, async (db, snapshot) => [
      await countDue(db, snapshot, name, d, now, DUE_COUNT_CAP),
      await earliestProcessAt(db, snapshot, name, d),
    ]);
    due.push([name, '', n]);
    age.push([name, '', earliest === null || earliest > now ? 0 : (now - earliest) / 1000]);
  }
  gauge('vera_journal_due', `Waiting items due now (counted up to ${DUE_COUNT_CAP}).`, due);
  gauge('vera_journal_oldest_due_age_seconds', 'How long the earliest due Waiting item has been due (0 when none is).', age);
  const applied = member(fe).applied;
  for (const [field, help] of [
    ['added', 'Items added (inserted, merged or kept for after processing).'],
    ['claimed', 'Items claimed.'],
    ['done', 'Items done.'],
    ['released', 'Items released.'],
    ['timeouts', 'Claims that timed out.'],
    ['flagged', 'Items flagged after too many timeouts.'],
    ['expired', 'Items deleted because they expired.'],
  ] as const) {
    const name = `vera_journal_${field}_total`;
    lines.push(`# HELP ${name} ${help} Applied on this member since it started.`, `# TYPE ${name} counter`);
    for (const [j, c] of applied) lines.push(`${name}{journal="${j}"} ${c[field]}`);
  }
  return `${lines.join('\n')}\n`;
}

/** GET /v1/journals (every journal), /v1/journals/NAME, /v1/journals/NAME/flagged: linearizable reads, as JSON. */
const http: FamilyHttpRoute = {
  prefix: '/v1/journals',
  get: (fe, rest, url) => {
    const parts = rest.split('/').filter((p) => p !== '').map(decodeURIComponent);
    if (parts.length === 0) return { id: 0, op: 'journal.list' };
    const name = parts[0]!;
    const limit = url.searchParams.get('limit');
    // /NAME/items?status=S&after=C&limit=N, /NAME/items/KEY, /NAME/results/KEY, /NAME/schedules (command version 9).
    if (parts[1] === 'schedules' && parts.length === 2) return JOURNAL_OPS.get('journal.schedules')!({ name }, 0, fe.limits);
    if (parts[1] === 'items' && parts.length === 2) {
      const after = url.searchParams.get('after');
      const status = url.searchParams.get('status') ?? 'waiting';
      return JOURNAL_OPS.get('journal.items')!({ name, status, ...(after === null ? {} : { after }), ...(limit === null ? {} : { limit: Number(limit) }) }, 0, fe.limits);
    }
    if ((parts[1] === 'items' || parts[1] === 'results') && parts.length === 3) {
      return JOURNAL_OPS.get(parts[1] === 'items' ? 'journal.get' : 'journal.result')!({ name, key: parts[2] }, 0, fe.limits);
    }
    const build = JOURNAL_OPS.get(parts.length === 1 ? 'journal.show' : 'journal.flagged')!;
    if (parts.length > 2 || (parts.length === 2 && parts[1] !== 'flagged')) throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
    const fields: Record<string, unknown> = { name, ...(parts.length === 2 && limit !== null ? { limit: Number(limit) } : {}) };
    return build(fields, 0, fe.limits);
  },
};

/** The next tick of each schedule as this leader computed it, per version of the schedule (a new lastTick is a new object). */
const nextTicks = new WeakMap<ScheduleClock, number | null>();

/**
 * Schedules whose next tick has come get one tick entry each: the latest tick due (one job
 * for ticks missed while no leader ran them, or none with catchUp 'none'; apply decides from
 * the entry). A tick already made is refused by apply, so a new leader proposing again what
 * the old one had in flight makes no second job.
 */
const schedules: LeaderDuty = {
  name: 'journal-schedules',
  periodMs: 50,
  tick: (fe) => {
    const state = fe.node.stateMachine.stateOf(journal);
    const now = Date.now();
    for (const [name, byId] of state.schedules) {
      if (state.live(name) === null) continue;
      for (const s of byId.values()) {
        let next = nextTicks.get(s);
        if (next === undefined) nextTicks.set(s, (next = nextTick(s.timing, s.lastTick)));
        if (next === null || next > now) continue;
        runDuty(fe, `tick ${name} ${s.id}`, async () => {
          const at = latestTick(s.timing, s.lastTick, now);
          return at === null ? null : { op: 'tick', name, id: s.id, tick: at };
        });
      }
    }
  },
};

/** Items that became available wake as many waiting claimers. */
function onApplied(outcome: ApplyOutcome, fe: FrontEnd): void {
  const r = outcome.result;
  const feed = member(fe).flags;
  const lifecycle = member(fe).lifecycle;
  if (!r.ok || r.op !== 'family' || r.family !== 'journal') {
    feed.applied(outcome.index);
    lifecycle.record(outcome.index, null, []);
    return;
  }
  const v = r.value as JournalValue;
  if (v.op === 'limits') {
    feed.applied(outcome.index);
    lifecycle.record(outcome.index, null, []);
    return;
  }
  if (v.op === 'drop') {
    feed.dropped(v.journal, outcome.index);
    lifecycle.dropped(v.journal, outcome.index);
  }
  lifecycle.record(outcome.index, v.journal, lifecycleEvents(v, outcome.index));
  const flaggedKeys = v.op === 'timeout' ? v.flagged : v.op === 'release' && v.flagged ? [v.key] : [];
  feed.applied(outcome.index, flaggedKeys.length > 0 ? { name: v.journal, keys: flaggedKeys } : undefined);
  count(fe, v);
  const available =
    v.op === 'add'
      ? v.inserted + v.merged
      : v.op === 'tick'
        ? Number(v.key !== null)
        : v.op === 'release' || v.op === 'requeue' || (v.op === 'done' && v.requeued)
        ? 1
        : v.op === 'timeout'
          ? v.requeued.length + v.flagged.length + (v.ended?.length ?? 0)
          : v.op === 'doneMany'
            ? v.requeued
            : 0;
  if (available > 0) member(fe).waiters.wake(v.journal, available);
  // A resumed journal's waiting claims may all have work again.
  if (v.op === 'pause' && !v.paused) member(fe).waiters.wake(v.journal, Number.MAX_SAFE_INTEGER);
}

/** Results whose time is up are deleted through their index, a bounded batch per entry. */
const resultExpiry: LeaderDuty = {
  name: 'journal-result-expiry',
  periodMs: 1000,
  tick: (fe) => {
    const now = Date.now();
    for (const [name, d] of fe.node.stateMachine.stateOf(journal).journals) {
      if (d.dropping || (d.results ?? 0) === 0) continue;
      runDuty(fe, `results ${name}`, () =>
        fe.node.stateMachine.read(`journal ${name}`, async (db, snapshot) => {
          for await (const _ of db.keys({ ...resultsGoneRange(name, now), snapshot, limit: 1 })) return { op: 'expireResults', name, max: DUTY_BATCH };
          return null;
        }),
      );
    }
  },
};

export const server: ServerPart = { protocolOps, duties: [timeouts, expiry, drops, resultExpiry, schedules], onApplied, http: [http], metrics };
