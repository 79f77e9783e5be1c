// Node assignment's client protocol: the ops it adds and how each request is
// checked. Imports only the protocol package, so the client library uses the
// same checks as the server (a bad request is refused before anything is sent
// or proposed). Documented in docs/protocol.md ("Node assignment ops") and
// docs/assignment.md.
import { journalNameProblem } from '../journal/wire.js';
import { buildersOf, defineOp, invalid, onlyFields, uintField, utf8Length } from '../../protocol/index.js';

/** `{app}-{version}` as Tokenserver names services (sync-1.5); its column is 30 characters. */
export const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,29}$/;
/** Node URLs, emails: at most this many UTF-8 bytes (Tokenserver's email column is 255). */
export const MAX_NAME_BYTES = 255;
/** Tokenserver's client state: a hash in hex, at most 32 characters; empty means none yet. */
export const CLIENT_STATE = /^[A-Za-z0-9._-]{0,32}$/;
/** Endpoint patterns (Tokenserver's column is 128 characters). */
export const MAX_PATTERN_BYTES = 128;
/**
 * A retired user's generation. Tokenserver uses the largest 64-bit integer; JavaScript
 * numbers are exact up to 2^53 - 1, so Vera's maximum is that and larger values are refused.
 */
export const MAX_GENERATION = Number.MAX_SAFE_INTEGER;
/**
 * Records one user may have in one service (current and replaced). Each key change adds
 * one; purge removes the replaced ones. Bounds what one login reads and writes.
 */
export const MAX_RECORDS_PER_USER = 100;
/** Records one decommission, retire or purge entry changes at most. */
export const MAX_BATCH = 1000;
/** Services one cluster may define, and nodes one service may have (all are held in memory on every member). */
export const MAX_SERVICES = 1000;
export const MAX_NODES_PER_SERVICE = 10_000;
/** The most records one purgeable count looks at (a read bounded like a purge's scan). */
export const MAX_PURGEABLE_COUNT = 10_000;
/** A purge cursor: `replacedAt:uid` of the last record a batch looked at. */
export const PURGE_CURSOR = /^\d{1,15}:\d{1,16}$/;
/** The largest "choose among the top N" a service may ask for. */
export const MAX_TOP_N = 100;
export const MAX_CAPACITY = 2 ** 40;

/** An account event's id (FxA's, or the queue message's): what makes applying it once per id possible. */
export const EVENT_ID = /^[A-Za-z0-9._:@-]{1,128}$/;
/** How long an applied event id is remembered: a repeat within it changes nothing. */
export const EVENT_ID_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Expired event ids one event entry drops at most (each adds one, so the set shrinks back). */
export const EVENT_IDS_PRUNED_PER_ENTRY = 16;

export function eventIdProblem(value: unknown): string | null {
  return typeof value === 'string' && EVENT_ID.test(value) ? null : 'eventId must be 1-128 characters of A-Z a-z 0-9 . _ : @ -';
}

export const EVENT_KINDS = ['delete', 'passwordChange', 'reset'] as const;
export type AccountEventKind = (typeof EVENT_KINDS)[number];

const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /\p{Cs}/u;

export function serviceNameProblem(value: unknown): string | null {
  return typeof value === 'string' && SERVICE_NAME.test(value) ? null : 'service must be 1-30 characters of A-Z a-z 0-9 . _ - starting with a letter or digit (e.g. sync-1.5)';
}

/** Node URLs and emails: non-empty text, no control characters, at most 255 UTF-8 bytes. */
export function nameProblem(value: unknown, what: 'node' | 'email'): string | null {
  if (typeof value !== 'string' || value.length === 0) return `${what} must be a non-empty string`;
  if (CONTROL.test(value) || LONE_SURROGATE.test(value)) return `${what} must not hold control characters or lone surrogates`;
  if (utf8Length(value) > MAX_NAME_BYTES) return `${what} is longer than ${MAX_NAME_BYTES} UTF-8 bytes`;
  return null;
}

export function clientStateProblem(value: unknown): string | null {
  return typeof value === 'string' && CLIENT_STATE.test(value) ? null : 'clientState must be 0-32 characters of A-Z a-z 0-9 . _ - (a hash in hex; empty for none)';
}

