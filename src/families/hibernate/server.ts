// Hibernation on the server, written against the kit: freezing and thawing a unit
// by hand, listing the Frozen units, the thaw that any operation on a path in a
// Frozen unit waits for first (one thaw entry per unit however many requests
// arrive; they all wait for it, then run in the order they came), the idle
// detector (idle.ts), and the path guard through which the core runs all of this
// on every access path. One instance per member holds what the member keeps
// (member.ts). Metrics: units and bytes frozen, freezes and thaws, thaw time.
import { VeraError } from '../../protocol/index.js';
import { metricLines, type FamilyHost, type Plugin, type PluginPathGuard, type PluginServer } from '../../kit/index.js';
import { bucketRange } from '../../keys/index.js';
import { FROZEN_REFUSAL, type FreezeValue, type HibernateCommand, type HibernateValue } from './index.js';
import type { HibernateState } from './state.js';
import { drainingKey, freezingKey, HibernateBucket, unitKey, unitOfKey } from './keys.js';
import { decodeFreezing, decodeFrozen } from './records.js';
import { COLD_FILE_MOVED, frozenEntriesAt, frozenListsAt } from './held-reads.js';
import { HIBERNATE_SCHEMAS, MAX_FREEZE_PATHS, UNITS_PAGE, type FreezeResult, type FrozenUnitInfo, type UnitInfo, type UnitsPage } from './wire.js';
import { followersMargin, itemsWithin, StepPacer, STEP_BYTES } from './pacing.js';
import { newestIndexIn } from './freezing.js';
import { HibernateMember, type Thawed } from './member.js';
import { idleDetector, idleSettings, noteActivity, type IdleSettings, type IdleWork } from './idle.js';

type Ops = typeof HIBERNATE_SCHEMAS;
type Host = FamilyHost<HibernateState, HibernateValue, HibernateCommand>;
type ValueOf<O extends HibernateValue['op']> = Extract<HibernateValue, { readonly op: O }>;

/**
 * Hot entries one entry deletes at most (a commit, in all its units, or a dropHot step):
 * about 1,000 keys make a batch of well under a millisecond, so a 100,000-item unit's
 * freeze never holds the log for longer than an ordinary write does.
 */
export const HOT_STEP = 250;

function isValueOf<O extends HibernateValue['op']>(v: HibernateValue, op: O): v is ValueOf<O> {
  return v.op === op;
}

function freezeReply(v: FreezeValue): FreezeResult {
  return v.frozen ? { unit: v.unit, frozen: true, items: v.items, bytes: v.bytes } : { unit: v.unit, frozen: false, why: v.why };
}

async function* noLists(): AsyncGenerator<never> {}

/** Thaws running at once that a read may add to (see pathGuard.before). */
export const MAX_THAWS_BY_READS = 16;

/** Hibernation on one member: everything here is this member's, made by createServer and released by close. */
class Hibernation implements IdleWork {
  /** Read once, on first use (the host answers only once the member is open). */
  private settingsRead: IdleSettings | null | undefined;

  constructor(
    readonly host: Host,
    readonly member = new HibernateMember(),
  ) {}

  /** The same member's hibernation for its idle duty: its proposals are never forwarded (FamilyHost.leaderOnly). */
  asLeader(): Hibernation {
    return new Hibernation(this.host.leaderOnly, this.member);
  }

  get activity(): HibernateMember['activity'] {
    return this.member.activity;
  }

  get freezesInFlight(): ReadonlySet<string> {
    return this.member.freezesInFlight;
  }

  settings(): IdleSettings | null {
    if (this.settingsRead === undefined) this.settingsRead = idleSettings(this.host.settings());
    return this.settingsRead;
  }

  /** Proposes one of hibernation's commands and gives its value, which answers the same op. */
  async propose<O extends HibernateCommand['op']>(command: Extract<HibernateCommand, { readonly op: O }>): Promise<ValueOf<O>> {
    const v = await this.host.propose(command);
    if (!isValueOf<O>(v, command.op)) throw new VeraError('INTERNAL', `hibernate ${command.op} applied as ${v.op}`);
    return v;
  }

  /**
   * Thaws the Frozen unit `path` is in, if any (this member leading); true when it had to.
   * One thaw per unit at a time: later callers wait for the one in flight.
   */
  async thawFor(path: string): Promise<boolean> {
    const unit = this.host.state().unitOf(path);
    if (unit === null) return false;
    await this.thawOnce(unit);
    return true;
  }

