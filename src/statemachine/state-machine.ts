// The replicated Vera data model. Committed Raft entries go in through
// apply()/applyMany(); each entry's state changes are written in the same
// LevelDB batch as an applied index covering it (a run of entries may share one),
// so after a crash the state is exactly "all entries up to the stored applied
// index" and replay resumes right after it. Batches are not synced: the synced
// Raft log is the durable record.
import type { Entry } from '../raft/types.js';
import { internalPropertyKey } from '../keys/index.js';
import { CommandError, failure, UnknownCommandError, type AnyFamily, type BatchOp, type Registry, type Family, type Plan, type PlanContext, type States, NO_USER_LEDGER, type JoinedPlan, type UserLedger } from './family.js';
import { encodeAppliedValue, encodeClockValue, decodeClockValue } from './codec.js';
import { PendingReads, type PlanReads } from './pending-reads.js';
import { ConfigChangeError, decodeConfigChange } from '../raft/config.js';
import { decodeMembers, encodeMembers, MEMBERS_KEY, membersAfter, type Member } from './members.js';
import { APPLIED_KEY, digestState, readApplied, type DbSnapshot } from './applied.js';
import { StateMachineError, type ApplyError, type ApplyOutcome, type VeraDb } from './types.js';
import { CorruptValueError, corruptValueIn } from '../raft/checked-values.js';
import { writeBatch } from './write-batch.js';

/** The replicated clock (see PlanContext.now), kept only once an entry has moved it. */
export const CLOCK_KEY: Buffer = internalPropertyKey('clock');

export class StateMachine {
  // Applies run strictly one after another: each plans against the state the previous one wrote.
  private queue: Promise<unknown> = Promise.resolve();
  /** Settles once a replacement of the whole state (replaceUnderneath) is over; null when none runs. */
  private replacing: Promise<void> | null = null;
  /**
   * Settles once the batch being written is in the db; null when none is. Its entries were
   * reported (answered) when the write began: every read waits for it first (see settled()).
   */
  private writing: Promise<void> | null = null;
  /** A batch whose entries were reported before it failed, until a later batch writes them (noteWriting). */
  private failedWrite: { readonly error: unknown; readonly through: number } | null = null;

  private constructor(
    private readonly db: VeraDb,
    /** Every registered family, in registry order, and the entry codec: what the kernel applies entries through. */
    private readonly registry: Registry,
    private states: FamilyStates,
    private applied: number,
    private book: readonly Member[],
    /** The replicated clock: the largest proposer time of any entry applied (ms). */
    private now: number,
  ) {
    this.guarding = registry.families.filter((f) => f.listGuard !== undefined);
    this.joins = joinsOf(registry.families);
  }

  /** Every family's additions to other families' ops (Family.joins), by the family and op they join, in registry order. */
  private readonly joins: ReadonlyMap<AnyFamily, ReadonlyMap<string, readonly JoinedPlan[]>>;

  /** The families that hold a list guard (Family.listGuard), in registry order: looked up once, not per entry. */
  private readonly guarding: readonly AnyFamily[];

  /**
   * Loads the applied index and the families' in-memory indexes from an open db.
   * `registry` is src/families/registry.ts's REGISTRY: handed in, so the kernel
   * knows no family by name.
   */
  static async open(db: VeraDb, registry: Registry): Promise<StateMachine> {
    const { states, applied, book, now } = await loadFrom(db, registry.families);
    return new StateMachine(db, registry, states, applied, book, now);
  }

  get appliedIndex(): number {
    return this.applied;
  }

  /**
   * Re-reads everything from the db, after it was replaced underneath us
   * (e.g. a snapshot was installed). Waits for applies in progress.
   */
  reload(): Promise<void> {
    return this.serially(() => this.reloadNow());
  }

