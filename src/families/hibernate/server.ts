// Hibernation on the server: freezing and thawing a unit by hand, listing the
// Frozen units, and the thaw that any operation on a path in a Frozen unit
// waits for first (one thaw entry per unit however many requests arrive; they
// all wait for it, then run in the order they came). Metrics: units and bytes
// frozen, freezes and thaws, thaw time.
import { VeraError, type FamilyRequest, type FamilyResult } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import { expectOk } from '../../server/front/context.js';
import { familyOps, proposeTimed, type FamilyOpCall, type LeaderDuty, type PathGuard, type ServerPart } from '../../server/front/family-part.js';
import type { Need } from '../../server/guard/access.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import { FROZEN_REFUSAL, hibernate, type FreezeValue, type HibernateCommand, type HibernateValue } from './index.js';
import { childrenStep } from '../lists/queries.js';
import { bucketRange } from '../../keys/index.js';
import { drainingKey, freezingKey, HibernateBucket, unitKey, unitOfKey } from './keys.js';
import { decodeFreezing, decodeFrozen } from './records.js';
import { COLD_FILE_MOVED, frozenEntriesAt, frozenListsAt } from './held-reads.js';
import { HIBERNATE_OPS, MAX_FREEZE_PATHS, UNITS_PAGE } from './wire.js';
import { followersMargin, StepPacer } from './pacing.js';
import { newestIndexIn } from './freezing.js';
import { HibernateMember, type Activity, type Counters, type Thawed } from './member.js';

async function propose(fe: FrontEnd, command: HibernateCommand): Promise<HibernateValue> {
  const r = expectOk(await proposeTimed(fe, { family: 'hibernate', ...command } as never));
  if (r.op !== 'family' || r.family !== 'hibernate') throw new VeraError('INTERNAL', `hibernate ${command.op} applied as ${r.op}`);
  return r.value as HibernateValue;
}

const members = new WeakMap<FrontEnd, HibernateMember>();
/** Hibernation's state on the member `fe` serves (member.ts). */
function member(fe: FrontEnd): HibernateMember {
  let m = members.get(fe);
  if (m === undefined) members.set(fe, (m = new HibernateMember()));
  return m;
}

function counters(fe: FrontEnd): Counters {
  return member(fe).counters;
}

/**
 * Thaws the Frozen unit `path` is in, if any (this member leading); true when it had to.
 * One thaw per unit at a time: later callers wait for the one in flight.
 */
async function thawFor(fe: FrontEnd, path: string): Promise<boolean> {
  const unit = fe.node.stateMachine.stateOf(hibernate).unitOf(path);
  if (unit === null) return false;
  await thawOnce(fe, unit);
  return true;
}

/** The unit's thaw, one at a time however many ask: later callers wait for the one in flight. */
function thawOnce(fe: FrontEnd, unit: string): Promise<Thawed> {
  const flights = member(fe).thawing;
  let flight = flights.get(unit);
  if (flight === undefined) {
    const started = performance.now();
    const f = thawUnit(fe, unit)
      .then((r) => {
        const c = counters(fe);
        c.thawMs.push(performance.now() - started);
        if (c.thawMs.length > 1000) c.thawMs.shift();
        return r;
      })
      .finally(() => flights.delete(unit));
    flights.set(unit, f);
    flight = f;
  }
  return flight;
}

/**
 * A unit of up to HOT_STEP items thaws in one entry; a larger one (or one a thaw in steps
 * was begun on) in thawStep entries of HOT_STEP items, one after another, client writes
 * taking their turns in the log between them. The unit stays Frozen (read from its file)
 * until the last.
 */
async function thawUnit(fe: FrontEnd, unit: string): Promise<Thawed> {
  const state = fe.node.stateMachine.stateOf(hibernate);
  const record = state.frozen.get(unit);
  const items = record === undefined ? 0 : record.lists.reduce((n, l) => n + l.items, 0);
  if (record === undefined || (items <= HOT_STEP && !state.thawing.has(unit))) {
    const v = await propose(fe, { op: 'thaw', unit });
    if (v.op !== 'thaw') throw new VeraError('INTERNAL', 'a thaw gave another result');
    return { thawed: v.thawed, items: v.items };
  }
  // Every member reads and decodes its file (beside the log, in slices) before the first step, which would otherwise wait for it in apply.
  await propose(fe, { op: 'thawBegin', unit, frozenAt: record.frozenAt });
  const reading = performance.now();
  await state.thawRead(unit, record.frozenAt).catch(() => undefined);
  // A step that reaches a follower still reading holds its log (and its acknowledgements) until it is done.
  await followersMargin(reading);
  const pace = new StepPacer();
  for (let from = state.thawing.get(unit) ?? 0; ; ) {
    const v = await pace.step(() => propose(fe, { op: 'thawStep', unit, frozenAt: record.frozenAt, from, step: HOT_STEP }));
    if (v.op !== 'thawStep') throw new VeraError('INTERNAL', 'a thaw step gave another result');
    if (v.done) return { thawed: v.thawed, items: v.items };
    from = v.next;
  }
}

