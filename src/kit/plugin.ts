// The contract a family's server side is written against: a narrow host instead
// of the server's whole front end, typed ops from op schemas instead of untyped
// records, and an instance per member (createServer) instead of module-level
// state. The server adapts a plugin to its own parts (src/server/front/plugin-part.ts);
// a family written this way imports nothing of the server. Importing only
// src/protocol keeps it at the bottom of the import graph, under the families.
import type { AnyOpSchema, ChangeEvent, FamilyRequest, Op, ProtocolLimits, RequestOf, RequestOfSchema, ResultOf, ResultOfSchema, VeraError } from '../protocol/index.js';

/** A replicated command of the plugin's own family (the host adds the family's name). */
export interface PluginCommand {
  readonly op: string;
  readonly [field: string]: unknown;
}

/** What a permission check is asked: `perm` on `resource` (docs/security.md names the resources). */
export interface PluginNeed {
  readonly perm: 'read' | 'write' | 'watch' | 'admin';
  readonly resource: string;
}

/**
 * The store's types, which the kit names without importing the store (that would close a
 * loop: the store's family contract imports the kit). src/statemachine/family.ts fills this
 * in by declaration merging: `reader` is its StateReader, `db` and `snapshot` the LevelDB and
 * one of its snapshots.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging (src/statemachine/family.ts)
export interface StoreSlot {}
type Slot<K extends string> = StoreSlot extends { readonly [P in K]: infer T } ? T : never;
/** Reads the db at one snapshot (`read`) and any family's in-memory state (`stateOf`): what a family's queries take. */
export type StoreReader = Slot<'reader'>;
export type StoreDb = Slot<'db'>;
export type StoreSnapshot = Slot<'snapshot'>;

/** The protocol's limits with the server's per-session and per-list ones, which a command storing items carries for apply to judge. */
export type HostLimits = ProtocolLimits & SessionLimits;

/** The server's per-session and per-list limits (the server's configuration derives its own from these). */
export interface SessionLimits {
  readonly sessionsMax: number;
  readonly sessionsPerAddress: number;
  readonly watchesPerSession: number;
  /** Ephemeral items one session may own, and their stored bytes. */
  readonly itemsPerSession: number;
  readonly bytesPerSession: number;
  readonly itemsPerList: number;
}

/** The server's default limits per user: stored items and bytes (0: none), and live sessions. */
export interface UserLimits {
  readonly items: number;
  readonly bytes: number;
  readonly sessions: number;
}

/** This member's Raft status, as the observe family shows it. */
export interface MemberStatus {
  readonly id: string;
  readonly role: string;
  readonly term: number;
  readonly leader: string | null;
  readonly commit: number;
  /** The newest entry this member's Raft driver has applied. */
  readonly applied: number;
  readonly lastIndex: number;
  readonly voters: readonly string[];
  readonly learners: readonly string[];
  /** Leader only: each other member's replication progress. */
  readonly progress: Readonly<Record<string, { readonly match: number; readonly recentActive: boolean }>>;
}

/** What this member knows of the cluster and of the connections it holds: the observe family's view. */
export interface HostMember {
  status(): MemberStatus;
  /** The client URL (`ws://host:port`) of a member, or null if unknown. */
  clientUrl(id: string): string | null;
  /** Whether the session has a connection to this member now. */
  connected(session: string): boolean;
  /** The newest index whose notifications the session acknowledged on this member (0: none). */
  ackedIndex(session: string): number;
  /** The acknowledgements this member received and has not had written yet (the lag family writes them), as [session, index]. */
  takeUnwrittenAcks(): Array<[string, number]>;
  /** The session ended: this member forgets its notifications and closes its connection here, if any. */
  endConnection(session: string): void;
  /**
   * The changes at `path` (or below it, for a prefix) in (after, through] from this member's event
   * log, those `visible` passes, at most `maxBytes` of them; null when the log no longer holds them all or they do not fit.
   */
  eventsOf(path: string, prefix: boolean, after: number, through: number, maxBytes: number, visible: (path: string) => boolean): ChangeEvent[] | null;
  /** The command version this build applies, and the one each peer advertised in its handshake (absent: not heard from). */
  commandVersions(): { readonly build: number; readonly peers: ReadonlyMap<string, number> };
  /** Resolves once this member has applied entry `index`. */
  waitApplied(index: number): Promise<void>;
}