  /**
   * Runs `replace`, which rewrites the db underneath us in several batches (a
   * snapshot install), then reloads. Applies and reads wait meanwhile, so no
   * query ever sees a half-replaced state.
   */
  replaceUnderneath(replace: () => Promise<void>): Promise<void> {
    const done = this.serially(async () => {
      try {
        await replace();
      } finally {
        await this.reloadNow();
      }
    });
    const gate = done.catch(() => undefined);
    this.replacing = gate;
    void gate.then(() => {
      if (this.replacing === gate) this.replacing = null;
    });
    return done;
  }

  private async reloadNow(): Promise<void> {
    const { states, applied, book, now } = await loadFrom(this.db, this.registry.families);
    this.states = states;
    this.applied = applied;
    this.book = book;
    this.now = now;
  }

  /**
   * Applies one committed entry. Entries must come in index order; one at or
   * below the applied index is ignored (replay after a restart), a gap throws.
   */
  async apply(entry: Entry): Promise<ApplyOutcome> {
    const [outcome] = await this.applyMany([entry]);
    return outcome!;
  }

  /**
   * Applies committed entries in index order and writes them in as few LevelDB
   * batches as it can: one per run of entries that plan from memory alone; the
   * others go alone (see goesAlone). `onPlanned` sees each outcome once the
   * entry's in-memory state has moved (e.g. to decide who watched its events;
   * the next entry plans against that state); `onWritten` sees it, in order, as
   * soon as the batch holding it goes to the db, so it can be answered at once
   * (every read waits for that batch to be in: settled()).
   */
  applyMany(entries: readonly Entry[], hooks: ApplyHooks = {}): Promise<ApplyOutcome[]> {
    return this.serially(async () => {
      try {
        return await this.applyNow(entries, hooks);
      } catch (err) {
        // Planned entries moved the in-memory indexes ahead of what was written: go back to the db's word.
        await this.reloadNow();
        throw err;
      }
    });
  }

  private async applyNow(entries: readonly Entry[], hooks: ApplyHooks): Promise<ApplyOutcome[]> {
    const outcomes: ApplyOutcome[] = [];
    let unwritten: ApplyOutcome[] = [];
    let ops: BatchOp[] = [];
    let opsBytes = 0; // keys and values in `ops`: a batch is bounded by bytes as well as by ops
    let written: Array<() => void> | null = null; // the planned entries' Plan.written, run once their batch is in (rare: made when needed)
    const reads = new PendingReads(this.db, () => ops); // what an entry sharing the batch reads: the db plus `ops`
    let planned = this.applied; // the last index planned; written once the batch is
    let writtenClock = this.now; // the clock the db holds
    const report = (): void => {
      const done = unwritten;
      unwritten = [];
      for (const outcome of done) hooks.onWritten?.(outcome);
    };
    const write = async (): Promise<void> => {
      if (planned === this.applied) {
        report();
        return;
      }
      ops.push({ type: 'put', key: APPLIED_KEY, value: encodeAppliedValue(planned) });
      if (this.now !== writtenClock) ops.push({ type: 'put', key: CLOCK_KEY, value: encodeClockValue(this.now) });
      const batch = writeBatch(this.db, ops);
      this.noteWriting(batch, planned);
      ops = [];
      opsBytes = 0;
      const whenWritten = written;
      written = null;
      // Reported as the batch goes to LevelDB, not once it is in: a reply does not wait for the
      // thread pool's trip, and every read waits for the batch first (settled()), so whoever is
      // answered or notified still reads the entry. Its state is as durable as it will be either
      // way: the batch is not synced; the entry is committed in the synced Raft log.
      report();
      await batch;
      this.applied = planned;
      writtenClock = this.now;
      if (whenWritten !== null) for (const step of whenWritten) step();
    };
    const settled = (outcome: ApplyOutcome): void => {
      outcomes.push(outcome);
      hooks.onPlanned?.(outcome);
      unwritten.push(outcome);
    };
    for (const entry of entries) {
      if (entry.index <= planned) {
        settled({ index: entry.index, ignored: true, result: { ok: true, op: 'noop' }, events: [] });
        continue;
      }
      if (entry.index !== planned + 1) {
        throw new StateMachineError('OUT_OF_ORDER', `entry ${entry.index} does not follow applied index ${planned}`);
      }
      let decoded: DecodedEntry;
      try {
        decoded = decodeEntry(entry, this.registry);
      } catch (err) {
        // A command this member cannot apply: write what came before it, then stop.
        if (err instanceof UnknownCommandError) await write();
        throw err;
      }
      // An entry that reads the db, ends a session or changes the membership goes alone, as
      // every entry once did: what was planned before it is written first, and its own
      // in-memory changes show only once it is written too.
      const alone = goesAlone(decoded, this.states);
      if (alone || ops.length >= MAX_BATCH_OPS || opsBytes >= MAX_BATCH_BYTES) await write();
      const plan = await this.plan(entry, decoded, reads);
      planned = entry.index;
      // A loop, not a spread: a closeSession plan holds one op per item the session owned.
      if ('ops' in plan) {
        for (const op of plan.ops) {
          ops.push(op);
          opsBytes += op.key.byteLength + (op.type === 'put' ? op.value.byteLength : 0);
        }
        if (plan.written !== undefined) for (const step of plan.written) (written ??= []).push(step);
      }
      if (alone) await write();
      if ('ops' in plan) for (const update of plan.after) update();
      const outcome: ApplyOutcome =
        'ops' in plan
          ? { index: entry.index, ignored: false, result: plan.result, events: plan.events }
          : { index: entry.index, ignored: false, result: plan, events: [] };
      // A forwarded write's request id travels with its outcome; other outcomes keep their shape.
      settled(decoded.kind === 'command' && decoded.r !== undefined ? { ...outcome, r: decoded.r } : outcome);
      if (alone) report();
    }
    await write();
    return outcomes;
  }