  /** The unit's thaw, one at a time however many ask: later callers wait for the one in flight. */
  thawOnce(unit: string): Promise<Thawed> {
    const flights = this.member.thawing;
    let flight = flights.get(unit);
    if (flight === undefined) {
      const started = performance.now();
      const f = this.thawUnit(unit)
        .then((r) => {
          const c = this.member.counters;
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
   * A unit of up to HOT_STEP items (and a cold file of up to STEP_BYTES) thaws in one entry;
   * a larger one (or one a thaw in steps was begun on) in thawStep entries of HOT_STEP items
   * and STEP_BYTES at most, one after another, client writes
   * taking their turns in the log between them. The unit stays Frozen (read from its file)
   * until the last.
   */
  private async thawUnit(unit: string): Promise<Thawed> {
    const state = this.host.state();
    const record = state.frozen.get(unit);
    const items = record === undefined ? 0 : record.lists.reduce((n, l) => n + l.items, 0);
    // A unit whose file alone is over a step's bytes holds more than that once inflated: it thaws in steps too.
    if (record === undefined || (items <= HOT_STEP && record.bytes <= STEP_BYTES && !state.thawing.has(unit))) {
      const v = await this.propose({ op: 'thaw', unit });
      return { thawed: v.thawed, items: v.items };
    }
    // Every member reads and decodes its file (beside the log, in slices) before the first step, which would otherwise wait for it in apply.
    await this.propose({ op: 'thawBegin', unit, frozenAt: record.frozenAt });
    const reading = performance.now();
    const cold = await state.thawRead(unit, record.frozenAt).catch(() => undefined);
    // A step that reaches a follower still reading holds its log (and its acknowledgements) until it is done.
    await followersMargin(reading);
    const pace = new StepPacer();
    for (let from = state.thawing.get(unit) ?? 0; ; ) {
      // Bounded by bytes too, from this member's own read of the file (without it, by items alone: the step that needs the file stops the member).
      const step = cold === undefined ? HOT_STEP : itemsWithin(cold.entries, from, HOT_STEP);
      const v = await pace.step(() => this.propose({ op: 'thawStep', unit, frozenAt: record.frozenAt, from, step }));
      if (v.done) return { thawed: v.thawed, items: v.items };
      from = v.next;
    }
  }

  /** The newest item index among the unit's lists, read from the db (what a freeze is judged against). */
  private newestIn(unit: string): Promise<number> {
    return this.host.reader.read('hibernation newest', (db, snapshot) => newestIndexIn(db, unit, snapshot));
  }

  /**
   * Freezes `units` in two entries: `freezeUnits` marks the idle ones Freezing and every
   * member starts writing their files beside the log; once this member's files are durable,
   * `commitFreeze` freezes those still unchanged. One result per unit, in order.
   */
  async freezeMany(units: readonly string[]): Promise<FreezeValue[]> {
    const seen = await Promise.all(units.map((unit) => this.newestIn(unit)));
    const mine = this.member.freezesInFlight;
    for (const u of units) mine.add(u);
    try {
      const started = await this.propose({ op: 'freezeUnits', units: units.map((unit, n) => ({ unit, seen: seen[n]! })) });
      const freezing = started.units.filter((s) => s.freezing).map((s) => s.unit);
      const state = this.host.state();
      // The commit would wait for them anyway, with the whole log behind it.
      const writing = performance.now();
      await Promise.all(freezing.map((u) => state.writing.get(u)?.done.catch(() => 0)));
      // And on a follower still writing, the commit's apply waits for its files, holding its log
      // and its acknowledgements: leave the followers, which began with this member, a margin.
      await followersMargin(writing);
      const committed = freezing.length === 0 ? [] : await this.commitFreezes(freezing);
      return started.units.map((s): FreezeValue => (s.freezing ? committed.find((c) => c.unit === s.unit)! : { op: 'freeze', unit: s.unit, frozen: false, why: s.why }));
    } finally {
      for (const u of units) mine.delete(u);
    }
  }

  private async commitFreezes(units: readonly string[]): Promise<readonly FreezeValue[]> {
    const committed = await this.commitOnly(units);
    await this.drainAll(committed.filter((u) => u.frozen).map((u) => u.unit));
    return committed;
  }

  /** The commit entry alone: a unit larger than a step is Frozen and draining once it returns. */
  async commitOnly(units: readonly string[]): Promise<readonly FreezeValue[]> {
    return (await this.propose({ op: 'commitFreeze', units, step: HOT_STEP })).units;
  }

  /**
   * Deletes the hot entries the commit left of each draining unit, HOT_STEP per entry, one
   * entry at a time: client writes take their turn in the log between the steps.
   */
  async drainAll(units: readonly string[]): Promise<void> {
    const mine = this.member.drainsInFlight;
    const state = this.host.state();
    for (const unit of units) {
      if (mine.has(unit)) continue;
      mine.add(unit);
      try {
        // A thaw in steps that a leader change or a failure left unfinished: finish it.
        if (state.thawing.has(unit)) await this.thawOnce(unit);
        const pace = new StepPacer();
        for (;;) {
          const frozenAt = state.frozen.get(unit)?.frozenAt;
          if (!state.draining.has(unit) || frozenAt === undefined) break;
          const v = await pace.step(() => this.propose({ op: 'dropHot', unit, frozenAt, step: HOT_STEP }));
          if (v.done) break;
        }
      } finally {
        mine.delete(unit);
      }
    }
  }

  /** Draining or thawing units no one here is stepping through (begun by an earlier leader, or stopped by a failure). */
  leftoverDrains(): string[] {
    const state = this.host.state();
    if (state.draining.size === 0 && state.thawing.size === 0) return [];
    const mine = this.member.drainsInFlight;
    return [...state.draining, ...state.thawing.keys()].filter((u) => !mine.has(u)).slice(0, MAX_FREEZE_PATHS);
  }

  /** A page of the Frozen and Freezing units, read from the two buckets in key (path) order, never every unit at once. */
  unitsPage(after: string | undefined, limit: number): Promise<UnitsPage> {
    return this.host.reader.read('hibernation units', async (db, snapshot) => {
      const page = async <T>(bucket: number, key: (unit: string) => Buffer, view: (unit: string, value: Buffer) => T): Promise<Array<readonly [string, T]>> => {
        const range = bucketRange(bucket);
        const out: Array<readonly [string, T]> = [];
        for await (const [k, v] of db.iterator({ ...(after === undefined ? { gte: range.gte } : { gt: key(after) }), lt: range.lt, limit: limit + 1, snapshot })) out.push([unitOfKey(k), view(unitOfKey(k), v)]);
        return out;
      };
      const frozen = await page(HibernateBucket.unit, unitKey, (unit, v): FrozenUnitInfo => {
        const f = decodeFrozen(v);
        return { unit, state: 'frozen', frozenAt: f.frozenAt, bytes: f.bytes, items: f.lists.reduce((n, l) => n + l.items, 0), lists: f.lists.map((l) => ({ ...l })) };
      });
      const shown: Array<readonly [string, UnitInfo]> = [];
      for (const [unit, view] of frozen) shown.push([unit, (await db.get(drainingKey(unit), { snapshot })) === undefined ? view : { ...view, draining: true }]);
      const freezing = await page(HibernateBucket.freezing, freezingKey, (unit, v): UnitInfo => ({ unit, state: 'freezing', since: decodeFreezing(v).since }));
      const units = [...shown, ...freezing].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, u]) => u);
      return units.length > limit ? { units: units.slice(0, limit), next: units[limit - 1]!.unit } : { units };
    });
  }

  /** Counts what this member applied: freezes and thaws. */
  applied(v: HibernateValue | null): void {
    if (v === null) return;
    const c = this.member.counters;
    if (v.op === 'freeze' && v.frozen) c.freezes++;
    if (v.op === 'commitFreeze') c.freezes += v.units.filter((u) => u.frozen).length;
    if ((v.op === 'thaw' || v.op === 'thawStep') && v.thawed) c.thaws++;
  }

  metrics(): string {
    const state = this.host.state();
    const c = this.member.counters;
    const sorted = [...c.thawMs].sort((a, b) => a - b);
    const q = (p: number): number => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!);
    return [
      ...metricLines('vera_hibernate_units_frozen', 'gauge', 'Units in the cold store.', state.frozen.size),
      ...metricLines('vera_hibernate_units_freezing', 'gauge', 'Units whose freeze has begun and is not yet committed.', state.freezing.size),
      ...metricLines('vera_hibernate_cold_bytes', 'gauge', "Bytes of the Frozen units' cold files.", state.coldBytes),
      ...metricLines('vera_hibernate_compactions_total', 'counter', 'Compactions of the key span freezes deleted from, on this member since it started.', state.compactor.compactions),
      ...metricLines('vera_hibernate_freezes_total', 'counter', 'Units frozen, applied on this member since it started.', c.freezes),
      ...metricLines('vera_hibernate_thaws_total', 'counter', 'Units thawed, applied on this member since it started.', c.thaws),
      ...metricLines('vera_hibernate_thaw_ms', 'summary', 'Time from a request meeting a Frozen unit to its thaw being applied (this member as leader, last 1000 thaws).', [
        [{ quantile: '0.5' }, q(0.5).toFixed(3)],
        [{ quantile: '0.99' }, q(0.99).toFixed(3)],
      ]),
      `vera_hibernate_thaw_ms_count ${c.thawMs.length}`,
      '',
    ].join('\n');
  }

