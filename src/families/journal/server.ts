// The journal on the server, on the kit (src/kit/plugin.ts): its client ops (each a
// schema of wire.ts, shared with the client), the leader's duties (timeouts,
// expiry, finishing drops, results' expiry, schedules' ticks), waking claimers
// that wait, its HTTP reads and its /metrics lines. What it keeps per member (the
// waiting claims, held acknowledgements, the event feeds, what it applied) lives in
// the instance createServer makes.
import { NOT_PROPOSED, VeraError } from '../../protocol/index.js';
import { opRequest, type FamilyHost, type Plugin, type PluginDuty, type PluginNeed, type PluginRoute, type PluginServer, type RequestOfSchema } from '../../kit/index.js';
import { CANCELLED, type ClaimedItem, type JournalValue } from './apply.js';
import type { DoneItem, JournalCommand } from './commands.js';
import { dateIn, expiredRange, startedFromRange, keyAfterDate, itemKey, resultsGoneRange } from './keys.js';
import { clockAt } from '../../statemachine/state-machine.js';
import { countDue, earliestProcessAt, liveCounts, readFlagged, readJob, readPage, readResult, readSchedules } from './reads.js';
import { latestTick, nextTick, type Schedule, type ScheduleClock, type ScheduleSpec } from './schedules.js';
import { parseCron, timeZoneProblem } from './cron.js';
import { decodeItem, type FlaggedItem, type JournalDefinition, type JournalItem, type JournalSettings } from './records.js';
import { lifecycleEvents, type LifecycleEvent } from './lifecycle.js';
import { JournalWaiters, type ClaimTicket } from './waiters.js';
import { claimAhead, stillClaimed, untilDue } from './claim-ahead.js';
import { JournalMember } from './member.js';
import { HeldAcks, splitResult, type HeldAck } from './held-acks.js';
import { JOURNAL_SCHEMAS, type Claim, type JobInfo, type JournalInfo, type ScheduleInfo, type SettingsRequest } from './wire.js';
import type { JournalState } from './state.js';
import { FAILURES_SINCE } from './index.js';
import { userQuotaFor } from '../../kit/index.js';

export const DEFAULT_SETTINGS: JournalSettings = { timeoutMs: 30_000, maxTimeouts: 5, priority: 100, expiresInMs: 0, maxItems: 10_000_000 };
/** Timed-out claims or expired items one duty entry handles, at most. */
const DUTY_BATCH = 1000;
/** Waiting items one drain entry deletes, at most. */
const DRAIN_BATCH = 1000;
/** Counts past this many due items are reported as this many (a scrape stays cheap). */
const DUE_COUNT_CAP = 10_000;
/** How soon a client refused by a closing member may ask again (elsewhere, once its connection moves). */
const CLOSING_RETRY_MS = 100;

/**
 * What a request waiting on a closing member (a claim, a held acknowledgement, a feed's long
 * poll) is answered: nothing of it was proposed, so the client library sends it again, on the
 * member it reconnects to.
 */
function closingError(what: string): VeraError {
  return new VeraError('UNAVAILABLE', `this member is closing: ${what} again on another member`, { reason: NOT_PROPOSED, retryAfterMs: CLOSING_RETRY_MS });
}

type Ops = typeof JOURNAL_SCHEMAS;
type Host = FamilyHost<JournalState, JournalValue, JournalCommand>;
type DoneManyValue = Extract<JournalValue, { op: 'doneMany' }>;

/** `base` with the request's settings: a value sets one, null clears one of command version 9's (retry, keepResultsMs, rateLimit). */
function settingsFrom(base: JournalSettings, r: SettingsRequest): JournalSettings {
  const out: { -readonly [K in keyof JournalSettings]: JournalSettings[K] } = { ...base };
  if (r.timeoutMs !== undefined) out.timeoutMs = r.timeoutMs;
  if (r.maxTimeouts !== undefined) out.maxTimeouts = r.maxTimeouts;
  if (r.priority !== undefined) out.priority = r.priority;
  if (r.expiresInMs !== undefined) out.expiresInMs = r.expiresInMs;
  if (r.maxItems !== undefined) out.maxItems = r.maxItems;
  if (r.retry === null) delete out.retry;
  else if (r.retry !== undefined) out.retry = r.retry;
  if (r.keepResultsMs === null) delete out.keepResultsMs;
  else if (r.keepResultsMs !== undefined) out.keepResultsMs = r.keepResultsMs;
  if (r.rateLimit === null) delete out.rateLimit;
  else if (r.rateLimit !== undefined) out.rateLimit = r.rateLimit;
  return out;
}