  private async plan(entry: Entry, decoded: DecodedEntry, reads: PlanReads): Promise<Plan | ApplyError> {
    switch (decoded.kind) {
      case 'config':
        return this.planConfig(entry);
      case 'noop':
        return { result: { ok: true, op: 'noop' }, ops: [], events: [], after: [] };
      case 'bad':
        return decoded.error;
      case 'command': {
        // The clock never goes back, whatever the proposer's: every member computes the same value.
        if (decoded.t > this.now) this.now = decoded.t;
        const ctx: PlanContext = { db: this.db, reads, states: this.states, index: entry.index, now: this.now, families: this.registry.families };
        const refused = listGuardRefusal(decoded.family, decoded.command, this.states, this.guarding);
        if (refused !== null) return withSettledShares(refused, this.states, this.registry.families);
        const joined = withJoins(await decoded.family.plan(decoded.command, ctx), decoded, ctx, this.joins);
        const plan = withGuardedChanges(joined, decoded.family, this.states, this.guarding);
        return withSettledShares(plan, this.states, this.registry.families);
      }
    }
  }

  /** A membership change: the address book follows the core's configuration (see members.ts). */
  private planConfig(entry: Entry): Plan {
    const plan: Plan = { result: { ok: true, op: 'config' }, ops: [], events: [], after: [] };
    let next: Member[] | null;
    try {
      next = membersAfter(this.book, decodeConfigChange(entry.data));
    } catch (err) {
      if (err instanceof ConfigChangeError) return plan; // the core ignores it too
      throw err;
    }
    if (next === null) return plan;
    const book = next;
    return { ...plan, ops: [{ type: 'put', key: MEMBERS_KEY, value: encodeMembers(book) }], after: [() => (this.book = book)] };
  }