/** The leader's clocks of sessions no connection keeps alive (a lease): a session whose clock runs out is closed. */
export interface HostSessionClocks {
  /** Starts (or restarts) the session's clock at `timeoutMs`. */
  track(session: string, timeoutMs: number): void;
  /** Restarts a tracked session's clock at its full timeout. */
  touch(session: string): void;
  has(session: string): boolean;
  /** How long until its deadline (ms; negative once past), or undefined when it is not tracked. */
  remainingMs(session: string): number | undefined;
  /** Stops the session's clock. */
  remove(session: string): void;
  /** Every tracked session. */
  sessions(): string[];
  readonly size: number;
  /** The sessions whose clock ran out, taken off the clocks (give one back with `retry` when its expiry was not written). */
  takeDue(): string[];
  /** Puts a session taken by `takeDue` back, to be due again shortly. */
  retry(session: string): void;
  /** Stops every clock (leadership ended, or a new one starts them afresh). */
  clear(): void;
  /** Counts a session opened, as this member applied it (vera_sessions_opened_total). */
  countOpened(): void;
  /** Counts a session this leader expired (vera_session_expirations_total). */
  countExpired(): void;
}

/**
 * The server's access control, for the family that manages it (auth) and families whose
 * replies show paths (each shown only to a caller who may read it).
 */
export interface HostAccess {
  /** Whether `user` may read `path` (authentication off: anyone may). */
  mayRead(user: string | null, path: string): boolean;
  /** Whether `user` may see that something exists at or below `path` (what an ls shows). */
  maySeeBelow(user: string | null, path: string): boolean;
  /** Whether `user` may watch `path` (what a watch's replayed event is judged by, as a notification is). */
  mayWatch(user: string | null, path: string): boolean;
  /** The user a name and password prove; UNAUTHORIZED (counted against `remote`'s guesses, and audited) when they do not. */
  authenticate(user: string, password: string, remote: string): Promise<string | null>;
  /** Why this member's client port would be exposed with authentication off, or null when it would not. */
  exposedWithoutAuth(): string | null;
  /** Has every live connection on this member re-judge what it holds (after an auth change: watches no longer allowed are dropped). */
  reviewConnections(): void;
  /** Up to `max` of the facts the guard gathered for the audit log (denials and admin acts first), for the family that writes it. */
  takeAuditFacts(max: number): AuditFacts;
}

/** One fact the guard saw: an authentication failure, a denial, or an administrator's act. */
export interface AuditFactSeen {
  /** Milliseconds since the epoch, on this member. */
  readonly at: number;
  readonly kind: 'auth-failed' | 'denied' | 'admin';
  readonly principal: string | null;
  readonly remote: string;
  readonly what: string;
}

export interface AuditFacts {
  readonly facts: readonly AuditFactSeen[];
  /** What the guard counted instead of recording one by one (its queue was full), as one line, or null. */
  readonly suppressed: string | null;
  /** Puts them back at the front (their write failed): the next take has them again. */
  giveBack(): void;
}

/** A list's items and the lists below a path wherever they are held (a hibernated unit's in its cold file): what the path guards add to the item bucket. */
export interface HostLists {
  /** The stored entries of the list at `path` after item index `after`, in index order, as of `snapshot`. */
  entries(db: StoreDb, snapshot: StoreSnapshot, path: string, after: number): AsyncIterable<StoredEntry>;
  /** The non-empty lists held outside the item bucket as of `snapshot`, at or below `prefix` and after `after`, in path order. */
  heldAt(db: StoreDb, snapshot: StoreSnapshot, prefix: string, after: string | undefined): AsyncIterable<{ readonly path: string; readonly newest: number }>;
  /** The names below `path` that lead to a list, wherever it is held, with the index they reflect (what an ls answers). */
  childrenOf(path: string): Promise<{ index: number; children: string[] }>;
}

/**
 * What a family's server instance may use of the member it runs on, each one a job
 * the server already does for every family. createServer runs while the server
 * loads its parts, before the member is open: it may keep the host, but calls it
 * only from handlers, duties and hooks (a call before then throws).
 */