/** One job as the inspect ops show it (journal.get, journal.items). */
function jobView(record: JournalItem | FlaggedItem, timeoutMs: number): JobInfo {
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
function scheduleView(s: Schedule): ScheduleInfo {
  const t = s.timing;
  return {
    schedule: s.id,
    ...('everyMs' in t ? { everyMs: t.everyMs } : { cron: t.cron, tz: t.tz }),
    catchUp: s.catchUp,
    data: s.job.data,
    ...(s.job.priority === undefined ? {} : { priority: s.job.priority }),
    ...(s.job.retry === undefined ? {} : { retry: { ...s.job.retry } }),
    createdAt: s.createdAt,
    lastTick: s.lastTick,
    nextTick: nextTick(t, s.lastTick),
    produced: s.produced,
    skipped: s.skipped,
  };
}

/** Items that became available for claims in an applied entry (they wake as many waiting claimers). */
function availableIn(v: Exclude<JournalValue, { op: 'limits' }>): number {
  switch (v.op) {
    case 'add':
      return v.inserted + v.merged;
    case 'tick':
      return Number(v.key !== null);
    case 'release':
    case 'requeue':
      return 1;
    case 'done':
      return v.requeued ? 1 : 0;
    case 'timeout':
      return v.requeued.length + v.flagged.length + (v.ended?.length ?? 0);
    case 'doneMany':
      return v.requeued;
    default:
      return 0;
  }
}

/** The journal's instance on one member, with what it keeps there (tests look at what it holds). */
export interface JournalServer extends PluginServer<Ops, JournalValue> {
  readonly member: JournalMember;
}

/** The journal's part of one member: made once per member when the server loads its parts. */
export function createServer(host: Host): JournalServer {
  // The replicated clock of the newest applied entry; claims and duties compare dates with the leader's wall clock too.
  const clock = (): number => host.now();
  const m = new JournalMember(
    new JournalWaiters({
      state: () => host.state(),
      now: clock,
      earliestProcessAt: (name, definition, after) => host.reader.read(`journal ${name}`, (db, snapshot) => earliestProcessAt(db, snapshot, name, definition, after)),
    }),
    // Sent alone: each held request is answered with the outcome, failure included; nothing else waits on it.
    new HeldAcks((name, requests) => void proposeHeld(name, requests, undefined).catch(() => undefined)),
    // The newest entry reported applied (its hooks run), not the newest the store's db holds: a
    // batch is reported as it goes to LevelDB, so the db's index trails the hooks.
    () => host.member.status().applied,
  );
  /** The next tick of each schedule as this leader computed it, per version of the schedule (a new lastTick is a new object). */
  const nextTicks = new WeakMap<ScheduleClock, number | null>();

  const propose = async (command: JournalCommand): Promise<JournalValue> => {
    try {
      return await host.propose(command);
    } catch (err) {
      // A removed job's holder is told so in a way a program can test: CONFLICT with reason cancelled.
      if (err instanceof VeraError && err.code === 'CONFLICT' && err.message.startsWith(CANCELLED)) throw new VeraError('CONFLICT', err.message, { reason: 'cancelled' });
      throw err;
    }
  };

  const proposeDoneMany = async (name: string, items: readonly DoneItem[], claim: number | undefined, dueBy?: number): Promise<DoneManyValue> => {
    const value = await propose({
      op: 'doneMany',
      name,
      items,
      ...(claim === undefined ? {} : { claim, claimBytes: host.limits.replyBytes }),
      ...(claim === undefined || dueBy === undefined ? {} : { dueBy }),
    });
    if (value.op !== 'doneMany') throw new VeraError('INTERNAL', 'doneMany gave another result');
    return value;
  };

  /**
   * One doneMany entry for held acknowledgements, claiming `claim` items too when a waiting
   * claim carries them (taking the items due by `dueBy` when given); each held request is answered
   * with its part. Resolves with the entry's result (or rejects as the proposal did, after
   * answering the held requests so).
   */
  async function proposeHeld(name: string, requests: readonly HeldAck[], claim: number | undefined, dueBy?: number): Promise<DoneManyValue> {
    // At most MAX_CLAIM_ITEMS keys of at most MAX_KEY_BYTES each (take): the entry is no larger than one doneMany's.
    const items: Array<readonly [string, number]> = [];
    for (const r of requests) for (const item of r.items) items.push(item);
    try {
      const value = await proposeDoneMany(name, items, claim, dueBy);
      const parts = splitResult(requests, value.lost);
      requests.forEach((r, i) => r.resolve(parts[i]!));
      return value;
    } catch (err) {
      for (const r of requests) r.reject(err);
      throw err;
    }
  }

  const definitionOf = (name: string): JournalDefinition => {
    const d = host.state().live(name);
    if (d === null) throw new VeraError('NOT_FOUND', `no journal ${name}`);
    return d;
  };

  /** Whether the cluster runs command version 9 (failure accounting, results, schedules). */
  const v9 = (): boolean => host.commandVersion() >= FAILURES_SINCE;

  /** Refuses what needs command version 9 (nested in a request, where the proposal gate does not look) before it runs. */
  const requireV9 = (what: string): void => {
    if (!v9()) throw new VeraError('BAD_REQUEST', `${what} needs command version 9, which this cluster does not run yet`);
  };

  const countsNow = (name: string, d: JournalDefinition): Promise<JournalDefinition['counts']> => {
    if (d.counts.waiting + d.counts.processing === 0) return Promise.resolve(d.counts);
    const now = clock();
    return host.reader.read(`journal ${name}`, (db, snapshot) => liveCounts(db, snapshot, name, d, now));
  };

  /** A journal's settings and counts; expired items count as absent though not deleted yet (reads.ts). */
  const describeJournal = async (name: string, d: JournalDefinition): Promise<JournalInfo> => {
    const { waiting, processing, flagged, byPriority } = await countsNow(name, d);
    // Copies of the nested settings, each in its place among the others.
    const { retry, rateLimit } = d.settings;
    const settings = { ...d.settings, ...(retry === undefined ? {} : { retry: { ...retry } }), ...(rateLimit === undefined ? {} : { rateLimit: { ...rateLimit } }) };
    return { name, settings, counts: { waiting, processing, flagged, byPriority: { ...byPriority }, results: d.results ?? 0 }, paused: d.paused === true };
  };

  /**
   * The items of a claim taken ahead that are still Processing under its lease and not
   * removed, as this member has applied: one removed while the reply was held for its date is
   * left out (its cancelled claim ends with the lease, not counted as a failure).
   */
  const stillHeld = async (name: string, lease: number, items: readonly ClaimedItem[]): Promise<ClaimedItem[]> => {
    if (items.length === 0) return [];
    const now = clock();
    const held = await host.reader.read(`journal ${name}`, async (db, snapshot) => {
      const keep = new Set<string>();
      for (const i of items) {
        if (stillClaimed(await readJob(db, snapshot, name, i.key, now), lease)) keep.add(i.key);
      }
      return keep;
    });
    return items.filter((i) => held.has(i.key));
  };

  /**
   * A claim: proposed at once when work may be due, else waiting here until woken (an item
   * became available, the earliest process date came, the deadline) or called off by its
   * session, which answers it with no items and no entry (lease 0).
   */
  const claimFor = async (r: RequestOfSchema<Ops['claim']>, ticket: ClaimTicket | undefined): Promise<Claim> => {
    const { name, max } = r;
    const deadline = performance.now() + r.waitMs;
    const state = host.state();
    /** The date the due timer woke this claim for, ahead of it (claim-ahead.ts). */
    let wokenFor: number | undefined;
    for (let first = true; ; first = false) {
      // Arriving after close: refused (not proposed), so the client sends it to another member.
      // Woken by close after waiting here: answered as a claim called off (no items, no entry),
      // so the worker sends a new claim with a deadline of its own; resent, this one would
      // wait its whole waitMs again within what is left of the client's deadline for it.
      if (m.closed) {
        if (first) throw closingError('claim');
        return { lease: 0, items: [] };
      }
      if (ticket?.cancelled === true) return { lease: 0, items: [] };
      // Paused, or the rate limit's window is full: wait (without an entry) until that ends, or the deadline.
      const wall = Math.max(clock(), Date.now());
      const blockedUntil = state.claimsBlockedUntil(name, wall);
      if (blockedUntil !== null && performance.now() < deadline) {
        wokenFor = await m.waiters.wait(name, Math.min(deadline, performance.now() + (blockedUntil - wall)), ticket);
        continue;
      }
      // A claim that will wait anyway proposes nothing until woken: what this member has
      // applied says nothing is due yet, and anything applied later wakes it. The last
      // try, at the deadline, always proposes (its reply carries a lease).
      // Nor does one whose items the claims in flight here will take (waiters.ts): it waits for the next date past theirs.
      const now = Math.max(clock(), Date.now());
      const idle = first && performance.now() < deadline && (state.nothingDue(name, now) || m.waiters.covered(name, now));
      if (!idle) {
        // The items must fit one reply: the entry carries this member's budget, so every member claims the same.
        // Acknowledgements held for this journal ride in the same entry (held-acks.ts).
        // Woken a round ahead of a date: the entry takes the items due by it (command version 9), unless
        // an item is due already that no claim in flight takes: held for the date, it would wait longer.
        const dueBy = v9() ? claimAhead(wokenFor, Date.now(), () => state.nothingDue(name, now) || m.waiters.covered(name, now)) : undefined;
        const held = m.held.take(name);
        const claiming = m.waiters.claiming(name, max, dueBy);
        const claimed = await (
          held.length === 0
            ? propose({ op: 'claim', name, max, maxBytes: host.limits.replyBytes, ...(dueBy === undefined ? {} : { dueBy }) }).then((v) =>
                v.op === 'claim' ? { lease: v.lease, items: v.items } : undefined,
              )
            : proposeHeld(name, held, max, dueBy).then((v) => v.next)
        ).finally(claiming);
        if (claimed === undefined) throw new VeraError('INTERNAL', 'claim gave another result');
        // Ahead of a date and nothing taken: the item there expires by its date; no longer ahead for it.
        if (dueBy !== undefined && claimed.items.length === 0) m.waiters.aheadCameBackEmpty(name, dueBy);
        if (claimed.items.length > 0 || performance.now() >= deadline) {
          // Taken ahead of their date: answered at the date, never before, and without the
          // items removed meanwhile (a removal before the date would have kept them from a claim at it).
          await untilDue(claimed.items, dueBy);
          const items = dueBy === undefined ? claimed.items : await stillHeld(name, claimed.lease, claimed.items);
          return { lease: claimed.lease, items };
        }
      }
      wokenFor = await m.waiters.wait(name, deadline, ticket, max);
    }
  };

  /** A long-polled feed page (flags, lifecycle events): answered once it has events, missed some, or the deadline came. */
  const feedPage = async <E>(
    name: string,
    waitMs: number,
    read: () => { readonly events: readonly E[]; readonly next: number; readonly missed: boolean },
    wait: (deadline: number) => Promise<void>,
  ): Promise<{ readonly events: readonly E[]; readonly next: number; readonly missed: boolean }> => {
    const deadline = performance.now() + waitMs;
    for (;;) {
      if (m.closed) throw closingError('ask');
      const page = read();
      if (page.events.length > 0 || page.missed || performance.now() >= deadline) return page;
      await wait(deadline);
      definitionOf(name); // dropped while waiting
    }
  };

  const handlers: PluginServer<Ops, JournalValue>['handlers'] = {
    create: async (r) => {
      await propose({ op: 'create', name: r.name, settings: settingsFrom(DEFAULT_SETTINGS, r) });
      return {};
    },
    configure: async (r) => {
      const current = definitionOf(r.name);
      await propose({ op: 'configure', name: r.name, settings: settingsFrom(current.settings, r) });
      return {};
    },
    drop: async ({ name }) => {
      await propose({ op: 'drop', name });
      return {};
    },
    list: async () => {
      await host.barrier();
      const all = [...host.state().journals].filter(([, d]) => !d.dropping).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return { journals: await Promise.all(all.map(([name, d]) => describeJournal(name, d))) };
    },
    show: async ({ name }) => {
      await host.barrier();
      return describeJournal(name, definitionOf(name));
    },
    add: async (r, { frameBytes, user }) => {
      host.admitWrite(frameBytes);
      // The caller's user is charged for the items, judged in apply (once every member applies that).
      const { userQuota } = userQuotaFor(host.commandVersion(), host.userLimits);
      const charge = user === null || userQuota === undefined ? {} : { user, userQuota };
      if (r.items.some((i) => i.retry !== undefined)) requireV9('an item retry policy');
      const value = await propose({ op: 'add', name: r.name, items: r.items, ...charge });
      if (value.op !== 'add') throw new VeraError('INTERNAL', 'add gave another result');
      return { inserted: value.inserted, merged: value.merged, deferred: value.deferred };
    },
    claim: async (r, { session }) => {
      // Only a session can call its claim off (journal.cancelWait); an HTTP call has none.
      const ticket = session === '' ? undefined : m.waiters.begin(r.name, session);
      try {
        return await claimFor(r, ticket);
      } finally {
        if (ticket !== undefined) m.waiters.finish(ticket);
      }
    },
    cancelWait: async ({ name }, { session }) => {
      definitionOf(name);
      return { cancelled: session === '' ? 0 : m.waiters.cancel(name, session) };
    },
    extend: async ({ name, key, lease }) => {
      await propose({ op: 'extend', name, key, lease });
      return {};
    },
    done: async (r) => {
      const { claim } = r;
      const value = await propose({
        op: 'done',
        name: r.name,
        key: r.key,
        lease: r.lease,
        ...(claim === undefined ? {} : { claim, claimBytes: host.limits.replyBytes }),
        ...(r.result === undefined || !v9() ? {} : { result: r.result }),
      });
      if (value.op !== 'done') throw new VeraError('INTERNAL', 'done gave another result');
      // With `claim`, the reply is a claim's: the worker's next items, under the done's entry.
      return value.next === undefined ? {} : { lease: value.next.lease, items: value.next.items };
    },
    doneMany: async ({ name, claim, holdMs, items: asked }) => {
      // Before version 9 no result is kept, and the items are done all the same (a worker must not be stuck on its acknowledgements).
      const keepsResults = v9();
      const requested = asked.map((i) => (keepsResults || i.result === undefined ? i : { key: i.key, lease: i.lease }));
      const withResults = requested.some((i) => i.result !== undefined);
      const items: DoneItem[] = requested.map((i) => (i.result === undefined ? ([i.key, i.lease] as const) : ([i.key, i.lease, i.result] as const)));
      // Held only while a claim of this journal waits or is being proposed here: the entry of the
      // next claim of this journal carries them. Items with results go at once.
      if (holdMs !== undefined && claim === undefined && !withResults && m.waiters.expectsClaim(name) && m.held.hasRoom(name, items.length)) {
        const pairs = requested.map((i) => [i.key, i.lease] as const);
        const { done, lost } = await m.held.hold(name, pairs, holdMs);
        return { done, lost: [...lost] };
      }
      const value = await proposeDoneMany(name, items, claim);
      const next = value.next === undefined ? {} : { lease: value.next.lease, items: value.next.items };
      return { done: value.done, lost: [...value.lost], ...next };
    },
    release: async (r) => {
      const { processAt } = r;
      // Before command version 9 no release counts as a failure, so there is nothing to say.
      const counts = v9();
      const notFailure = r.failure === false && counts;
      const value = await propose({
        op: 'release',
        name: r.name,
        key: r.key,
        lease: r.lease,
        ...(processAt === undefined ? {} : { processAt }),
        ...(notFailure ? { failure: false as const } : {}),
        // Before version 9 the failure is counted as before, without its text or its unrecoverable mark (a rolling upgrade).
        ...(r.error === undefined || !counts ? {} : { error: r.error }),
        ...(r.unrecoverable === true && counts ? { unrecoverable: true as const } : {}),
      });
      if (value.op !== 'release') throw new VeraError('INTERNAL', 'release gave another result');
      return { flagged: value.flagged };
    },
    flagged: async ({ name, limit }) => {
      await host.barrier();
      definitionOf(name);
      const flagged = await host.reader.read(`journal ${name}`, (db, snapshot) => readFlagged(db, snapshot, name, limit));
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
    flags: async (r) => {
      const { name } = r;
      definitionOf(name);
      const feed = m.flags;
      const after = r.after ?? feed.now;
      const page = await feedPage(name, r.waitMs, () => feed.read(name, after, r.limit), (deadline) => feed.wait(name, deadline));
      return { events: page.events.map((e) => ({ index: e.index, key: e.key })), next: page.next, missed: page.missed };
    },
    events: async (r) => {
      const { name, key, types } = r;
      definitionOf(name);
      const feed = m.lifecycle;
      const after = r.after ?? feed.now;
      const only = key === undefined && types === undefined ? undefined : (e: LifecycleEvent) => (key === undefined || e.key === key) && (types === undefined || types.includes(e.type));
      const page = await feedPage(name, r.waitMs, () => feed.read(name, after, r.limit, only), (deadline) => feed.wait(name, deadline));
      return { events: page.events.map((e) => ({ index: e.index, key: e.key, type: e.type })), next: page.next, missed: page.missed };
    },
    limits: async (r) => {
      if (r.maxJournals !== undefined) await propose({ op: 'limits', maxJournals: r.maxJournals });
      else await host.barrier();
      const state = host.state();
      return { maxJournals: state.limits.maxJournals, journals: state.journals.size };
    },
    requeue: async ({ name, key }) => {
      await propose({ op: 'requeue', name, key });
      return {};
    },
    forget: async ({ name, key }) => {
      await propose({ op: 'forget', name, key });
      return {};
    },
    remove: async ({ name, key }) => {
      const value = await propose({ op: 'remove', name, key });
      if (value.op !== 'remove') throw new VeraError('INTERNAL', 'remove gave another result');
      return { status: value.status };
    },
    get: async ({ name, key }) => {
      await host.barrier();
      const d = definitionOf(name);
      const now = clock();
      const job = await host.reader.read(`journal ${name}`, (db, snapshot) => readJob(db, snapshot, name, key, now));
      if (job === null) throw new VeraError('NOT_FOUND', `no job ${key} in ${name} (waiting, processing or flagged)`);
      return jobView(job, d.settings.timeoutMs);
    },
    result: async ({ name, key }) => {
      await host.barrier();
      definitionOf(name);
      const now = clock();
      const kept = await host.reader.read(`journal ${name}`, (db, snapshot) => readResult(db, snapshot, name, key, now));
      if (kept === null) throw new VeraError('NOT_FOUND', `no result kept for ${key} in ${name}`);
      return { key, result: kept.result, doneAt: kept.doneAt, keptUntil: kept.keptUntil };
    },
    items: async (r) => {
      const { name } = r;
      await host.barrier();
      const d = definitionOf(name);
      const now = clock();
      const after = r.after === undefined ? null : Buffer.from(r.after, 'base64url');
      // A page fits well within one reply: half the member's reply budget.
      const page = await host.reader.read(`journal ${name}`, (db, snapshot) => readPage(db, snapshot, name, r.status, after, r.limit, host.limits.replyBytes / 2, now));
      return { items: page.items.map((i) => jobView(i, d.settings.timeoutMs)), next: page.next === null ? null : page.next.toString('base64url') };
    },
    pause: async ({ name }) => {
      await propose({ op: 'pause', name, paused: true });
      return {};
    },
    resume: async ({ name }) => {
      await propose({ op: 'pause', name, paused: false });
      return {};
    },
    drain: async ({ name }) => {
      // Entries of DRAIN_BATCH until one finds fewer: Waiting items added meanwhile may go too, or stay.
      let removed = 0;
      for (;;) {
        const value = await propose({ op: 'drain', name, max: DRAIN_BATCH });
        if (value.op !== 'drain') throw new VeraError('INTERNAL', 'drain gave another result');
        removed += value.removed;
        if (!value.more) return { removed };
      }
    },
    schedule: async (r) => {
      requireV9('a schedule');
      const { name } = r;
      definitionOf(name);
      const timing = r.cron === undefined ? { everyMs: r.everyMs ?? 0 } : { cron: r.cron, tz: r.tz ?? 'UTC' };
      // The expression, the zone and the next tick are judged here, by the member asked (entries carry no zone check: members may hold other zone data).
      if ('tz' in timing) {
        const cron = parseCron(timing.cron);
        const problem = typeof cron === 'string' ? cron : timeZoneProblem(timing.tz);
        if (problem !== null) throw new VeraError('BAD_REQUEST', problem);
      }
      const next = nextTick(timing, Math.max(clock(), Date.now()));
      if (next === null) throw new VeraError('BAD_REQUEST', `cron ${String(r.cron)} never fires (no tick in the next 9 years)`);
      const schedule: ScheduleSpec = {
        id: r.schedule,
        timing,
        catchUp: r.catchUp === 'none' ? 'none' : 'one',
        job: { data: r.data ?? null, ...(r.priority === undefined ? {} : { priority: r.priority }), ...(r.retry === undefined ? {} : { retry: r.retry }) },
      };
      const value = await propose({ op: 'schedule', name, schedule });
      if (value.op !== 'schedule') throw new VeraError('INTERNAL', 'schedule gave another result');
      return { replaced: value.replaced, nextTick: next };
    },
    schedules: async ({ name }) => {
      await host.barrier();
      definitionOf(name);
      const all = await host.reader.read(`journal ${name}`, (db, snapshot) => readSchedules(db, snapshot, name));
      return { schedules: all.map(scheduleView) };
    },
    unschedule: async ({ name, schedule }) => {
      await propose({ op: 'unschedule', name, id: schedule });
      return {};
    },
    progress: async ({ name, key, lease, progress }) => {
      await propose({ op: 'progress', name, key, lease, progress });
      return {};
    },
  };

  /**
   * Runs one duty's work unless its previous entry is still in flight: one at a time per key.
   * Its entry is the leader's own, never forwarded: a step-down while the work runs fails it.
   */
  const runDuty = (key: string, work: () => Promise<JournalCommand | null>): void => {
    const busy = m.dutiesInFlight;
    if (busy.has(key)) return;
    busy.add(key);
    void work()
      .then((command) => (command === null ? null : host.leaderOnly.propose(command)))
      .catch((err: unknown) => host.log.debug({ event: 'journal-duty-failed', duty: key, err: String(err) }, 'a journal duty failed; it runs again next tick'))
      .finally(() => busy.delete(key));
  };

  /** Proposes `command` for journal `name` when the index `range` holds a key now: a bounded batch per entry (expiry of items, of results). */
  const proposeWhenAnyIn = (key: string, name: string, range: { readonly gte: Buffer; readonly lt: Buffer }, command: JournalCommand): void =>
    runDuty(key, () =>
      host.reader.read(`journal ${name}`, async (db, snapshot) => {
        for await (const _ of db.keys({ ...range, snapshot, limit: 1 })) return command;
        return null;
      }),
    );

  /**
   * Per journal, a start date before which the Processing index holds no live claim: the
   * timeout scan starts there rather than at the index's head, where the deleted keys of
   * finished claims lie until LevelDB compacts them, stepped over on every tick otherwise.
   * A scan of a snapshot moves it to the first live claim it meets (reading on past the
   * timed-out ones to the first that is not), never past the snapshot's replicated clock: a
   * claim or extend applied after the snapshot starts at its entry's clock, which is no
   * earlier. Until that claim could have timed out, a tick reads nothing. Forgotten when
   * leadership starts.
   */
  const scanFrom = new Map<string, number>();

  /** Claims past their journal's timeout go back (or are flagged) through one entry per journal per tick. */
  const timeouts: PluginDuty = {
    name: 'journal-timeouts',
    periodMs: 50,
    start: () => scanFrom.clear(),
    tick: () => {
      const now = Date.now();
      for (const [name, d] of host.state().journals) {
        if (d.dropping || d.counts.processing === 0) continue;
        const startedBy = now - d.settings.timeoutMs;
        const from = scanFrom.get(name) ?? 0;
        if (from > startedBy) continue;
        runDuty(`timeout ${name}`, () =>
          host.reader.read(`journal ${name}`, async (db, snapshot) => {
            const clockThen = await clockAt(db, snapshot);
            let firstLive: number | null = null;
            let seen = 0;
            const claims: Array<readonly [string, number]> = [];
            for await (const indexKey of db.keys({ ...startedFromRange(name, from), snapshot, limit: DUTY_BATCH + 1 })) {
              const startedAt = dateIn(indexKey, name);
              firstLive ??= startedAt;
              if (startedAt > startedBy || seen++ === DUTY_BATCH) break;
              const key = keyAfterDate(indexKey, name, 0);
              const raw = await db.get(itemKey(name, key), { snapshot });
              if (raw !== undefined) claims.push([key, decodeItem(raw).lease]);
            }
            scanFrom.set(name, Math.min(clockThen, firstLive ?? clockThen));
            return claims.length === 0 ? null : { op: 'timeout', name, claims };
          }),
        );
      }
    },
  };

  /** Expired items are deleted through the expiration index, a bounded batch per entry. */
  const expiry: PluginDuty = {
    name: 'journal-expiry',
    periodMs: 250,
    tick: () => {
      const now = Date.now();
      for (const [name, d] of host.state().journals) {
        if (d.dropping || d.counts.waiting + d.counts.processing === 0) continue;
        proposeWhenAnyIn(`expire ${name}`, name, expiredRange(name, now), { op: 'expire', name, max: DUTY_BATCH });
      }
    },
  };

  /** A journal being dropped loses a batch of keys per entry until it is gone. */
  const drops: PluginDuty = {
    name: 'journal-drops',
    periodMs: 100,
    tick: () => {
      for (const [name, d] of host.state().journals) {
        if (d.dropping) runDuty(`drop ${name}`, async () => ({ op: 'drop', name }));
      }
    },
  };

  /** Results whose time is up are deleted through their index, a bounded batch per entry. */
  const resultExpiry: PluginDuty = {
    name: 'journal-result-expiry',
    periodMs: 1000,
    tick: () => {
      const now = Date.now();
      for (const [name, d] of host.state().journals) {
        if (d.dropping || (d.results ?? 0) === 0) continue;
        proposeWhenAnyIn(`results ${name}`, name, resultsGoneRange(name, now), { op: 'expireResults', name, max: DUTY_BATCH });
      }
    },
  };

  /**
   * Schedules whose next tick has come get one tick entry each: the latest tick due (one job
   * for ticks missed while no leader ran them, or none with catchUp 'none'; apply decides from
   * the entry). A tick already made is refused by apply, so a new leader proposing again what
   * the old one had in flight makes no second job.
   */
  const schedules: PluginDuty = {
    name: 'journal-schedules',
    periodMs: 50,
    tick: () => {
      const state = host.state();
      const now = Date.now();
      for (const [name, byId] of state.schedules) {
        if (state.live(name) === null) continue;
        for (const s of byId.values()) {
          let next = nextTicks.get(s);
          if (next === undefined) nextTicks.set(s, (next = nextTick(s.timing, s.lastTick)));
          if (next === null || next > now) continue;
          runDuty(`tick ${name} ${s.id}`, async () => {
            const at = latestTick(s.timing, s.lastTick, now);
            return at === null ? null : { op: 'tick', name, id: s.id, tick: at };
          });
        }
      }
    },
  };

  /** What this member applied, per journal (/metrics). */
  const count = (v: Exclude<JournalValue, { op: 'limits' }>): void => {
    const c = m.appliedTo(v.journal);
    if (v.op === 'add') c.added += v.inserted + v.merged + v.deferred;
    else if (v.op === 'tick') c.added += v.key === null ? 0 : 1;
    else if (v.op === 'claim') c.claimed += v.items.length;
    else if (v.op === 'done') {
      c.done++;
      c.claimed += v.next?.items.length ?? 0;
    } else if (v.op === 'doneMany') {
      c.done += v.done;
      c.claimed += v.next?.items.length ?? 0;
    } else if (v.op === 'release') {
      c.released++;
      if (v.flagged) c.flagged++;
    } else if (v.op === 'timeout') {
      c.timeouts += v.requeued.length + v.flagged.length;
      c.flagged += v.flagged.length;
    } else if (v.op === 'expire') c.expired += v.expired;
    else if (v.op === 'drop') {
      m.applied.delete(v.journal);
      scanFrom.delete(v.journal);
    }
  };

  /** Every applied entry, in log order: the feeds record it, and items that became available wake as many waiting claimers. */
  const applied = (index: number, v: JournalValue | null): void => {
    const feed = m.flags;
    const lifecycle = m.lifecycle;
    if (v === null || v.op === 'limits') {
      feed.applied(index);
      lifecycle.record(index, null, []);
      return;
    }
    if (v.op === 'drop') {
      feed.dropped(v.journal, index);
      lifecycle.dropped(v.journal, index);
    }
    lifecycle.record(index, v.journal, lifecycleEvents(v, index));
    const flaggedKeys = v.op === 'timeout' ? v.flagged : v.op === 'release' && v.flagged ? [v.key] : [];
    feed.applied(index, flaggedKeys.length > 0 ? { name: v.journal, keys: flaggedKeys } : undefined);
    count(v);
    const available = availableIn(v);
    if (available > 0) m.waiters.wake(v.journal, available);
    // A resumed journal's waiting claims may all have work again.
    if (v.op === 'pause' && !v.paused) m.waiters.wake(v.journal, Number.MAX_SAFE_INTEGER);
  };

  /** Per journal: items by status, due now (capped), the oldest due item's age, and what this member applied. */
  const metrics = async (): Promise<string> => {
    const journals = [...host.state().journals].filter(([, d]) => !d.dropping);
    const now = Math.max(clock(), Date.now());
    const lines: string[] = [];
    const gauge = (name: string, help: string, rows: Array<[string, string, number]>): void => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
      for (const [j, extra, n] of rows) lines.push(`${name}{journal="${j}"${extra}} ${n}`);
    };
    const counts = await Promise.all(journals.map(([name, d]) => countsNow(name, d)));
    gauge(
      'vera_journal_items',
      'Items in each journal by status (waiting, processing, flagged); expired ones not yet deleted count as absent.',
      journals.flatMap(([name], i): Array<[string, string, number]> => [
        [name, ',status="waiting"', counts[i]!.waiting],
        [name, ',status="processing"', counts[i]!.processing],
        [name, ',status="flagged"', counts[i]!.flagged],
      ]),
    );
    const due: Array<[string, string, number]> = [];
    const age: Array<[string, string, number]> = [];
    for (const [name, d] of journals) {
      const [n, earliest] = await host.reader.read(`journal ${name}`, async (db, snapshot) => [
        await countDue(db, snapshot, name, d, now, DUE_COUNT_CAP),
        await earliestProcessAt(db, snapshot, name, d),
      ]);
      due.push([name, '', n]);
      age.push([name, '', earliest === null || earliest > now ? 0 : (now - earliest) / 1000]);
    }
    gauge('vera_journal_due', `Waiting items due now (counted up to ${DUE_COUNT_CAP}).`, due);
    gauge('vera_journal_oldest_due_age_seconds', 'How long the earliest due Waiting item has been due (0 when none is).', age);
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
      for (const [j, c] of m.applied) lines.push(`${name}{journal="${j}"} ${c[field]}`);
    }
    return `${lines.join('\n')}\n`;
  };

  return {
    handlers,
    duties: [timeouts, expiry, drops, resultExpiry, schedules],
    http: [journalRoute(host)],
    applied,
    metrics,
    // A closing member holds nothing: what waits is answered at once (UNAVAILABLE, so clients go
    // elsewhere), and no timer is left to read the store after it closed.
    close: () => m.close(closingError('send it')),
    member: m,
  };
}