  /**
   * Reads wait for `batch` from now until it settles. If it fails, every read fails from then
   * on (not only those waiting): its writers may have been answered, so the older state is no
   * answer, until a later batch has written every entry it held (the member stops anyway: a
   * failed apply is fatal to the driver; a test may apply the entries again).
   */
  private noteWriting(batch: Promise<void>, through: number): void {
    this.writing = batch;
    batch.then(
      () => {
        if (this.writing === batch) this.writing = null;
        if (this.failedWrite !== null && through >= this.failedWrite.through) this.failedWrite = null;
      },
      (error: unknown) => {
        if (this.writing === batch) this.writing = null;
        this.failedWrite = { error, through };
      },
    );
  }

  /**
   * Resolves once every entry reported so far (onWritten) is in the db and no replacement
   * of the whole state runs (rejects if that batch failed, or an earlier one that nothing
   * has written again since): what a read must wait for before it takes its snapshot. Only
   * the batch in flight now is waited for, not later ones: a steady stream of applies does
   * not hold a read back.
   */
  async settled(): Promise<void> {
    if (this.writing !== null) await this.writing;
    if (this.failedWrite !== null) throw this.failedWrite.error;
    while (this.replacing !== null) await this.replacing;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.catch(() => undefined); // one failed apply must not wedge the ones after it
    return run;
  }

  // ---------------------------------------------------------------- queries

  private async withSnapshot<T>(read: (snapshot: ReturnType<VeraDb['snapshot']>) => Promise<T>, what = 'the state'): Promise<T> {
    await this.settled();
    const snapshot = this.db.snapshot();
    try {
      return await read(snapshot);
    } catch (error) {
      throw readFailure(what, error);
    } finally {
      await snapshot.close();
    }
  }

  /**
   * A family's read of the db: from one LevelDB snapshot, with the applied index it
   * reflects (waiting out a replacement of the whole state, as every query does).
   */
  read<T>(what: string, read: (db: VeraDb, snapshot: ReturnType<VeraDb['snapshot']>, index: number) => Promise<T>): Promise<T> {
    return this.withSnapshot(async (snapshot) => read(this.db, snapshot, await readApplied(this.db, snapshot)), what);
  }

  /**
   * A family's read made of synchronous point reads (getSync), from one LevelDB snapshot:
   * it runs before this returns unless a batch already answered is still being written or
   * the whole state is being replaced (settled()), and neither the
   * applied index nor the snapshot's close costs a trip to LevelDB's thread pool (the
   * close runs in the background). For a hot path whose answer needs no index.
   */
  async readNow<T>(what: string, read: (db: VeraDb, snapshot: ReturnType<VeraDb['snapshot']>) => T): Promise<T> {
    if (this.writing !== null || this.replacing !== null || this.failedWrite !== null) await this.settled();
    const snapshot = this.db.snapshot();
    try {
      return read(this.db, snapshot);
    } catch (error) {
      throw readFailure(what, error);
    } finally {
      void snapshot.close().catch(() => undefined);
    }
  }

  /**
   * Rewrites the whole db so the space of deleted keys is given back (what etcd's defrag
   * does): LevelDB otherwise reclaims it only when it compacts those files for other reasons.
   */
  async compactAll(): Promise<void> {
    await this.db.compactRange(Buffer.alloc(1, 0x00), Buffer.alloc(64, 0xff));
  }

  /** A family's in-memory state as of the applied index, for its reads. */
  stateOf<S>(family: Family<never, S>): S {
    return this.states.of(family);
  }

  /** What each user stores, as of the applied index (the ledger's family keeps it; none: nothing). */
  get users(): Pick<UserLedger, 'of'> {
    const ledger = this.states.users;
    return { of: (user) => ledger.of(user) };
  }

  /**
   * The replicated clock (ms; 0 before any entry carried one): as of the applied
   * index once applies settle; during one, as of the entries planned so far.
   */
  get clock(): number {
    return this.now;
  }

  /**
   * The replicated address book as of the applied index, sorted by id (empty for a
   * joining store). A new array whenever a config entry changed it, the same one otherwise.
   */
  members(): readonly Member[] {
    return this.book;
  }

