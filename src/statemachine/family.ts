// A command family: one capability of the replicated state (lists, sessions,
// watches, ...) behind one interface, so the store kernel knows families only
// through it and a new capability is a new folder plus one line in
// registry.ts. The idea of registering commands per feature comes from
// Consul's FSM (`registerCommand`); the shape here is our own.
//
// A family owns: its command types and their decoding (`ops`), planning an
// entry (LevelDB writes, change events, reply, in-memory updates run once the
// writes are in the db), its in-memory indexes (`load`, rebuilt from the db at
// start and after a snapshot install), the LevelDB buckets it writes
// (`buckets`), what happens to its data when a session ends, and, loaded only
// by the server, its server side as a kit plugin (`plugin`).
import type { AppliedEvent, ApplyError, ApplySuccess, BatchOp, VeraDb } from './types.js';
import type { PlanReads } from './pending-reads.js';
import type { AnyPlugin } from '../kit/plugin.js';
import type { StorageLimits } from '../kit/user-storage.js';

export type { BatchOp };
export type DbSnapshot = ReturnType<VeraDb['snapshot']>;

// The kit names the store's types through this slot (src/kit/plugin.ts StoreSlot), so a
// plugin reads at a snapshot with the store's own types while the kit imports nothing of it.
declare module '../kit/plugin.js' {
  interface StoreSlot {
    readonly reader: StateReader;
    readonly db: VeraDb;
    readonly snapshot: DbSnapshot;
  }
}

/** What one entry does: its writes, its events and reply, and the index updates to run once written. */
export interface Plan {
  readonly result: ApplySuccess;
  readonly ops: BatchOp[];
  readonly events: AppliedEvent[];
  /** Index updates, run in order after the batch is written. */
  readonly after: Array<() => void>;
  /**
   * Run once the batch holding the entry is in the db (for an entry that shares a batch,
   * `after` runs as soon as it is planned, so the next entry plans against it; this waits
   * for the write): hibernation's crash points named for a written step.
   */
  readonly written?: Array<() => void>;
}

/** A family's share of ending a session: what it deletes and reports. */
export interface SessionEndPlan {
  readonly ops: BatchOp[];
  readonly events: AppliedEvent[];
  readonly after: Array<() => void>;
}

/** The bytes are not a well-formed command (the same verdict on every member). */
export class CommandError extends Error {
  override readonly name: string = 'CommandError';
}

/** The entry needs a family, op or command version this member does not have: it must stop. */
export class UnknownCommandError extends CommandError {
  override readonly name = 'UnknownCommandError';
}

/** A command entry's data, decoded: the family that applies it, its canonical command, its clock. */
export interface DecodedCommand {
  readonly family: AnyFamily;
  readonly command: { readonly op: string };
  /** The leader's wall clock when it proposed (ms), 0 for entries from before the envelope. */
  readonly t: number;
  /** The request id of a forwarded write (the envelope's `r`), absent otherwise. */
  readonly r?: string;
}

/**
 * What the kernel is handed at open (src/families/registry.ts's REGISTRY): every
 * family in registry order, and the entry codec that names which one a command
 * entry belongs to. The kernel knows families only through it.
 */
export interface Registry {
  readonly families: readonly AnyFamily[];
  /** Throws CommandError for a malformed command, UnknownCommandError for one this build cannot apply. */
  readonly decodeEntry: (bytes: Uint8Array) => DecodedCommand;
}

/** How one op's fields are read from an entry. */
export interface OpSpec<C> {
  /** Field names the op allows besides `op` (and the envelope's); anything else is refused. */
  readonly fields: readonly string[];
  /** The command version that introduced this op; a member below it cannot apply it. */
  readonly since: number;
  /**
   * Fields added to the op after it was introduced, with the version that added
   * each: an entry that carries one needs that version, so an older member stops
   * on it instead of refusing it as an unexpected field while newer members apply it.
   */
  readonly fieldsSince?: Readonly<Record<string, number>>;
  /** Checks untrusted fields and returns a fresh command with a fixed field order; throws CommandError. */
  decode(raw: Readonly<Record<string, unknown>>): C;
}