export function patternProblem(value: unknown): string | null {
  if (typeof value !== 'string' || CONTROL.test(value) || LONE_SURROGATE.test(value)) return 'pattern must be text without control characters';
  if (utf8Length(value) > MAX_PATTERN_BYTES) return `pattern is longer than ${MAX_PATTERN_BYTES} UTF-8 bytes`;
  return null;
}

/** The endpoint a pattern gives for a node and uid (Tokenserver's `{node}`, `{uid}`, and `{service}`). */
export function endpointOf(pattern: string, service: string, node: string, uid: number): string {
  return pattern.replaceAll('{node}', node).replaceAll('{uid}', String(uid)).replaceAll('{service}', service);
}

// What the ops answer, written once: the server returns these and the client receives them.

/** A service's settings (Tokenserver's services table, and what allocation does for it). */
export interface ServiceSettings {
  /** The endpoint pattern, e.g. `{node}/1.5/{uid}`; `{node}`, `{uid}` and `{service}` are filled in. Default `{node}/1.5/{uid}`. */
  readonly pattern: string;
  /** The share of a full node's capacity released when no node has a free slot (Tokenserver's 0.1, the default). */
  readonly releaseRate: number;
  /** Whether an unknown email gets a record (Tokenserver's `allocate_new_users`). Default true. */
  readonly newUsers: boolean;
  /** Allocation picks among this many of the best nodes, at random, chosen by the leader (1, the default: always the best; seed 000's improvement when more). */
  readonly topN: number;
}

export interface ServiceInfo extends ServiceSettings {
  readonly service: string;
  readonly nodes: number;
}

/** A node's capacity and state as an operator sets them; absent: unchanged (for a new node, available defaults to its capacity). */
export interface NodeChanges {
  readonly capacity?: number;
  readonly available?: number;
  readonly downed?: boolean;
  /** Non-zero: no new users. */
  readonly backoff?: number;
}

export interface NodeInfo {
  readonly node: string;
  readonly capacity: number;
  readonly load: number;
  readonly available: number;
  readonly downed: boolean;
  readonly backoff: number;
}

/** A record as stored: one user's assignment to a node in one service, current or replaced. */
export interface UserRecord {
  readonly uid: number;
  readonly service: string;
  readonly email: string;
  readonly generation: number;
  /** '' before the user reported one. */
  readonly clientState: string;
  /** 0: none seen. */
  readonly keysChangedAt: number;
  readonly createdAt: number;
  /** 0: not replaced (a current record). */
  readonly replacedAt: number;
  readonly node: string;
}

/** A row of Tokenserver's users table, as an import takes it (times in ms; 0 for NULL): a record of the service imported into. */
export type ImportedUser = Omit<UserRecord, 'service'>;

/** A user as a login (and a placement) answers it. */
export interface UserAssignment {
  readonly uid: number;
  readonly node: string;
  readonly endpoint: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly oldClientStates: readonly string[];
  readonly firstSeenAt: number;
  readonly createdAt: number;
}

/** Tokenserver's answer to a request for the user's node. */
export interface Assignment extends UserAssignment {
  /** The email was unknown and got its first record. */
  readonly created: boolean;
  /** A node was allocated in this request (a new user, or a replaced one moved). */
  readonly allocated: boolean;
}

export interface Lookup {
  readonly current: UserRecord & { readonly endpoint: string };
  readonly oldClientStates: readonly string[];
  readonly firstSeenAt: number;
  /** Every record, newest first. */
  readonly records: readonly UserRecord[];
}

/** A user current on a node, as a page of `nodeUsers` lists it. */
export interface NodeUser {
  readonly uid: number;
  readonly email: string;
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
  readonly createdAt: number;
}

export interface PurgeResult {
  readonly dryRun: boolean;
  /** A dry run also says when each was replaced. */
  readonly purged: ReadonlyArray<{ readonly uid: number; readonly email: string; readonly node: string; readonly replacedAt?: number }>;
  /** Records passed over because their node is downed. */
  readonly skipped: number;
  /** Where this batch stopped, to pass as `after`; null when it looked at every record due. */
  readonly next: string | null;
  /** With overrideNode: clean-ups sent to it, and records purged with none (their data is the user's current data). */
  readonly overridden?: number;
  readonly activeData?: number;
}