export interface FamilyHost<S, V = unknown, C extends { readonly op: string } = PluginCommand> {
  /** Proposes one of this family's commands; resolves with its value once applied here, or throws the refusal as a VeraError. */
  propose(command: C): Promise<V>;
  /**
   * Proposes one of the family's commands and resolves once it is applied here with its
   * value, or with the refusal apply gave (which changed nothing) as a value; rejects only
   * when it was not applied (not leading, no quorum, the version gate): for a family that
   * treats the two apart (the audit log keeps unwritten facts, drops refused ones).
   */
  proposeOutcome(command: C): Promise<{ readonly ok: true; readonly value: V } | { readonly ok: false; readonly code: string; readonly message: string }>;
  /**
   * Proposes another family's command, for a family that drives one (assignment queues
   * clean-up jobs in a journal, a lease opens a session); resolves with its value (for the
   * first four families' commands, proposed as they always were: undefined).
   */
  proposeTo(family: string, command: PluginCommand): Promise<unknown>;
  /** Waits until this member has applied everything committed before the call (a linearizable read's barrier). */
  barrier(): Promise<void>;
  /** This family's in-memory state, as of the entries applied so far. */
  state(): S;
  /**
   * Synchronous point reads (getSync) at one snapshot, run before this returns unless a write
   * is in flight: for a hot path whose answer needs no applied index (assignment's returning login).
   */
  readNow<T>(what: string, read: (db: StoreDb, snapshot: StoreSnapshot) => T): Promise<T>;
  /**
   * Whether a linearizable read may be served from this member's state right now, with no
   * round (the leader's lease holds and what it covers is applied); count it with
   * countLeaseRead once served. False: use barrier().
   */
  linearizableNow(): boolean;
  /** Counts a read served under the lease (linearizableNow), as the Raft metrics show them. */
  countLeaseRead(): void;
  /** The store: snapshot reads of the family's buckets, other families' state (a journal's existence), for the family's queries. */
  readonly reader: StoreReader;
  /** The replicated clock: the leader's milliseconds in the newest applied entry. */
  now(): number;
  /** The index of the newest entry applied here (where a feed of applied events starts). */
  appliedIndex(): number;
  /** The cluster's active command version: what a request may ask of apply during a rolling upgrade. */
  commandVersion(): number;
  /** The limits requests are judged by (replyBytes: what one reply may carry; the per-session ones a storing command carries); also what an HTTP route builds its request with. */
  readonly limits: HostLimits;
  /** The server's default storage limits per user (--items-per-user, --bytes-per-user), which a command that stores items carries. */
  readonly userLimits: UserLimits;
  /** The member's Raft status and connections, for the family that shows them (observe). */
  readonly member: HostMember;
  /** The leader's session clocks, for a family whose sessions no connection holds (leases). */
  readonly sessionClocks: HostSessionClocks;
  /** Refuses (INSUFFICIENT_STORAGE) a request adding `bytes` while the data disk is below its reserve. */
  admitWrite(bytes: number): void;
  /** Reads of lists wherever they are held, for a family whose ops read lists at paths (range). */
  readonly lists: HostLists;
  /** The permission checks and credentials of the member (see HostAccess). */
  readonly access: HostAccess;
  /** This family's section of the server's configuration (hibernation: which units hibernate when idle), or null. */
  settings(): unknown;
  isLeader(): boolean;
  /**
   * This host as a leader duty should use it: the same in all but that its proposals are
   * never forwarded to another member. A duty's work that outlives this member's leadership
   * (a step of a freeze, a purge, a drop) fails NOT_LEADER then instead of being made on the
   * new leader's behalf, which runs its own duties (docs/scale-out.md, step 8a).
   */
  readonly leaderOnly: FamilyHost<S, V, C>;
  /** The error to answer when the op needs the leader and this member is not it. */
  notLeader(): VeraError;
  readonly log: {
    debug(fields: object, msg: string): void;
    info(fields: object, msg: string): void;
    warn(fields: object, msg: string): void;
    error(fields: object, msg: string): void;
  };
}

/** Where an op runs (Plugin.runsOn): on the leader, relayed there by the member a client talks to, or on any member. */
export type RunsOn = 'leader' | 'anywhere';

/** Who calls an op, as the server judged it. */
export interface OpCaller {
  /** The session the connection established, '' for an HTTP call. */
  readonly session: string;
  /** The user, or null with authentication off. */
  readonly user: string | null;
  readonly remote: string;
  /** The request frame's size: what a write is charged against the disk's free space (admitWrite). */
  readonly frameBytes: number;
}

export type OpHandler<Schema> = (request: RequestOfSchema<Schema>, caller: OpCaller) => Promise<ResultOfSchema<Schema>>;