async function* noLists(): AsyncGenerator<never> {}

/**
 * Hibernation's rule on every access to a path (the core runs it: src/server/guard/path-guard.ts).
 * A use on the leader (a linearizable read, a write, a watch) thaws the path's unit first; a
 * change ordered after a freeze the use did not see is refused in apply, changing nothing,
 * and asked again after the thaw. Reads never depend on the thaw: at their own snapshot they
 * take a Frozen list from its cold file, so a stale read is served on any member without an
 * entry (and without a quorum), and a read that meets a freeze committing mid-flight answers
 * as if the unit were hot. Listings (ls, range.paths, a prefix resync's walk) take the Frozen
 * lists from what stays hot and thaw nothing.
 */
const pathGuard: PathGuard = {
  before: async (fe, access) => {
    if (access.use === 'list') return false;
    noteActivity(fe, access.path);
    if (access.stale || !fe.isLeader()) return false;
    return thawFor(fe, access.path);
  },
  refuses: (err) => err instanceof VeraError && err.code === 'CONFLICT' && (err.message.endsWith(FROZEN_REFUSAL) || err.message.endsWith(COLD_FILE_MOVED)),
  // Asked after the reader took its snapshot: a member that may hold no Frozen record has none in it.
  entriesAt: async (fe, db, snapshot, path) => {
    const state = fe.node.stateMachine.stateOf(hibernate);
    return state.mayHoldFrozen ? frozenEntriesAt(state.cold, db, snapshot, path, state.recentColdRead) : null;
  },
  childrenOf: (fe, path) => fe.node.stateMachine.stateOf(hibernate).frozenChildren(path),
  listsAt: (fe, db, snapshot, prefix, after) => (fe.node.stateMachine.stateOf(hibernate).mayHoldFrozen ? frozenListsAt(db, snapshot, prefix, after) : noLists()),
};

/** The newest item index among the unit's lists, read from the db (what a freeze is judged against). */
async function newestIn(fe: FrontEnd, unit: string): Promise<number> {
  return fe.node.stateMachine.read('hibernation newest', (db, snapshot) => newestIndexIn(db, unit, snapshot));
}

/** Units this member (as leader) is freezing right now: the idle detector leaves their commits to whoever began them. */
function inFlight(fe: FrontEnd): Set<string> {
  return member(fe).freezesInFlight;
}

/**
 * Freezes `units` in two entries: `freezeUnits` marks the idle ones Freezing and every
 * member starts writing their files beside the log; once this member's files are durable,
 * `commitFreeze` freezes those still unchanged. One result per unit, in order.
 */
async function freezeMany(fe: FrontEnd, units: readonly string[]): Promise<FreezeValue[]> {
  const seen = await Promise.all(units.map((unit) => newestIn(fe, unit)));
  const mine = inFlight(fe);
  for (const u of units) mine.add(u);
  try {
    const started = await propose(fe, { op: 'freezeUnits', units: units.map((unit, n) => ({ unit, seen: seen[n]! })) });
    if (started.op !== 'freezeUnits') throw new VeraError('INTERNAL', 'a freeze gave another result');
    const freezing = started.units.filter((s) => s.freezing).map((s) => s.unit);
    const state = fe.node.stateMachine.stateOf(hibernate);
    // The commit would wait for them anyway, with the whole log behind it.
    const writing = performance.now();
    await Promise.all(freezing.map((u) => state.writing.get(u)?.done.catch(() => 0)));
    // And on a follower still writing, the commit's apply waits for its files, holding its log
    // and its acknowledgements: leave the followers, which began with this member, a margin.
    await followersMargin(writing);
    const committed = freezing.length === 0 ? [] : await commitFreezes(fe, freezing);
    return started.units.map((s) => (s.freezing ? committed.find((c) => c.unit === s.unit)! : { op: 'freeze', unit: s.unit, frozen: false, why: s.why }));
  } finally {
    for (const u of units) mine.delete(u);
  }
}

/**
 * Hot entries one entry deletes at most (a commit, in all its units, or a dropHot step):
 * about 1,000 keys make a batch of well under a millisecond, so a 100,000-item unit's
 * freeze never holds the log for longer than an ordinary write does.
 */