  /** sha256 of every family bucket (0x0003 on); equal on peers that applied the same entries. */
  digest(): Promise<string> {
    return digestState(this.db);
  }
}

function joinsOf(families: readonly AnyFamily[]): Map<AnyFamily, Map<string, JoinedPlan[]>> {
  const out = new Map<AnyFamily, Map<string, JoinedPlan[]>>();
  for (const family of families) {
    for (const [target, join] of Object.entries(family.joins ?? {})) {
      const [name, op] = target.split('.');
      const joined = families.find((f) => f.name === name);
      if (joined === undefined || op === undefined || !Object.hasOwn(joined.ops, op)) throw new Error(`the ${family.name} family joins ${target}, which is no registered family's op`);
      let byOp = out.get(joined);
      if (byOp === undefined) out.set(joined, (byOp = new Map()));
      byOp.set(op, [...(byOp.get(op) ?? []), join]);
    }
  }
  return out;
}

/** The plan with what other families add to its op (Family.joins), in registry order; the first refusal refuses the entry. */
function withJoins(plan: Plan | ApplyError, decoded: { readonly family: AnyFamily; readonly command: { readonly op: string } }, ctx: PlanContext, joins: ReadonlyMap<AnyFamily, ReadonlyMap<string, readonly JoinedPlan[]>>): Plan | ApplyError {
  if (!('ops' in plan)) return plan;
  const adding = joins.get(decoded.family)?.get(decoded.command.op);
  if (adding === undefined) return plan;
  let joined: Plan | ApplyError = plan;
  for (const join of adding) {
    joined = join(decoded.command as never, joined, ctx);
    if (!('ops' in joined)) return joined;
  }
  return joined;
}

/** The first refusal of any family's list guard for the lists the command uses (listsUsedBy), in registry order. */
function listGuardRefusal(family: AnyFamily, command: { readonly op: string }, states: States, guarding: readonly AnyFamily[]): ApplyError | null {
  if (guarding.length === 0 || family.listsUsedBy === undefined) return null;
  const paths = family.listsUsedBy(command);
  for (const guard of guarding) {
    if (guard === family) continue;
    for (const path of paths) {
      const refusal = guard.listGuard!.use(states, path);
      if (refusal !== null) return refusal;
    }
  }
  return null;
}

/** The plan with every other family's list-guard writes for the lists its events changed, in registry order. */
function withGuardedChanges(plan: Plan | ApplyError, family: AnyFamily, states: States, guarding: readonly AnyFamily[]): Plan | ApplyError {
  if (!('ops' in plan) || plan.events.length === 0) return plan;
  for (const guard of guarding) {
    if (guard === family) continue;
    const share = guard.listGuard!.changed(states, plan.events);
    if (share === null) continue;
    // Loops, not spreads: a session's end may change lists in many units.
    for (const op of share.ops) plan.ops.push(op);
    for (const step of share.after) plan.after.push(step);
  }
  return plan;
}

/** The plan with every family's writes for what the entry's plans told it (settleEntry), in registry order. */
function withSettledShares(plan: Plan | ApplyError, states: States, families: readonly AnyFamily[]): Plan | ApplyError {
  const kept = 'ops' in plan;
  for (const family of families) {
    const share = family.settleEntry?.(states, kept) ?? null;
    if (share === null || !kept) continue;
    for (const op of share.ops) plan.ops.push(op);
    plan.after.push(...share.after);
  }
  return plan;
}

/** What a read of `what` throws for `error`: a corrupt stored value named as such, anything else as it came. */
function readFailure(what: string, error: unknown): unknown {
  const corrupt = corruptValueIn(error);
  return corrupt === null ? error : new CorruptValueError(`reading ${what}: ${corrupt.message}`, { cause: error });
}

/** Every registered family's state, by family. */
class FamilyStates implements States {
  readonly users: UserLedger;

