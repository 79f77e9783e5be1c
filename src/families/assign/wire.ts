// Node assignment's client protocol: the ops it adds and how each request is
// checked. Imports only the protocol package, so the client library uses the
// same checks as the server (a bad request is refused before anything is sent
// or proposed). Documented in docs/protocol.md ("Node assignment ops") and
// docs/assignment.md.
import { journalNameProblem } from '../journal/wire.js';
import { invalid, uintField, type RequestBuilder, utf8Length, onlyFields } from '../../protocol/index.js';

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

type Fields = Readonly<Record<string, unknown>>;

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

/** A read's consistency: linearizable (through the leader, the default) or stale (this member's applied state). */
function consistency(f: Fields): Record<string, unknown> {
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

/** Fields that are present, in a fixed order (a request never carries `undefined`). */
function present(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

function nodeFields(f: Fields): Record<string, unknown> {
  return present({
    capacity: bounded(f, 'capacity', 0, MAX_CAPACITY),
    available: bounded(f, 'available', 0, MAX_CAPACITY),
    downed: bool(f, 'downed'),
    backoff: bounded(f, 'backoff', 0, 2 ** 31),
  });
}

/** One record of an import, as Tokenserver's users table holds it (uid and dates kept). */
function importedUser(u: unknown, at: number): Record<string, unknown> {
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


/** What a purge and a purge job share: the service, grace period, batch size, force, clean-up journal and uid/node scope. */
function purgeSettings(f: Fields) {
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

/** A purge's uid range (upstream's --range_start/--range_end) and override node (--override_node, with force and a journal). */
function purgeScope(f: Fields, journal: boolean): Record<string, unknown> {
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

/** The ops node assignment adds, by name, with the request each takes. */
export const ASSIGN_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  [
    'assign.service',
    (f, id) => {
      onlyFields(f, ['service', 'pattern', 'releaseRate', 'newUsers', 'topN']);
      const pattern = f.pattern === undefined ? undefined : checked(f.pattern, patternProblem(f.pattern));
      return { id, op: 'assign.service', service: service(f), ...present({ pattern, releaseRate: rate(f), newUsers: bool(f, 'newUsers'), topN: bounded(f, 'topN', 1, MAX_TOP_N) }) };
    },
  ],
  ['assign.services', (f, id) => (onlyFields(f, ['consistency']), { id, op: 'assign.services', ...consistency(f) })],
  [
    'assign.addNode',
    (f, id) => {
      onlyFields(f, ['service', 'node', 'capacity', 'available', 'downed', 'backoff']);
      if (f.capacity === undefined) throw invalid('capacity is required');
      return { id, op: 'assign.addNode', service: service(f), node: node(f), ...nodeFields(f) };
    },
  ],
  [
    'assign.updateNode',
    (f, id) => {
      onlyFields(f, ['service', 'node', 'capacity', 'available', 'downed', 'backoff']);
      const changes = nodeFields(f);
      if (Object.keys(changes).length === 0) throw invalid('nothing to change: give capacity, available, downed or backoff');
      return { id, op: 'assign.updateNode', service: service(f), node: node(f), ...changes };
    },
  ],
  ['assign.removeNode', (f, id) => (onlyFields(f, ['service', 'node']), { id, op: 'assign.removeNode', service: service(f), node: node(f) })],
  ['assign.nodes', (f, id) => (onlyFields(f, ['service', 'consistency']), { id, op: 'assign.nodes', service: service(f), ...consistency(f) })],
  [
    'assign.user',
    (f, id) => {
      onlyFields(f, ['service', 'email', 'generation', 'keysChangedAt', 'clientState']);
      const clientState = checked(f.clientState ?? '', clientStateProblem(f.clientState ?? ''));
      return {
        id,
        op: 'assign.user',
        service: service(f),
        email: email(f),
        // MAX_GENERATION marks a retired user: a request may not claim it.
        generation: bounded(f, 'generation', 0, MAX_GENERATION - 1) ?? 0,
        keysChangedAt: bounded(f, 'keysChangedAt', 0, MAX_GENERATION - 1) ?? 0,
        clientState,
      };
    },
  ],
  ['assign.lookup', (f, id) => (onlyFields(f, ['service', 'email', 'consistency']), { id, op: 'assign.lookup', service: service(f), email: email(f), ...consistency(f) })],
  [
    'assign.retire',
    (f, id) => {
      onlyFields(f, ['email', 'service']);
      return { id, op: 'assign.retire', email: email(f), ...(f.service === undefined ? {} : { service: service(f) }) };
    },
  ],
  [
    'assign.decommission',
    (f, id) => {
      onlyFields(f, ['service', 'node', 'uids', 'max']);
      const list = uids(f);
      const max = bounded(f, 'max', 1, MAX_BATCH);
      if (list !== undefined && max !== undefined) throw invalid('give uids or max, not both');
      return { id, op: 'assign.decommission', service: service(f), node: node(f), ...(list === undefined ? {} : { uids: list }), ...present({ max }) };
    },
  ],
  [
    'assign.event',
    (f, id) => {
      onlyFields(f, ['kind', 'email', 'generation', 'eventId']);
      if (!EVENT_KINDS.includes(f.kind as AccountEventKind)) throw invalid(`kind must be one of ${EVENT_KINDS.join(', ')}`);
      const generation = bounded(f, 'generation', 1, MAX_GENERATION - 1);
      if (f.kind !== 'delete' && generation === undefined) throw invalid(`a ${f.kind as string} event needs the account's new generation`);
      const eventId = f.eventId === undefined ? undefined : checked(f.eventId, eventIdProblem(f.eventId));
      return { id, op: 'assign.event', kind: f.kind, email: email(f), ...(generation === undefined ? {} : { generation }), ...(eventId === undefined ? {} : { eventId }) };
    },
  ],
  [
    'assign.enqueueEvent',
    (f, id) => {
      onlyFields(f, ['journal', 'eventId', 'kind', 'email', 'generation']);
      const journal = f.journal;
      if (journalNameProblem(journal) !== null) throw invalid('journal must be the name of a journal');
      // The same checks as the event it becomes, so a bad event never reaches the queue.
      const { id: _id, op: _op, ...event } = ASSIGN_OPS.get('assign.event')!({ kind: f.kind, email: f.email, generation: f.generation, eventId: f.eventId }, id, undefined as never);
      if (event.eventId === undefined) throw invalid('eventId is required: it keys the queued event and makes it apply once');
      return { id, op: 'assign.enqueueEvent', journal, ...event };
    },
  ],
  [
    'assign.purge',
    (f, id) => {
      onlyFields(f, ['service', 'graceMs', 'max', 'force', 'dryRun', 'journal', 'after', 'uidMin', 'uidMax', 'overrideNode']);
      if (f.after !== undefined && (typeof f.after !== 'string' || !PURGE_CURSOR.test(f.after) || !f.after.split(':').every((n) => Number.isSafeInteger(Number(n))))) {
        throw invalid('after must be the `next` a purge answered');
      }
      return {
        id,
        op: 'assign.purge',
        ...purgeSettings(f),
        dryRun: bool(f, 'dryRun') ?? false,
        ...(f.after === undefined ? {} : { after: f.after }),
      };
    },
  ],
  [
    'assign.purgeStart',
    (f, id) => {
      onlyFields(f, ['service', 'graceMs', 'max', 'force', 'journal', 'uidMin', 'uidMax', 'overrideNode']);
      return { id, op: 'assign.purgeStart', ...purgeSettings(f) };
    },
  ],
  ['assign.purgeStop', (f, id) => (onlyFields(f, ['service']), { id, op: 'assign.purgeStop', service: service(f) })],
  ['assign.purgeStatus', (f, id) => (onlyFields(f, ['service', 'consistency']), { id, op: 'assign.purgeStatus', service: service(f), ...consistency(f) })],
  [
    'assign.nodeUsers',
    (f, id) => {
      onlyFields(f, ['service', 'node', 'after', 'limit', 'consistency']);
      return { id, op: 'assign.nodeUsers', service: service(f), node: node(f), ...present({ after: bounded(f, 'after', 0, Number.MAX_SAFE_INTEGER), limit: bounded(f, 'limit', 1, MAX_BATCH) }), ...consistency(f) };
    },
  ],
  [
    'assign.importUsers',
    (f, id) => {
      onlyFields(f, ['service', 'users']);
      const users = f.users;
      if (!Array.isArray(users) || users.length === 0 || users.length > MAX_BATCH) throw invalid(`users must be an array of 1 to ${MAX_BATCH} records`);
      return { id, op: 'assign.importUsers', service: service(f), users: users.map((u: unknown, i) => importedUser(u, i)) };
    },
  ],
  ['assign.place', (f, id) => (onlyFields(f, ['service', 'email', 'node']), { id, op: 'assign.place', service: service(f), email: email(f), node: node(f) })],
  [
    'assign.purgeable',
    (f, id) => {
      onlyFields(f, ['service', 'graceMs', 'max', 'consistency']);
      return {
        id,
        op: 'assign.purgeable',
        service: service(f),
        graceMs: bounded(f, 'graceMs', 0, 2 ** 48) ?? 7 * 24 * 3600 * 1000,
        max: bounded(f, 'max', 1, MAX_PURGEABLE_COUNT) ?? 1000,
        ...consistency(f),
      };
    },
  ],
  [
    'assign.count',
    (f, id) => (onlyFields(f, ['service', 'at', 'consistency']), { id, op: 'assign.count', service: service(f), ...present({ at: bounded(f, 'at', 0, 2 ** 48) }), ...consistency(f) }),
  ],
]);