export const HOT_STEP = 250;

async function commitFreezes(fe: FrontEnd, units: readonly string[]): Promise<readonly FreezeValue[]> {
  const committed = await commitOnly(fe, units);
  await drainAll(fe, committed.filter((u) => u.frozen).map((u) => u.unit));
  return committed;
}

/** The commit entry alone: a unit larger than a step is Frozen and draining once it returns. */
async function commitOnly(fe: FrontEnd, units: readonly string[]): Promise<readonly FreezeValue[]> {
  const v = await propose(fe, { op: 'commitFreeze', units, step: HOT_STEP });
  if (v.op !== 'commitFreeze') throw new VeraError('INTERNAL', 'a freeze commit gave another result');
  return v.units;
}

/**
 * Deletes the hot entries the commit left of each draining unit, HOT_STEP per entry, one
 * entry at a time: client writes take their turn in the log between the steps.
 */
async function drainAll(fe: FrontEnd, units: readonly string[]): Promise<void> {
  const mine = member(fe).drainsInFlight;
  const state = fe.node.stateMachine.stateOf(hibernate);
  for (const unit of units) {
    if (mine.has(unit)) continue;
    mine.add(unit);
    try {
      // A thaw in steps that a leader change or a failure left unfinished: finish it.
      if (state.thawing.has(unit)) await thawOnce(fe, unit);
      const pace = new StepPacer();
      for (;;) {
        const frozenAt = state.frozen.get(unit)?.frozenAt;
        if (!state.draining.has(unit) || frozenAt === undefined) break;
        const v = await pace.step(() => propose(fe, { op: 'dropHot', unit, frozenAt, step: HOT_STEP }));
        if (v.op !== 'dropHot' || v.done) break;
      }
    } finally {
      mine.delete(unit);
    }
  }
}

/** Draining or thawing units no one here is stepping through (begun by an earlier leader, or stopped by a failure). */
function leftoverDrains(fe: FrontEnd): string[] {
  const state = fe.node.stateMachine.stateOf(hibernate);
  if (state.draining.size === 0 && state.thawing.size === 0) return [];
  const mine = member(fe).drainsInFlight;
  return [...state.draining, ...state.thawing.keys()].filter((u) => !mine.has(u)).slice(0, MAX_FREEZE_PATHS);
}

function freezeReply(v: FreezeValue): FamilyResult {
  return v.frozen ? { unit: v.unit, frozen: true, items: v.items, bytes: v.bytes } : { unit: v.unit, frozen: false, why: v.why };
}

type Handler = (call: FamilyOpCall) => Promise<FamilyResult>;

const handlers: Record<string, Handler> = {
  'hibernate.freeze': async ({ fe, request: r }) => {
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    // One unit freezes in two entries as several do: its file is written beside the log, and
    // its hot entries deleted in steps, so a large unit never holds other writes behind it.
    if (r.paths === undefined) return freezeReply((await freezeMany(fe, [r.path as string]))[0]!);
    const v = await freezeMany(fe, r.paths as string[]);
    return { units: v.map(freezeReply) };
  },
  'hibernate.thaw': async ({ fe, request: r }) => {
    // A path inside a Frozen unit (one of its lists below the unit) thaws that unit.
    const unit = fe.node.stateMachine.stateOf(hibernate).unitOf(r.path as string) ?? (r.path as string);
    const v = await thawOnce(fe, unit);
    return { unit, thawed: v.thawed, items: v.items };
  },
  'hibernate.units': async ({ fe, request: r }) => {
    await fe.node.linearizableBarrier(fe.readTimeoutMs);
    const limit = (r.limit as number | undefined) ?? UNITS_PAGE;
    const after = r.after as string | undefined;
    // A page read from the two buckets in key (path) order, never every unit at once.
    return fe.node.stateMachine.read('hibernation units', async (db, snapshot) => {
      const page = async <T>(bucket: number, key: (unit: string) => Buffer, view: (unit: string, value: Buffer) => T): Promise<Array<readonly [string, T]>> => {
        const range = bucketRange(bucket);
        const out: Array<readonly [string, T]> = [];
        for await (const [k, v] of db.iterator({ ...(after === undefined ? { gte: range.gte } : { gt: key(after) }), lt: range.lt, limit: limit + 1, snapshot })) out.push([unitOfKey(k), view(unitOfKey(k), v)]);
        return out;
      };
      const frozen = await page(HibernateBucket.unit, unitKey, (unit, v) => {
        const f = decodeFrozen(v);
        return { unit, state: 'frozen', frozenAt: f.frozenAt, bytes: f.bytes, items: f.lists.reduce((n, l) => n + l.items, 0), lists: f.lists.map((l) => ({ ...l })) } as Record<string, unknown>;
      });
      for (const [unit, view] of frozen) if ((await db.get(drainingKey(unit), { snapshot })) !== undefined) view.draining = true;
      const freezing = await page(HibernateBucket.freezing, freezingKey, (unit, v) => ({ unit, state: 'freezing', since: decodeFreezing(v).since }));
      const units = [...frozen, ...freezing].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, u]) => u);
      return units.length > limit ? { units: units.slice(0, limit), next: units[limit - 1]!.unit } : { units };
    });
  },
};

