// The journal's client protocol: the ops it adds and how each request is
// checked. Imports only the protocol package, so the client library uses the
// same checks as the server (a bad request is refused before anything is sent
// or proposed). Documented in docs/protocol.md ("Journal ops").
import { dataField, invalid, uintField, type FamilyRequest, packData, type ProtocolLimits, type RequestBuilder, utf8Length, onlyFields } from '../../protocol/index.js';

export const JOURNAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const MAX_KEY_BYTES = 1024;
/** Items one add may carry. */
export const MAX_ADD_ITEMS = 1000;
/** Items one claim may take. */
export const MAX_CLAIM_ITEMS = 1000;
/** The longest a doneMany may wait on the server for a claim's entry to carry it (held-acks.ts). */
export const MAX_ACK_HOLD_MS = 1000;
/** The longest a claim, or a watch of flags, may wait (ms). */
export const MAX_CLAIM_WAIT_MS = 60_000;
/** Flag events one answer may carry (one entry's are never split, so it may carry a few more). */
export const MAX_FLAG_EVENTS = 1000;
/** The highest journals-per-cluster limit an operator may set (every member holds each journal's definition in memory). */
export const MAX_JOURNALS_CEILING = 1_000_000;
/** Dates are ms since the epoch; this is year 10889, far beyond any real one. */
export const MAX_DATE = 2 ** 48;
const LONE_SURROGATE = /\p{Cs}/u;

export function journalNameProblem(value: unknown): string | null {
  return typeof value === 'string' && JOURNAL_NAME.test(value) ? null : 'name must be 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit';
}

export function journalKeyProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0) return 'key must be a non-empty string';
  if (LONE_SURROGATE.test(value)) return 'key is not valid Unicode (it holds a lone surrogate)';
  if (utf8Length(value) > MAX_KEY_BYTES) return `key is longer than ${MAX_KEY_BYTES} UTF-8 bytes`;
  return null;
}

type Fields = Readonly<Record<string, unknown>>;

function name(f: Fields): string {
  const problem = journalNameProblem(f.name);
  if (problem !== null) throw invalid(problem);
  return f.name as string;
}

function key(value: unknown, where = 'key'): string {
  const problem = journalKeyProblem(value);
  if (problem !== null) throw invalid(where === 'key' ? problem : `${where}: ${problem}`);
  return value as string;
}

function bounded(f: Fields, field: string, min: number, max: number): number | undefined {
  const v = uintField(f, field);
  if (v !== undefined && (v < min || v > max)) throw invalid(`${field} must be in [${min}, ${max}], got ${v}`);
  return v;
}

const SETTINGS = ['timeoutMs', 'maxTimeouts', 'priority', 'expiresInMs', 'maxItems'] as const;

function settings(f: Fields): Partial<Record<(typeof SETTINGS)[number], number>> {
  const out: Partial<Record<(typeof SETTINGS)[number], number>> = {};
  const limits = { timeoutMs: [1, 2 ** 40], maxTimeouts: [0, 255], priority: [0, 255], expiresInMs: [0, MAX_DATE], maxItems: [1, 2 ** 40] } as const;
  for (const s of SETTINGS) {
    const v = bounded(f, s, limits[s][0], limits[s][1]);
    if (v !== undefined) out[s] = v;
  }
  return out;
}

function items(f: Fields, limits: ProtocolLimits): unknown[] {
  const list = f.items;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_ADD_ITEMS) throw invalid(`items must be an array of 1 to ${MAX_ADD_ITEMS} items`);
  return list.map((raw: unknown, i) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`items[${i}] must be a map`);
    const item = raw as Fields;
    for (const k of Object.keys(item)) if (!['key', 'data', 'priority', 'processAt', 'expiresAt'].includes(k)) throw invalid(`items[${i}] has an unexpected field '${k}'`);
    // Encoded once here, in the bytes its limit is measured in; they ride on into the entry and the stored item.
    const data = packData(dataField(item, limits), limits);
    const priority = bounded(item, 'priority', 0, 255);
    const processAt = bounded(item, 'processAt', 0, MAX_DATE);
    const expiresAt = bounded(item, 'expiresAt', 0, MAX_DATE);
    return {
      key: key(item.key, `items[${i}]`),
      data,
      ...(priority === undefined ? {} : { priority }),
      ...(processAt === undefined ? {} : { processAt }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
  });
}

function lease(f: Fields): number {
  const v = uintField(f, 'lease');
  if (v === undefined || v < 1) throw invalid('lease must be the positive lease number a claim returned');
  return v;
}