/** Work only the leader does, on a timer: started when this member starts leading, stopped when it stops or the server closes. */
export interface PluginDuty {
  /** Also the key of its period in the server's timings (tests shorten them). */
  readonly name: string;
  /** Its period (ms) when the server's timings do not name it. */
  readonly periodMs: number;
  /** Runs once when this member starts leading, before the first tick. */
  start?(): void;
  tick(): void;
  /** Runs when this member stops leading, and when the server closes while it leads. */
  stop?(): void;
}

/**
 * An HTTP endpoint on the client port: GET (or POST) `prefix` or below it stands for one
 * of the family's ops (built with `opRequest`), which the server judges and runs like a
 * WebSocket request and answers as JSON.
 */
export interface PluginRoute {
  /** Starts with /v1/ and names the family, e.g. /v1/journals. */
  readonly prefix: string;
  /** `rest` is the path after the prefix ('' or '/...'); throw a VeraError (NOT_FOUND, BAD_REQUEST) for a target that names no op. */
  get(rest: string, url: URL): FamilyRequest;
  /** POST with a JSON object body (at most 64 KiB); absent: GET only. */
  post?(rest: string, url: URL, body: Readonly<Record<string, unknown>>): FamilyRequest;
}

/** What an access does with a path: reads its items, changes them, watches it, or lists what is at or below it. */
export type PathUse = 'read' | 'write' | 'watch' | 'list';

export interface PathAccess {
  readonly path: string;
  readonly use: PathUse;
  /** A read served from what this member holds (`consistency: 'stale'`). */
  readonly stale: boolean;
}

/** A stored list entry as LevelDB holds it: the item's key and value bytes. */
export type StoredEntry = readonly [Buffer, Buffer];

/**
 * A rule the family holds over every access to a list's path (hibernation: a Frozen unit
 * is thawed before a use, and read from its cold file meanwhile), which the server runs on
 * every read, write, watch, listing and resync (src/server/guard/path-guard.ts).
 */
export interface PluginPathGuard {
  /** Runs before the access and resolves once it may go on; true when it had to wait. Runs again after a refusal it claims. */
  before(access: PathAccess): Promise<boolean>;
  /** Whether `err` is this guard's refusal, which changed nothing: pass `before` again and try again. */
  refuses(err: unknown): boolean;
  /** The entries (key order) of the list at `path` as of `snapshot`, when the family holds them outside the item bucket; else null. */
  entriesAt(db: StoreDb, snapshot: StoreSnapshot, path: string): Promise<readonly StoredEntry[] | null>;
  /** Names of `path`'s children that lead to lists the family holds outside the item bucket. */
  childrenOf(path: string): readonly string[];
  /** The non-empty lists the family holds outside the item bucket as of `snapshot`, at or below `prefix`, after `after`, in path order. */
  listsAt(db: StoreDb, snapshot: StoreSnapshot, prefix: string, after: string | undefined): AsyncIterable<{ readonly path: string; readonly newest: number }>;
}

/** A core protocol op (docs/protocol.md) a family answers; hello, ping and get the connection answers itself. */
export type CoreOp = Exclude<Op, 'hello' | 'ping' | 'get'>;

/** Who calls a core op: the connection has judged its permissions and paths already (src/server/guard). */
export interface CoreCaller {
  /** The session the connection established. */
  readonly session: string;
  /** The request frame's size: what a write is charged against the disk's free space (admitWrite). */
  readonly frameBytes: number;
}

/** The handler of core op `O`: the protocol defines its request and its reply. */
export type CoreOpHandler<O extends CoreOp> = (request: RequestOf<O>, caller: CoreCaller) => Promise<ResultOf<O>>;

/** A live session as a hello judges its resume. */
export interface LiveSession {
  readonly timeoutMs: number;
  /** SHA-256 (hex) of the resume token its creator was told; absent: opened before resume tokens. */
  readonly resumeHash?: string;
  /** The user that opened it, when authentication was on. */
  readonly principal?: string;
  /** The member holding its connection, as the log records it (command version 9; absent: none recorded). */
  readonly member?: string;
}

/**
 * What a client connection asks about its session, answered by the family that keeps each
 * (sessions, cluster, watches, lag), so the connection imports no family: each question by one family at most.
 */