/** A purge the leader runs until done, as it stands (replicated: any leader goes on with it). */
export interface PurgeJob {
  readonly service: string;
  /** 1, 2, ... per service. */
  readonly seq: number;
  /** running; done (every record due looked at); stopped by an operator; failed (`error` says why). */
  readonly state: 'running' | 'stopped' | 'done' | 'failed';
  readonly graceMs: number;
  readonly max: number;
  readonly force: boolean;
  readonly uidMin?: number;
  readonly uidMax?: number;
  readonly overrideNode?: string;
  readonly journal?: string;
  readonly startedAt: number;
  readonly endedAt: number | null;
  /** Where the next batch goes on from; null before the first. */
  readonly cursor: string | null;
  readonly batches: number;
  readonly purged: number;
  /** Passed over on downed nodes (without force). */
  readonly skipped: number;
  readonly overridden: number;
  readonly activeData: number;
  readonly error?: string;
}

// The requests, as the schemas below check them.

type Fields = Readonly<Record<string, unknown>>;
export type Consistency = 'linearizable' | 'stale';
/** A read's consistency: linearizable (through the leader, the default) or stale (this member's applied state). */
type Read = { readonly consistency?: Consistency };
type Nothing = Record<string, never>;

function checked(value: unknown, problem: string | null): string {
  if (problem !== null) throw invalid(problem);
  return value as string;
}

const service = (f: Fields): string => checked(f.service, serviceNameProblem(f.service));
const node = (f: Fields): string => checked(f.node, nameProblem(f.node, 'node'));
const email = (f: Fields): string => checked(f.email, nameProblem(f.email, 'email'));

function bounded(f: Fields, field: string, min: number, max: number): number | undefined {
  const v = uintField(f, field);
  if (v !== undefined && (v < min || v > max)) throw invalid(`${field} must be in [${min}, ${max}], got ${v}`);
  return v;
}

function bool(f: Fields, field: string): boolean | undefined {
  const v = f[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw invalid(`${field} must be true or false`);
  return v;
}

function consistency(f: Fields): Read {
  const v = f.consistency;
  if (v === undefined) return {};
  if (v !== 'linearizable' && v !== 'stale') throw invalid('consistency must be "linearizable" or "stale"');
  return { consistency: v };
}

function rate(f: Fields): number | undefined {
  const v = f.releaseRate;
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 1) throw invalid('releaseRate must be a number in (0, 1]');
  return v;
}

function uids(f: Fields): number[] | undefined {
  const v = f.uids;
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_BATCH) throw invalid(`uids must be an array of 1 to ${MAX_BATCH} uids`);
  return v.map((u: unknown, i) => {
    if (typeof u !== 'number' || !Number.isSafeInteger(u) || u < 1) throw invalid(`uids[${i}] must be a positive integer`);
    return u;
  });
}

/** The fields that are present, in the order given (a request never carries `undefined`). */
function present<T extends object>(fields: T): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(fields) as Array<keyof T>) if (fields[key] !== undefined) out[key] = fields[key];
  return out;
}

function nodeFields(f: Fields): NodeChanges {
  return present({
    capacity: bounded(f, 'capacity', 0, MAX_CAPACITY),
    available: bounded(f, 'available', 0, MAX_CAPACITY),
    downed: bool(f, 'downed'),
    backoff: bounded(f, 'backoff', 0, 2 ** 31),
  });
}

/** One record of an import, as Tokenserver's users table holds it (uid and dates kept). */
function importedUser(u: unknown, at: number): ImportedUser {
  if (typeof u !== 'object' || u === null || Array.isArray(u)) throw invalid(`users[${at}] must be a map`);
  const r = u as Fields;
  onlyFields(r, ['uid', 'email', 'generation', 'clientState', 'keysChangedAt', 'createdAt', 'replacedAt', 'node']);
  const need = (field: string, min: number, max: number): number => {
    const v = bounded(r, field, min, max);
    if (v === undefined) throw invalid(`users[${at}].${field} is required`);
    return v;
  };
  return {
    uid: need('uid', 1, Number.MAX_SAFE_INTEGER - 1),
    email: email(r),
    generation: need('generation', 0, MAX_GENERATION),
    clientState: checked(r.clientState ?? '', clientStateProblem(r.clientState ?? '')),
    keysChangedAt: bounded(r, 'keysChangedAt', 0, MAX_GENERATION - 1) ?? 0,
    createdAt: need('createdAt', 0, 2 ** 48),
    replacedAt: bounded(r, 'replacedAt', 0, 2 ** 48) ?? 0,
    node: node(r),
  };
}