  /**
   * Hibernation's rule on every access to a path (the core runs it on every read, write,
   * watch, listing and resync). A use on the leader (a linearizable read, a write, a watch)
   * thaws the path's unit (a write or a watch first; a read meanwhile); a change ordered after a freeze the use did not see is
   * refused in apply, changing nothing, and asked again after the thaw. Reads never depend on
   * the thaw: at their own snapshot they take a Frozen list from its cold file, so a stale
   * read is served on any member without an entry (and without a quorum), and a read that
   * meets a freeze committing mid-flight answers as if the unit were hot. Listings (ls,
   * range.paths, a prefix resync's walk) take the Frozen lists from what stays hot and thaw nothing.
   */
  readonly pathGuard: PluginPathGuard = {
    before: async (access) => {
      if (access.use === 'list') return false;
      noteActivity(this, access.path);
      if (access.stale || !this.host.isLeader()) return false;
      // A read starts the thaw and goes on at once, reading the cold file at its snapshot as a
      // stale read does (the same items): a large unit's thaw is paced over seconds so as not
      // to slow everyone else, and a read need not wait for it. A change or a watch waits.
      // At most MAX_THAWS_BY_READS thaws at once on a read's account: a read no longer waits for the
      // thaw it starts, so a client reading many frozen units quickly would otherwise start a thaw
      // of each at once. Past that, the read still answers from the cold file; the unit thaws on a
      // later use (any write, or a read once fewer thaws run).
      if (access.use === 'read') {
        if (this.member.thawing.size < MAX_THAWS_BY_READS) void this.thawFor(access.path).catch(() => undefined);
        return false;
      }
      return this.thawFor(access.path);
    },
    refuses: (err) => err instanceof VeraError && err.code === 'CONFLICT' && (err.message.endsWith(FROZEN_REFUSAL) || err.message.endsWith(COLD_FILE_MOVED)),
    // Asked after the reader took its snapshot: a member that may hold no Frozen record has none in it.
    entriesAt: async (db, snapshot, path) => {
      const state = this.host.state();
      return state.mayHoldFrozen ? frozenEntriesAt(state.cold, db, snapshot, path, state.recentColdRead) : null;
    },
    childrenOf: (path) => this.host.state().frozenChildren(path),
    listsAt: (db, snapshot, prefix, after) => (this.host.state().mayHoldFrozen ? frozenListsAt(db, snapshot, prefix, after) : noLists()),
  };