  constructor(private readonly byFamily: ReadonlyMap<AnyFamily, unknown>) {
    const keepers = [...byFamily.keys()].filter((f) => f.userLedger !== undefined);
    if (keepers.length > 1) throw new Error(`two families keep the user ledger: ${keepers.map((f) => f.name).join(', ')}`);
    this.users = keepers[0]?.userLedger?.(this) ?? NO_USER_LEDGER;
  }

  of<S>(family: Family<never, S>): S {
    const state = this.byFamily.get(family as AnyFamily);
    if (state === undefined) throw new Error(`command family ${family.name} is not registered`);
    return state as S;
  }
}

/** The replicated clock as of `snapshot` (0 before an entry moved it): every entry applied after the snapshot plans with a clock at least this. */
export async function clockAt(db: VeraDb, snapshot: DbSnapshot): Promise<number> {
  const raw = await db.get(CLOCK_KEY, { snapshot });
  return raw === undefined ? 0 : decodeClockValue(raw);
}

async function loadFrom(db: VeraDb, families: readonly AnyFamily[]): Promise<{ states: FamilyStates; applied: number; book: Member[]; now: number }> {
  const snapshot: DbSnapshot = db.snapshot();
  try {
    const rawBook = await db.get(MEMBERS_KEY, { snapshot });
    const rawClock = await db.get(CLOCK_KEY, { snapshot });
    const states = new Map<AnyFamily, unknown>();
    for (const family of families) states.set(family, await family.load(db, snapshot));
    const loaded = new FamilyStates(states);
    for (const family of families) await family.loaded?.(db, snapshot, loaded);
    return {
      applied: await readApplied(db, snapshot),
      states: loaded,
      book: rawBook === undefined ? [] : decodeMembers(rawBook),
      now: rawClock === undefined ? 0 : decodeClockValue(rawClock),
    };
  } finally {
    await snapshot.close();
  }
}

export interface ApplyHooks {
  /** The entry's in-memory state has moved (the next entry plans against it). */
  readonly onPlanned?: (outcome: ApplyOutcome) => void;
  /** The entry's batch went to the db: it may be answered and its events delivered (reads wait for the batch: settled()). */
  readonly onWritten?: (outcome: ApplyOutcome) => void;
}

/** Past this many batch operations, write what is planned before planning more. */
const MAX_BATCH_OPS = 4096;
/**
 * And at most about this many bytes (the entry that passes it still joins): entries that
 * share batches (a follower catching up on many thaw steps of large items) would otherwise
 * make one LevelDB batch of hundreds of MiB.
 */
export const MAX_BATCH_BYTES = 1024 * 1024;

type DecodedEntry =
  | { readonly kind: 'command'; readonly family: AnyFamily; readonly command: { readonly op: string }; readonly t: number; readonly r?: string }
  | { readonly kind: 'bad'; readonly error: ApplyError }
  | { readonly kind: 'config' }
  | { readonly kind: 'noop' };

function decodeEntry(entry: Entry, registry: Registry): DecodedEntry {
  if (entry.kind === 'config') return { kind: 'config' };
  if (entry.kind === 'noop') return { kind: 'noop' };
  try {
    return { kind: 'command', ...registry.decodeEntry(entry.data) };
  } catch (err) {
    if (err instanceof CommandError && !(err instanceof UnknownCommandError)) return { kind: 'bad', error: failure('BAD_REQUEST', err.message) };
    throw err;
  }
}

/**
 * Whether an entry is applied on its own: its family says its planning reads the
 * db (so earlier writes must be in it) or it ends something no one may see gone
 * before it is written; a membership change always does. The others plan from
 * memory alone and share a batch; their in-memory effects show as soon as they
 * are planned, a batch write early.
 */
function goesAlone(decoded: DecodedEntry, states: States): boolean {
  if (decoded.kind === 'config') return true;
  if (decoded.kind !== 'command') return false;
  return decoded.family.goesAlone(decoded.command, states);
}