/**
 * What a family's queries read through (the StateMachine is one): the db at one
 * snapshot with the applied index it reflects, and a family's in-memory state.
 */
export interface StateReader {
  read<T>(what: string, read: (db: VeraDb, snapshot: DbSnapshot, index: number) => Promise<T>): Promise<T>;
  stateOf<S>(family: Family<never, S>): S;
  /** What each user stores, as of the entries applied so far. */
  readonly users: Pick<UserLedger, 'of'>;
}

/** The family states of one store, by family. */
export interface States {
  of<S>(family: Family<never, S>): S;
  /** The per-user storage ledger the entry being planned charges and credits. */
  readonly users: UserLedger;
}

/** What one user stores: items and their stored bytes. */
export interface UserStorage {
  readonly items: number;
  readonly bytes: number;
}

/**
 * What each user stores (docs/security.md "Per-user storage quotas"). A family that stores
 * items on a user's behalf charges and credits the user here; the family that keeps the
 * counts and judges them (quota) answers it through Family.userLedger, so the charging
 * families, older than it, never import it. With no such family nothing is counted.
 */
export interface UserLedger {
  /**
   * Charges `user` for `items` more items of `bytes` stored bytes in the entry being planned.
   * A refusal (QUOTA_EXCEEDED: past `limits`, or the user's own) charges nothing, and the
   * entry must then change nothing either.
   */
  charge(user: string, items: number, bytes: number, limits: StorageLimits): ApplyError | null;
  /** Changes what `user` stores without judging it (negative: given back): a change the user did not ask for, or a credit. */
  change(user: string, items: number, bytes: number): void;
  /** What `user` stores as of the entries applied so far (the entry being planned not included). */
  of(user: string): UserStorage;
}

/** The ledger when no family keeps one: charges pass and nothing is counted. */
export const NO_USER_LEDGER: UserLedger = {
  charge: () => null,
  change: () => {},
  of: () => ({ items: 0, bytes: 0 }),
};

export interface PlanContext {
  /** The db as written so far: read it only from an entry that goes alone (goesAlone), when it is also as planned so far. */
  readonly db: VeraDb;
  /** The db as planned so far (earlier entries of the same batch included): an entry that shares a batch reads through this. */
  readonly reads: PlanReads;
  readonly states: States;
  /** The index of the entry being applied. */
  readonly index: number;
  /** The replicated clock: the leader's milliseconds when it proposed, never decreasing (0 before any entry carried one). */
  readonly now: number;
  /** Every registered family, in registry order (for session ends). */
  readonly families: readonly AnyFamily[];
}

/** A LevelDB bucket a family writes: its 2-byte prefix, unique across families (registry.ts checks). */
export interface BucketDecl {
  readonly id: number;
  readonly name: string;
}