function onApplied(outcome: ApplyOutcome, fe: FrontEnd): void {
  const r = outcome.result;
  if (!r.ok || r.op !== 'family' || r.family !== 'hibernate') return;
  const v = r.value as HibernateValue;
  if (v.op === 'freeze' && v.frozen) counters(fe).freezes++;
  if (v.op === 'commitFreeze') counters(fe).freezes += v.units.filter((u) => u.frozen).length;
  if ((v.op === 'thaw' || v.op === 'thawStep') && v.thawed) counters(fe).thaws++;
}

async function metrics(fe: FrontEnd): Promise<string> {
  const state = fe.node.stateMachine.stateOf(hibernate);
  const c = counters(fe);
  const sorted = [...c.thawMs].sort((a, b) => a - b);
  const q = (p: number): number => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);
  return [
    '# HELP vera_hibernate_units_frozen Units in the cold store.',
    '# TYPE vera_hibernate_units_frozen gauge',
    `vera_hibernate_units_frozen ${state.frozen.size}`,
    '# HELP vera_hibernate_units_freezing Units whose freeze has begun and is not yet committed.',
    '# TYPE vera_hibernate_units_freezing gauge',
    `vera_hibernate_units_freezing ${state.freezing.size}`,
    '# HELP vera_hibernate_cold_bytes Bytes of the Frozen units\' cold files.',
    '# TYPE vera_hibernate_cold_bytes gauge',
    `vera_hibernate_cold_bytes ${state.coldBytes}`,
    '# HELP vera_hibernate_compactions_total Compactions of the key span freezes deleted from, on this member since it started.',
    '# TYPE vera_hibernate_compactions_total counter',
    `vera_hibernate_compactions_total ${state.compactor.compactions}`,
    '# HELP vera_hibernate_freezes_total Units frozen, applied on this member since it started.',
    '# TYPE vera_hibernate_freezes_total counter',
    `vera_hibernate_freezes_total ${c.freezes}`,
    '# HELP vera_hibernate_thaws_total Units thawed, applied on this member since it started.',
    '# TYPE vera_hibernate_thaws_total counter',
    `vera_hibernate_thaws_total ${c.thaws}`,
    '# HELP vera_hibernate_thaw_ms Time from a request meeting a Frozen unit to its thaw being applied (this member as leader, last 1000 thaws).',
    '# TYPE vera_hibernate_thaw_ms summary',
    `vera_hibernate_thaw_ms{quantile="0.5"} ${q(0.5).toFixed(3)}`,
    `vera_hibernate_thaw_ms{quantile="0.99"} ${q(0.99).toFixed(3)}`,
    `vera_hibernate_thaw_ms_count ${c.thawMs.length}`,
    '',
  ].join('\n');
}

// ---------------------------------------------------------------- the idle detector

/** What the leader knows of recent use (member.ts). */
function activity(fe: FrontEnd): Activity {
  return member(fe).activity;
}

/** Above this many path operations in a tick the clients are busy: no freeze competes with them. */
const BUSY_OPS_PER_TICK = 500;
/** Units frozen per tick at most (in one entry). */
const FREEZES_PER_TICK = 8;
/** Children of a root looked at per tick: a root of millions of units is walked in steps. */
const CHILDREN_PER_TICK = 1000;

/** The unit a path belongs to under the configured roots (`/users/alice/x` -> `/users/alice`), or null. */
export function unitUnderRoots(roots: readonly string[], path: string): string | null {
  for (const root of roots) {
    if (!path.startsWith(`${root}/`)) continue;
    const cut = path.indexOf('/', root.length + 1);
    return cut < 0 ? path : path.slice(0, cut);
  }
  return null;
}

function noteActivity(fe: FrontEnd, path: string): void {
  if (fe.hibernation === null) return;
  const a = activity(fe);
  a.opsThisTick++;
  const unit = unitUnderRoots(fe.hibernation.roots, path);
  if (unit !== null) a.lastUse.set(unit, Date.now());
}