/** A purge's uid range (upstream's --range_start/--range_end) and override node (--override_node, with force and a journal). */
export interface PurgeScope {
  readonly uidMin?: number;
  readonly uidMax?: number;
  readonly overrideNode?: string;
}

/** What a purge and a purge job share: the service, grace period, batch size, force, clean-up journal and uid/node scope. */
export interface PurgeSettings extends PurgeScope {
  readonly service: string;
  readonly graceMs: number;
  readonly max: number;
  readonly force: boolean;
  readonly journal?: string;
}

function purgeSettings(f: Fields): PurgeSettings {
  const journal = f.journal;
  if (journal !== undefined && journalNameProblem(journal) !== null) throw invalid('journal must be the name of a journal');
  return {
    service: service(f),
    graceMs: bounded(f, 'graceMs', 0, 2 ** 48) ?? 7 * 24 * 3600 * 1000,
    max: bounded(f, 'max', 1, MAX_BATCH) ?? 100,
    force: bool(f, 'force') ?? false,
    ...(journal === undefined ? {} : { journal: journal as string }),
    ...purgeScope(f, journal !== undefined),
  };
}

function purgeScope(f: Fields, journal: boolean): PurgeScope {
  const uidMin = bounded(f, 'uidMin', 1, Number.MAX_SAFE_INTEGER);
  const uidMax = bounded(f, 'uidMax', 1, Number.MAX_SAFE_INTEGER);
  if (uidMin !== undefined && uidMax !== undefined && uidMin > uidMax) throw invalid(`uidMin ${uidMin} is above uidMax ${uidMax}`);
  let overrideNode: string | undefined;
  if (f.overrideNode !== undefined) {
    overrideNode = checked(f.overrideNode, nameProblem(f.overrideNode, 'node'));
    if (f.force !== true || !journal) throw invalid('overrideNode is for a forced purge into a journal: give force and journal too');
  }
  return present({ uidMin, uidMax, overrideNode });
}

export interface AccountEventRequest {
  readonly kind: AccountEventKind;
  readonly email: string;
  /** The account's new generation (password change, reset). */
  readonly generation?: number;
  readonly eventId?: string;
}

function accountEvent(f: Fields): AccountEventRequest {
  const kind = f.kind;
  if (!EVENT_KINDS.some((k) => k === kind)) throw invalid(`kind must be one of ${EVENT_KINDS.join(', ')}`);
  const generation = bounded(f, 'generation', 1, MAX_GENERATION - 1);
  if (kind !== 'delete' && generation === undefined) throw invalid(`a ${kind as string} event needs the account's new generation`);
  const eventId = f.eventId === undefined ? undefined : checked(f.eventId, eventIdProblem(f.eventId));
  return { kind: kind as AccountEventKind, email: email(f), ...(generation === undefined ? {} : { generation }), ...(eventId === undefined ? {} : { eventId }) };
}