  /** The server closes: no thaw, freeze or drain of this member is waited for or counted any more. */
  close(): void {
    this.member.thawing.clear();
    this.member.freezesInFlight.clear();
    this.member.drainsInFlight.clear();
  }
}

function createServer(host: Host): PluginServer<Ops, HibernateValue> {
  const h = new Hibernation(host);
  return {
    handlers: {
      freeze: async (r) => {
        await host.barrier();
        // One unit freezes in two entries as several do: its file is written beside the log, and
        // its hot entries deleted in steps, so a large unit never holds other writes behind it.
        if ('paths' in r) return { units: (await h.freezeMany(r.paths)).map(freezeReply) };
        return freezeReply((await h.freezeMany([r.path]))[0]!);
      },
      thaw: async ({ path }) => {
        // A path inside a Frozen unit (one of its lists below the unit) thaws that unit.
        const unit = host.state().unitOf(path) ?? path;
        const v = await h.thawOnce(unit);
        return { unit, thawed: v.thawed, items: v.items };
      },
      units: async ({ after, limit }) => {
        await host.barrier();
        return h.unitsPage(after, limit ?? UNITS_PAGE);
      },
    },
    duties: [idleDetector(h.asLeader())],
    applied: (_index, value) => h.applied(value),
    metrics: async () => h.metrics(),
    pathGuard: h.pathGuard,
    close: () => h.close(),
  };
}

/** Freezing and thawing are an administrator's decision about the lists of a unit; listing units shows paths. */
export const plugin: Plugin<Ops, HibernateState, HibernateValue, HibernateCommand> = {
  ops: HIBERNATE_SCHEMAS,
  needs: {
    freeze: (r) => ('paths' in r ? r.paths : [r.path]).map((path) => ({ perm: 'admin', resource: path })),
    thaw: ({ path }) => [{ perm: 'admin', resource: path }],
    units: () => [{ perm: 'read', resource: '/' }],
  },
  // As a read of '/' (what its need says): the path guard counts it as the clients' use, and thaws nothing (no unit holds '/').
  touches: { units: () => [{ path: '/', use: 'read', stale: false }] },
  touchesNoLists: "freeze and thaw move a unit's lists themselves, beside the path guard (which would thaw what a freeze moves)",
  createServer,
};