/**
 * GET /v1/journals (every journal), /v1/journals/NAME, /NAME/flagged, /NAME/items?status=S&after=C&limit=N,
 * /NAME/items/KEY, /NAME/results/KEY, /NAME/schedules: linearizable reads, as JSON.
 */
function journalRoute(host: Host): PluginRoute {
  const ops = JOURNAL_SCHEMAS;
  return {
    prefix: '/v1/journals',
    get: (rest, url) => {
      const parts = rest.split('/').filter((p) => p !== '').map(decodeURIComponent);
      if (parts.length === 0) return opRequest(ops.list, {}, host.limits);
      const name = parts[0]!;
      const limit = url.searchParams.get('limit');
      if (parts[1] === 'schedules' && parts.length === 2) return opRequest(ops.schedules, { name }, host.limits);
      if (parts[1] === 'items' && parts.length === 2) {
        const after = url.searchParams.get('after');
        const status = url.searchParams.get('status') ?? 'waiting';
        return opRequest(ops.items, { name, status, ...(after === null ? {} : { after }), ...(limit === null ? {} : { limit: Number(limit) }) }, host.limits);
      }
      if ((parts[1] === 'items' || parts[1] === 'results') && parts.length === 3) {
        return opRequest(parts[1] === 'items' ? ops.get : ops.result, { name, key: parts[2] }, host.limits);
      }
      if (parts.length > 2 || (parts.length === 2 && parts[1] !== 'flagged')) throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}`);
      if (parts.length === 1) return opRequest(ops.show, { name }, host.limits);
      return opRequest(ops.flagged, { name, ...(limit !== null ? { limit: Number(limit) } : {}) }, host.limits);
    },
  };
}

/** What each op touches: the journal it names ('journal:NAME'), or every journal ('journal:'). */
const one =
  (perm: PluginNeed['perm']) =>
  (r: { readonly name: string }): readonly PluginNeed[] => [{ perm, resource: `journal:${r.name}` }];

export const plugin: Plugin<Ops, JournalState, JournalValue, JournalCommand> = {
  ops: JOURNAL_SCHEMAS,
  needs: {
    create: one('admin'),
    configure: one('admin'),
    drop: one('admin'),
    requeue: one('admin'),
    forget: one('admin'),
    limits: () => [{ perm: 'admin', resource: 'journal:' }],
    list: () => [{ perm: 'read', resource: 'journal:' }],
    show: one('read'),
    flagged: one('read'),
    flags: one('watch'),
    events: one('watch'),
    add: one('write'),
    claim: one('write'),
    cancelWait: one('write'),
    extend: one('write'),
    done: one('write'),
    doneMany: one('write'),
    release: one('write'),
    progress: one('write'),
    // Removing one job is a producer's act, as adding it is.
    remove: one('write'),
    get: one('read'),
    items: one('read'),
    result: one('read'),
    pause: one('admin'),
    resume: one('admin'),
    drain: one('admin'),
    // Schedules make jobs on their own, uncharged: the journal's admins set them, its readers see them.
    schedule: one('admin'),
    unschedule: one('admin'),
    schedules: one('read'),
  },
  touchesNoLists: "a journal's items live in its own buckets, never in a list at a path",
  createServer,
};