/**
 * Freezes units idle longer than the configured period, a bounded batch per tick, and
 * none while the clients are busy. A unit never touched since this member began to lead
 * counts as used when it began (a new leader knows no history: it waits a full period).
 */
async function freezeIdle(fe: FrontEnd): Promise<void> {
  const config = fe.hibernation!;
  const a = activity(fe);
  const now = Date.now();
  const idle: string[] = [];
  for (const root of config.roots) {
    const step = await childrenStep(fe.node.stateMachine, root, a.cursor.get(root) ?? null, CHILDREN_PER_TICK);
    // The next tick goes on from there; a unit passed over for the freeze budget comes round again on the next walk.
    if (step.next === null) a.cursor.delete(root);
    else a.cursor.set(root, step.next);
    for (const name of step.names) {
      if (idle.length >= FREEZES_PER_TICK) break;
      const unit = `${root}/${name}`;
      if (fe.node.stateMachine.stateOf(hibernate).frozen.has(unit)) continue;
      if (now - (a.lastUse.get(unit) ?? a.leadingSince) >= config.afterMs) idle.push(unit);
    }
  }
  if (idle.length === 0 || !fe.isLeader()) return;
  // One entry for the tick's units: one pause of the apply pipeline, their files written in parallel.
  const values = await freezeMany(fe, idle);
  for (const v of values) {
    // Frozen, or not freezable now (ephemeral items, too large): either way, look again a period later.
    a.lastUse.set(v.unit, Date.now());
    if (v.frozen) fe.logger.info({ event: 'hibernate.frozen', unit: v.unit, items: v.items, bytes: v.bytes }, `hibernated ${v.unit}`);
  }
}

/** Freezes begun and never committed (by an earlier leader, or a member that crashed between the two entries). */
function leftoverFreezes(fe: FrontEnd): string[] {
  const freezing = fe.node.stateMachine.stateOf(hibernate).freezing;
  if (freezing.size === 0) return [];
  const mine = inFlight(fe);
  const leftover: string[] = [];
  for (const unit of freezing.keys()) {
    if (leftover.length === MAX_FREEZE_PATHS) break;
    if (!mine.has(unit)) leftover.push(unit);
  }
  return leftover;
}

async function commitLeftovers(fe: FrontEnd, units: readonly string[]): Promise<void> {
  const committed = await commitOnly(fe, units);
  // Said once committed: the spaced steps that drain a large unit may take a while yet.
  for (const v of committed) {
    if (v.frozen) fe.logger.info({ event: 'hibernate.frozen', unit: v.unit, items: v.items, bytes: v.bytes }, `hibernated ${v.unit} (a freeze begun earlier)`);
  }
  await drainAll(fe, committed.filter((u) => u.frozen).map((u) => u.unit));
}

const idleDetector: LeaderDuty = {
  name: 'hibernate-idle',
  periodMs: 1000,
  start: (fe) => {
    const a = activity(fe);
    a.leadingSince = Date.now();
    a.lastUse.clear();
    a.cursor.clear();
  },
  tick: (fe) => {
    const a = activity(fe);
    const busy = a.opsThisTick > BUSY_OPS_PER_TICK;
    a.opsThisTick = 0;
    if (a.running) return;
    const leftover = leftoverFreezes(fe);
    const drains = leftover.length === 0 ? leftoverDrains(fe) : [];
    // A freeze begun and not committed, or committed and not drained, is finished even without an idle detector (one begun by hand).
    if (leftover.length === 0 && drains.length === 0 && (fe.hibernation === null || busy)) return;
    a.running = true;
    (leftover.length > 0 ? commitLeftovers(fe, leftover) : drains.length > 0 ? drainAll(fe, drains) : freezeIdle(fe))
      .catch((err: unknown) => fe.logger.warn({ event: 'hibernate.idleFailed', err: String(err) }, 'the idle detector could not freeze a unit; it tries again'))
      .finally(() => (a.running = false));
  },
};

/** Freezing and thawing are an administrator's decision about the lists of a unit; listing units shows paths. */
const NEEDS: Record<string, (r: FamilyRequest) => readonly Need[]> = {
  'hibernate.freeze': (r) => (Array.isArray(r.paths) ? (r.paths as string[]) : [r.path as string]).map((path) => ({ perm: 'admin' as const, resource: path })),
  'hibernate.thaw': (r) => [{ perm: 'admin', resource: r.path as string }],
  'hibernate.units': () => [{ perm: 'read', resource: '/' }],
};

const protocolOps = familyOps('hibernate', HIBERNATE_OPS, handlers, NEEDS);

export const server: ServerPart = { protocolOps, onApplied, metrics, pathGuard, duties: [idleDetector] };