/** The ops node assignment adds, by a name of its own, each with its request and its answer. */
export const ASSIGN_SCHEMAS = {
  service: defineOp<{ service: string } & Partial<ServiceSettings>, ServiceSettings & { service: string; created: boolean }>({
    name: 'assign.service',
    fields: ['service', 'pattern', 'releaseRate', 'newUsers', 'topN'],
    parse: (f) => {
      const pattern = f.pattern === undefined ? undefined : checked(f.pattern, patternProblem(f.pattern));
      return { service: service(f), ...present({ pattern, releaseRate: rate(f), newUsers: bool(f, 'newUsers'), topN: bounded(f, 'topN', 1, MAX_TOP_N) }) };
    },
  }),
  services: defineOp<Read, { services: ServiceInfo[] }>({ name: 'assign.services', read: true, fields: ['consistency'], parse: (f) => consistency(f) }),
  addNode: defineOp<{ service: string; node: string; capacity: number } & NodeChanges, Nothing>({
    name: 'assign.addNode',
    fields: ['service', 'node', 'capacity', 'available', 'downed', 'backoff'],
    parse: (f) => {
      const changes = nodeFields(f);
      if (changes.capacity === undefined) throw invalid('capacity is required');
      return { service: service(f), node: node(f), ...changes, capacity: changes.capacity };
    },
  }),
  updateNode: defineOp<{ service: string; node: string } & NodeChanges, Nothing>({
    name: 'assign.updateNode',
    fields: ['service', 'node', 'capacity', 'available', 'downed', 'backoff'],
    parse: (f) => {
      const changes = nodeFields(f);
      if (Object.keys(changes).length === 0) throw invalid('nothing to change: give capacity, available, downed or backoff');
      return { service: service(f), node: node(f), ...changes };
    },
  }),
  removeNode: defineOp<{ service: string; node: string }, { replaced: number }>({
    name: 'assign.removeNode',
    fields: ['service', 'node'],
    parse: (f) => ({ service: service(f), node: node(f) }),
  }),
  nodes: defineOp<{ service: string } & Read, { nodes: NodeInfo[] }>({
    name: 'assign.nodes',
    read: true,
    fields: ['service', 'consistency'],
    parse: (f) => ({ service: service(f), ...consistency(f) }),
  }),
  user: defineOp<{ service: string; email: string; generation: number; keysChangedAt: number; clientState: string }, Assignment>({
    name: 'assign.user',
    fields: ['service', 'email', 'generation', 'keysChangedAt', 'clientState'],
    parse: (f) => {
      const clientState = checked(f.clientState ?? '', clientStateProblem(f.clientState ?? ''));
      return {
        service: service(f),
        email: email(f),
        // MAX_GENERATION marks a retired user: a request may not claim it.
        generation: bounded(f, 'generation', 0, MAX_GENERATION - 1) ?? 0,
        keysChangedAt: bounded(f, 'keysChangedAt', 0, MAX_GENERATION - 1) ?? 0,
        clientState,
      };
    },
  }),
  lookup: defineOp<{ service: string; email: string } & Read, Lookup>({
    name: 'assign.lookup',
    read: true,
    fields: ['service', 'email', 'consistency'],
    parse: (f) => ({ service: service(f), email: email(f), ...consistency(f) }),
  }),
  retire: defineOp<{ email: string; service?: string }, { services: number }>({
    name: 'assign.retire',
    fields: ['email', 'service'],
    parse: (f) => ({ email: email(f), ...(f.service === undefined ? {} : { service: service(f) }) }),
  }),
  /** A whole node, the listed uids, or one drain step of at most `max` (`finished` once none is left). */
  decommission: defineOp<{ service: string; node: string; uids?: number[]; max?: number }, { replaced: number; closed?: boolean; finished?: boolean }>({
    name: 'assign.decommission',
    fields: ['service', 'node', 'uids', 'max'],
    parse: (f) => {
      const list = uids(f);
      const max = bounded(f, 'max', 1, MAX_BATCH);
      if (list !== undefined && max !== undefined) throw invalid('give uids or max, not both');
      return { service: service(f), node: node(f), ...(list === undefined ? {} : { uids: list }), ...present({ max }) };
    },
  }),
  event: defineOp<AccountEventRequest, { changed: number; duplicate?: boolean }>({
    name: 'assign.event',
    fields: ['kind', 'email', 'generation', 'eventId'],
    parse: accountEvent,
  }),
  enqueueEvent: defineOp<{ journal: string; eventId: string } & AccountEventRequest, { queued: boolean }>({
    name: 'assign.enqueueEvent',
    fields: ['journal', 'eventId', 'kind', 'email', 'generation'],
    parse: (f) => {
      const journal = f.journal;
      if (journalNameProblem(journal) !== null) throw invalid('journal must be the name of a journal');
      // The same checks as the event it becomes, so a bad event never reaches the queue.
      const event = accountEvent(f);
      if (event.eventId === undefined) throw invalid('eventId is required: it keys the queued event and makes it apply once');
      return { journal: journal as string, ...event, eventId: event.eventId };
    },
  }),
  purge: defineOp<PurgeSettings & { dryRun: boolean; after?: string }, PurgeResult>({
    name: 'assign.purge',
    fields: ['service', 'graceMs', 'max', 'force', 'dryRun', 'journal', 'after', 'uidMin', 'uidMax', 'overrideNode'],
    parse: (f) => {
      const after = f.after;
      if (after !== undefined && (typeof after !== 'string' || !PURGE_CURSOR.test(after) || !after.split(':').every((n) => Number.isSafeInteger(Number(n))))) {
        throw invalid('after must be the `next` a purge answered');
      }
      return { ...purgeSettings(f), dryRun: bool(f, 'dryRun') ?? false, ...(after === undefined ? {} : { after }) };
    },
  }),
  purgeStart: defineOp<PurgeSettings, PurgeJob>({
    name: 'assign.purgeStart',
    fields: ['service', 'graceMs', 'max', 'force', 'journal', 'uidMin', 'uidMax', 'overrideNode'],
    parse: purgeSettings,
  }),
  purgeStop: defineOp<{ service: string }, PurgeJob & { stopped: boolean }>({ name: 'assign.purgeStop', fields: ['service'], parse: (f) => ({ service: service(f) }) }),
  purgeStatus: defineOp<{ service: string } & Read, PurgeJob>({
    name: 'assign.purgeStatus',
    read: true,
    fields: ['service', 'consistency'],
    parse: (f) => ({ service: service(f), ...consistency(f) }),
  }),
  nodeUsers: defineOp<{ service: string; node: string; after?: number; limit?: number } & Read, { users: NodeUser[]; next: number | null }>({
    name: 'assign.nodeUsers',
    read: true,
    fields: ['service', 'node', 'after', 'limit', 'consistency'],
    parse: (f) => ({ service: service(f), node: node(f), ...present({ after: bounded(f, 'after', 0, Number.MAX_SAFE_INTEGER), limit: bounded(f, 'limit', 1, MAX_BATCH) }), ...consistency(f) }),
  }),
  importUsers: defineOp<{ service: string; users: readonly ImportedUser[] }, { imported: number; present: number; repaired: number }>({
    name: 'assign.importUsers',
    fields: ['service', 'users'],
    parse: (f) => {
      const users = f.users;
      if (!Array.isArray(users) || users.length === 0 || users.length > MAX_BATCH) throw invalid(`users must be an array of 1 to ${MAX_BATCH} records`);
      return { service: service(f), users: users.map((u: unknown, i) => importedUser(u, i)) };
    },
  }),
  /** `moved`: a new record on the node (false: current there already). */
  place: defineOp<{ service: string; email: string; node: string }, Omit<Assignment, 'allocated'> & { moved: boolean }>({
    name: 'assign.place',
    fields: ['service', 'email', 'node'],
    parse: (f) => ({ service: service(f), email: email(f), node: node(f) }),
  }),
  purgeable: defineOp<{ service: string; graceMs: number; max: number } & Read, { service: string; before: number; records: number; capped: boolean }>({
    name: 'assign.purgeable',
    read: true,
    fields: ['service', 'graceMs', 'max', 'consistency'],
    parse: (f) => ({
      service: service(f),
      graceMs: bounded(f, 'graceMs', 0, 2 ** 48) ?? 7 * 24 * 3600 * 1000,
      max: bounded(f, 'max', 1, MAX_PURGEABLE_COUNT) ?? 1000,
      ...consistency(f),
    }),
  }),
  count: defineOp<{ service: string; at?: number } & Read, { service: string; at: number; users: number }>({
    name: 'assign.count',
    read: true,
    fields: ['service', 'at', 'consistency'],
    parse: (f) => ({ service: service(f), ...present({ at: bounded(f, 'at', 0, 2 ** 48) }), ...consistency(f) }),
  }),
};

/** The same ops as request builders by op name, for raw callers (the frame decoder's view). */
export const ASSIGN_OPS = buildersOf(Object.values(ASSIGN_SCHEMAS));