export interface PluginConnection {
  /** The live session `id`, or undefined when it expired or never existed. */
  session(id: string): LiveSession | undefined;
  /** How many sessions are live (what sessionsMax bounds). */
  sessionCount(): number;
  /** The command version from which a new session records its resume token's hash. */
  readonly resumeTokensSince: number;
  /** The command version from which a new session records the member holding its connection (absent: never). */
  readonly holdersSince?: number;
  /** The cluster's active command version. */
  activeVersion(): number;
  /** Commits that `member` now holds the live session's connection (from holdersSince; rejects SESSION_EXPIRED when it is not live). */
  attach?(session: string, member: string): Promise<void>;
  /** Resolves once `version` is active, or this leader cannot raise it to it, or after `timeoutMs`. */
  settleVersion(version: number, timeoutMs: number): Promise<void>;
  /** The watches `session` holds, in key order. */
  watchesOf(session: string): ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>;
  /** The highest notification index `session` acknowledged, as the log records it (0 if none). */
  ackedInLog(session: string): number;
}

/** A plugin's server instance: one per member, made at start, holding all of the family's per-member state. */
export interface PluginServer<Schemas extends Readonly<Record<string, AnyOpSchema>>, V = unknown> {
  readonly handlers: { readonly [K in keyof Schemas]: OpHandler<Schemas[K]> };
  /**
   * The core protocol ops the family answers (push, delete, ls: lists; watch, unwatch: watches;
   * bye: sessions): each by one family at most. The connection judges their permissions and
   * paths (the path guards included) before it calls them, as it always did.
   */
  readonly coreOps?: { readonly [O in CoreOp]?: CoreOpHandler<O> };
  /** What the family answers a client connection about its session (see PluginConnection). */
  readonly connection?: Partial<PluginConnection>;
  /**
   * Throws (UNAVAILABLE) when a proposal of `what` (`family.op`, or a first family's op) that
   * needs command version `required` may not be made yet: the core runs it before every
   * proposal, so keep the common case cheap. One family at most (cluster, in a rolling upgrade).
   */
  versionGate?(what: string, required: number): void;
  /** The leader's timed work (expiry, timeouts, idle detection). */
  readonly duties?: readonly PluginDuty[];
  /** Read-only (or op-standing) HTTP endpoints under /v1/. */
  readonly http?: readonly PluginRoute[];
  /**
   * Sees every entry this member applies, in log order, once it is in the db: `value` is
   * this family's result when the entry was one of its commands that succeeded, else null.
   * How a family tells its own waiters and counts what it applied. Must not throw or block.
   */
  applied?(index: number, value: V | null): void;
  /** The family's lines of /metrics, in the Prometheus text format. */
  metrics?(): Promise<string>;
  /** A rule over every access to a list's path (see PluginPathGuard). */
  readonly pathGuard?: PluginPathGuard;
  /**
   * Why a client's hello may not resume the live session `session`, when this family holds it
   * for its own use (a lease is a session no connection may hold), or null.
   */
  resumeRefusal?(session: string): string | null;
  /** Releases what the instance holds (timers, waiters) when the server closes. */
  close?(): void;
}

export interface Plugin<Schemas extends Readonly<Record<string, AnyOpSchema>>, S, V = unknown, C extends { readonly op: string } = PluginCommand> {
  /** The family's ops, by a name of the family's choosing. */
  readonly ops: Schemas;
  /** What each op needs of the caller's permissions (every op says, so none is served unchecked). */
  readonly needs: { readonly [K in keyof Schemas]: (request: RequestOfSchema<Schemas[K]>) => readonly PluginNeed[] };
  /**
   * The lists at paths an op reads, writes, watches or lists, judged before it runs: the
   * core runs every family's path guard on them (hibernation thaws a Frozen unit first),
   * and runs the op again after a guard's refusal, which changed nothing.
   */
  readonly touches?: { readonly [K in keyof Schemas]?: (request: RequestOfSchema<Schemas[K]>) => readonly PathAccess[] };
  /** Why the ops without `touches` read or write no list at a path (so the path guards have nothing to do for them). */
  readonly touchesNoLists: string;
  /**
   * Where each op runs once every member serves clients (docs/scale-out.md "Relayed ops"): at the
   * `leader` (a member relays the request there; the default, right for any handler) or `anywhere`
   * (its handler proposes and reads replicated state only, so the member serving the client runs it).
   */
  readonly runsOn?: { readonly [K in keyof Schemas]?: RunsOn };
  createServer(host: FamilyHost<S, V, C>): PluginServer<Schemas, V>;
}

// biome-ignore lint/suspicious/noExplicitAny: the registry holds plugins of every op set, state, value and command
export type AnyPlugin = Plugin<any, any, any, any>;

export type { FamilyRequest };