export interface Family<C extends { readonly op: string }, S> {
  readonly name: string;
  /** The command version that introduced the family. */
  readonly since: number;
  readonly buckets: readonly BucketDecl[];
  readonly ops: { readonly [K in C['op']]: OpSpec<C> };
  /** Builds the family's in-memory state from the db (at start and after a snapshot install). */
  load(db: VeraDb, snapshot: DbSnapshot): Promise<S>;
  plan(command: C, ctx: PlanContext): Promise<Plan | ApplyError> | Plan | ApplyError;
  /**
   * Whether the entry must be written alone: it reads `ctx.db` (so earlier writes must be
   * in it) or ends something no one may see gone before it is written. The others plan
   * from memory, or read through `ctx.reads`, and share a batch.
   */
  goesAlone(command: C, states: States): boolean;
  /** What the family deletes when a session ends (in the session-ending entry's batch). */
  endSession?(session: string, ctx: PlanContext): Promise<SessionEndPlan> | SessionEndPlan;
  /**
   * State the family keeps beside the db (hibernation's cold files), as records of one of its
   * own buckets, read at `snapshot`: snapshots and backups carry them after the db's keys, and
   * `load` turns such records, once installed, back into files.
   */
  filesInState?(db: VeraDb, snapshot: DbSnapshot): AsyncIterable<readonly [Buffer, Buffer]>;
  /**
   * Once an entry is planned (`kept`: it will be written) or refused, the family's own
   * writes for what other families' plans told it during that entry (the quota family's
   * per-user usage), added to the entry's plan; null when there are none.
   */
  settleEntry?(states: States, kept: boolean): { readonly ops: BatchOp[]; readonly after: Array<() => void> } | null;
  /**
   * What this family adds to the entries of another family's op, keyed `family.op` (a push
   * also watches its list: the watches family adds the watch to the lists family's push).
   * The kernel runs it on the plan that op made, in the same entry, before the list guards'
   * shares; an ApplyError refuses the whole entry, which then changes nothing. So an older
   * family's op takes on a newer family's effect without importing it.
   */
  readonly joins?: Readonly<Record<string, JoinedPlan>>;
  /**
   * The per-user storage ledger (States.users) over this family's state: one family at most
   * keeps it (quota), and its settleEntry writes what an entry charged.
   */
  userLedger?(states: States): UserLedger;
  /**
   * The lists an entry of this family reads or changes (a push's path, a txn's compares
   * and writes, an exact watch's path), for the list guards the kernel runs (`listGuard`).
   * Absent: it uses no list by path.
   */
  listsUsedBy?(command: C): readonly string[];
  /**
   * A rule this family holds over every entry of any family that uses or changes a list
   * (hibernation: a Frozen unit's lists are not in the hot store, and a change to a
   * Freezing unit cancels its freeze). The kernel runs it, so no family's plan has to
   * remember it: a new command passes through it by declaring `listsUsedBy`.
   */
  readonly listGuard?: ListGuard;
  /**
   * Once every family's state is loaded (at start, after a snapshot install): corrections
   * to other families' in-memory state for data this family holds apart, read at `snapshot`
   * (hibernation's hot entries of a Frozen unit not yet deleted, which the lists family counted).
   */
  loaded?(db: VeraDb, snapshot: DbSnapshot, states: States): Promise<void>;
  /**
   * Loads the family's server side written against the kit (src/kit/): typed ops and an
   * instance per member over a narrow host; only the server calls it.
   */
  plugin?(): Promise<AnyPlugin>;
  /** What the family adds to the `vera` command line: its verbs, loaded only when one is used. */
  readonly cli?: FamilyCli;
}

/**
 * A family's command-line verbs: `vera <verb> ...` runs the family's `cli.ts`, found by
 * its folder's name (src/cli/family-verbs.ts), whose export named like the verb, or
 * `run` for a verb named like the family, runs it. Named, not imported, here: the
 * server loads this file and must never reach the CLI.
 */
export interface FamilyCli {
  readonly verbs: readonly string[];
}

/**
 * A family's addition to another family's op (Family.joins): given that op's command, as
 * decoded, and the plan it made, the plan with the addition (its writes and index updates
 * appended, its result amended) or a refusal of the whole entry.
 */
export type JoinedPlan = (command: never, plan: Plan, ctx: PlanContext) => Plan | ApplyError;

export interface ListGuard {
  /** Before an entry is planned, for each list it declares: an ApplyError refuses the entry (it changes nothing). */
  use(states: States, path: string): ApplyError | null;
  /** Once another family's entry is planned and kept: writes for the lists its events changed, added to its batch. */
  changed(states: States, events: readonly AppliedEvent[]): { readonly ops: BatchOp[]; readonly after: Array<() => void> } | null;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds families of every command type (a command is both decoded and planned, so no narrower type fits)
export type AnyFamily = Family<any, unknown>;

export function failure(code: ApplyError['code'], message: string): ApplyError {
  return { ok: false, code, message };
}

/** A family with no commands of its own whose server side is a kit plugin (range). */
export function pluginOnlyFamily(name: string, plugin: () => Promise<AnyPlugin>): Family<never, null> {
  return {
    name,
    since: 1,
    buckets: [],
    ops: {},
    load: async () => null,
    plan: () => {
      throw new Error(`the ${name} family has no commands`);
    },
    goesAlone: () => false,
    plugin,
  };
}