/** The ops the journal adds, by name, with the request each takes. */
export const JOURNAL_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  ['journal.create', (f, id) => (onlyFields(f, ['name', ...SETTINGS]), { id, op: 'journal.create', name: name(f), ...settings(f) })],
  ['journal.configure', (f, id) => (onlyFields(f, ['name', ...SETTINGS]), { id, op: 'journal.configure', name: name(f), ...settings(f) })],
  ['journal.drop', (f, id) => (onlyFields(f, ['name']), { id, op: 'journal.drop', name: name(f) })],
  ['journal.list', (f, id) => (onlyFields(f, []), { id, op: 'journal.list' })],
  ['journal.show', (f, id) => (onlyFields(f, ['name']), { id, op: 'journal.show', name: name(f) })],
  ['journal.add', (f, id, limits) => (onlyFields(f, ['name', 'items']), { id, op: 'journal.add', name: name(f), items: items(f, limits) })],
  [
    'journal.claim',
    (f, id) => {
      onlyFields(f, ['name', 'max', 'waitMs']);
      const max = bounded(f, 'max', 1, MAX_CLAIM_ITEMS) ?? 1;
      const waitMs = bounded(f, 'waitMs', 0, MAX_CLAIM_WAIT_MS) ?? 0;
      return { id, op: 'journal.claim', name: name(f), max, waitMs };
    },
  ],
  // Calls off this session's claims of the journal that wait on the member (a worker stopping): each answers at once, empty.
  ['journal.cancelWait', (f, id) => (onlyFields(f, ['name']), { id, op: 'journal.cancelWait', name: name(f) })],
  ['journal.extend', (f, id) => (onlyFields(f, ['name', 'key', 'lease']), { id, op: 'journal.extend', name: name(f), key: key(f.key), lease: lease(f) })],
  [
    'journal.done',
    (f, id) => {
      onlyFields(f, ['name', 'key', 'lease', 'claim']);
      const claim = bounded(f, 'claim', 1, MAX_CLAIM_ITEMS);
      return { id, op: 'journal.done', name: name(f), key: key(f.key), lease: lease(f), ...(claim === undefined ? {} : { claim }) };
    },
  ],
  [
    'journal.doneMany',
    (f, id) => {
      onlyFields(f, ['name', 'items', 'claim', 'holdMs']);
      const list = f.items;
      if (!Array.isArray(list) || list.length === 0 || list.length > MAX_CLAIM_ITEMS) throw invalid(`items must be an array of 1 to ${MAX_CLAIM_ITEMS} {key, lease} maps`);
      const items = list.map((raw: unknown, i) => {
        if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(`items[${i}] must be a map of key and lease`);
        const item = raw as Fields;
        for (const k of Object.keys(item)) if (k !== 'key' && k !== 'lease') throw invalid(`items[${i}] has an unexpected field '${k}'`);
        return { key: key(item.key, `items[${i}]`), lease: lease(item) };
      });
      const claim = bounded(f, 'claim', 1, MAX_CLAIM_ITEMS);
      const holdMs = bounded(f, 'holdMs', 1, MAX_ACK_HOLD_MS);
      if (claim !== undefined && holdMs !== undefined) throw invalid('holdMs is for acknowledgements without a claim (a claim is proposed at once)');
      return { id, op: 'journal.doneMany', name: name(f), items, ...(claim === undefined ? {} : { claim }), ...(holdMs === undefined ? {} : { holdMs }) };
    },
  ],
  [
    'journal.release',
    (f, id) => {
      onlyFields(f, ['name', 'key', 'lease', 'processAt', 'failure']);
      const processAt = bounded(f, 'processAt', 0, MAX_DATE);
      if (f.failure !== undefined && typeof f.failure !== 'boolean') throw invalid('failure must be a boolean');
      // A release is a failed processing unless it says `failure: false` (a worker handing back work it did not start).
      const failure = f.failure === false ? { failure: false } : {};
      return { id, op: 'journal.release', name: name(f), key: key(f.key), lease: lease(f), ...(processAt === undefined ? {} : { processAt }), ...failure };
    },
  ],
  ['journal.flagged', (f, id) => (onlyFields(f, ['name', 'limit']), { id, op: 'journal.flagged', name: name(f), limit: bounded(f, 'limit', 1, 10_000) ?? 1000 })],
  [
    'journal.flags',
    (f, id) => {
      onlyFields(f, ['name', 'after', 'waitMs', 'limit']);
      const after = uintField(f, 'after');
      const waitMs = bounded(f, 'waitMs', 0, MAX_CLAIM_WAIT_MS) ?? 0;
      const limit = bounded(f, 'limit', 1, MAX_FLAG_EVENTS) ?? 100;
      return { id, op: 'journal.flags', name: name(f), ...(after === undefined ? {} : { after }), waitMs, limit };
    },
  ],
  [
    'journal.limits',
    (f, id) => {
      onlyFields(f, ['maxJournals']);
      const maxJournals = bounded(f, 'maxJournals', 1, MAX_JOURNALS_CEILING);
      return { id, op: 'journal.limits', ...(maxJournals === undefined ? {} : { maxJournals }) };
    },
  ],
  ['journal.requeue', (f, id) => (onlyFields(f, ['name', 'key']), { id, op: 'journal.requeue', name: name(f), key: key(f.key) })],
  ['journal.forget', (f, id) => (onlyFields(f, ['name', 'key']), { id, op: 'journal.forget', name: name(f), key: key(f.key) })],
]);

export type JournalRequest = FamilyRequest;
