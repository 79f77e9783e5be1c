// Node assignment's commands: what its entries carry, checked field by field
// (on the leader before proposing, and on every member when decoding an entry).
import { CommandError } from '../../statemachine/family.js';
import { boolField, integerField } from '../fields.js';
import { journalNameProblem } from '../journal/wire.js';
import type { PurgeJobSettings } from './purge-job.js';
import type { ServiceSettings, UserRecord } from './records.js';
import {
  clientStateProblem,
  eventIdProblem,
  EVENT_KINDS,
  MAX_BATCH,
  MAX_CAPACITY,
  MAX_GENERATION,
  MAX_TOP_N,
  nameProblem,
  PURGE_CURSOR,
  patternProblem,
  serviceNameProblem,
  type AccountEventKind,
  type NodeChanges,
} from './wire.js';

export type { NodeChanges } from './wire.js';

export type AssignCommand =
  /** Creates the service, or changes the settings given (the others keep their values, or take the defaults when new). */
  | { readonly op: 'service'; readonly service: string; readonly settings: Partial<ServiceSettings> }
  | { readonly op: 'addNode'; readonly service: string; readonly node: string; readonly capacity: number; readonly available: number; readonly downed: boolean; readonly backoff: number }
  | ({ readonly op: 'updateNode'; readonly service: string; readonly node: string } & NodeChanges)
  | { readonly op: 'removeNode'; readonly service: string; readonly node: string }
  /**
   * Tokenserver's request: get or create the user, validate, update. `pick` is the
   * leader's random choice among the top N nodes, carried so every member agrees.
   */
  | {
      readonly op: 'login';
      readonly service: string;
      readonly email: string;
      readonly generation: number;
      readonly keysChangedAt: number;
      readonly clientState: string;
      readonly pick: number;
    }
  | { readonly op: 'retire'; readonly email: string; readonly service?: string }
  | { readonly op: 'decommission'; readonly service: string; readonly node: string; readonly uids?: readonly number[]; readonly max: number }
  /** With `eventId`, applied once per id (within EVENT_ID_RETENTION_MS): a repeat changes nothing. */
  | { readonly op: 'event'; readonly kind: AccountEventKind; readonly email: string; readonly generation?: number; readonly eventId?: string }
  /**
   * An operator places the user on a named node (Tokenserver's allocate_user.py EMAIL NODE):
   * a new user gets its first record there; a known one a copy of its current record there,
   * every other record replaced. Nothing changes when it is current there already.
   */
  | { readonly op: 'place'; readonly service: string; readonly email: string; readonly node: string }
  /**
   * Records from a Tokenserver database, uids kept (at most MAX_BATCH per entry). An import
   * repeated with the same records changes nothing; a uid held by another record is refused.
   */
  | { readonly op: 'importUsers'; readonly service: string; readonly users: readonly UserRecord[] }
  /** Deletes the listed replaced records if they are still replaced before `before` (and not on a downed node, unless forced). */
  | { readonly op: 'purge'; readonly service: string; readonly before: number; readonly uids: readonly number[]; readonly force: boolean }
  /** Starts a purge the leader runs until done (purge-job.ts); refused while one runs for the service. */
  | { readonly op: 'purgeStart'; readonly service: string; readonly settings: PurgeJobSettings }
  /** Stops the service's purge job; with `seq` only that job, and with `error` it is marked failed (the duty's own stop). */
  | { readonly op: 'purgeStop'; readonly service: string; readonly seq?: number; readonly error?: string }
  /**
   * One step of job `seq`: purges `uids` as `purge` does, and moves the job's cursor from `from`
   * to `to` with the counts the leader found on the way. Changes nothing unless the job is
   * running with that seq and cursor. `done`: the step looked at every record due.
   */
  | {
      readonly op: 'purgeStep';
      readonly service: string;
      readonly seq: number;
      readonly from: string;
      readonly to: string;
      readonly done: boolean;
      readonly before: number;
      readonly uids: readonly number[];
      readonly skipped: number;
      readonly overridden: number;
      readonly activeData: number;
    };

function text(value: unknown, problem: string | null): string {
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

export const serviceField = (v: unknown): string => text(v, serviceNameProblem(v));
export const nodeField = (v: unknown): string => text(v, nameProblem(v, 'node'));
export const emailField = (v: unknown): string => text(v, nameProblem(v, 'email'));
export const clientStateField = (v: unknown): string => text(v, clientStateProblem(v));
export const eventIdField = (v: unknown): string => text(v, eventIdProblem(v));

/** A generation or keys-changed-at a request reports: below MAX_GENERATION, which only retirement sets. */
export function generationField(v: unknown, name: string): number {
  return integerField(v, name, 0, MAX_GENERATION - 1);
}

/** The settings a new service takes where its request gives none. */
export const DEFAULT_SERVICE: ServiceSettings = { pattern: '{node}/1.5/{uid}', releaseRate: 0.1, newUsers: true, topN: 1 };

/** Any of a service's settings; each present one checked. */
export function settingsField(value: unknown): Partial<ServiceSettings> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CommandError('settings must be a map');
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) if (!['pattern', 'releaseRate', 'newUsers', 'topN'].includes(key)) throw new CommandError(`settings has an unexpected field '${key}'`);
  const { pattern, releaseRate } = v;
  if (releaseRate !== undefined && (typeof releaseRate !== 'number' || !Number.isFinite(releaseRate) || releaseRate <= 0 || releaseRate > 1)) throw new CommandError('releaseRate must be in (0, 1]');
  // A fixed field order: the leader applies the command it encoded, and every member the decoded one.
  const out: { -readonly [K in keyof ServiceSettings]?: ServiceSettings[K] } = {};
  if (pattern !== undefined) out.pattern = text(pattern, patternProblem(pattern));
  if (releaseRate !== undefined) out.releaseRate = releaseRate as number;
  if (v.newUsers !== undefined) out.newUsers = boolField(v.newUsers, 'newUsers');
  if (v.topN !== undefined) out.topN = integerField(v.topN, 'topN', 1, MAX_TOP_N);
  return out;
}

export function capacityField(v: unknown, name: string): number {
  return integerField(v, name, 0, MAX_CAPACITY);
}

export function backoffField(v: unknown): number {
  return integerField(v, 'backoff', 0, 2 ** 31);
}

export function uidsField(v: unknown, allowEmpty: boolean): number[] {
  if (!Array.isArray(v) || (!allowEmpty && v.length === 0) || v.length > MAX_BATCH) throw new CommandError(`uids must be an array of ${allowEmpty ? 0 : 1} to ${MAX_BATCH} uids`);
  return v.map((u, i) => integerField(u, `uids[${i}]`, 1, Number.MAX_SAFE_INTEGER));
}

export function kindField(v: unknown): AccountEventKind {
  if (!EVENT_KINDS.includes(v as AccountEventKind)) throw new CommandError(`kind must be one of ${EVENT_KINDS.join(', ')}`);
  return v as AccountEventKind;
}

export function nodeChanges(c: Readonly<Record<string, unknown>>): NodeChanges {
  const out: { capacity?: number; available?: number; downed?: boolean; backoff?: number } = {};
  if (c.capacity !== undefined) out.capacity = capacityField(c.capacity, 'capacity');
  if (c.available !== undefined) out.available = capacityField(c.available, 'available');
  if (c.downed !== undefined) out.downed = boolField(c.downed, 'downed');
  if (c.backoff !== undefined) out.backoff = backoffField(c.backoff);
  if (Object.keys(out).length === 0) throw new CommandError('updateNode changes nothing');
  return out;
}

/** One imported record: every field checked as a request's would be, the uid and dates as given. */
export function importedUserField(v: unknown, service: string, at: number): UserRecord {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new CommandError(`users[${at}] must be a map`);
  const u = v as Record<string, unknown>;
  for (const key of Object.keys(u)) if (!IMPORTED_FIELDS.includes(key) && key !== 'service') throw new CommandError(`users[${at}] has an unexpected field '${key}'`);
  if (u.service !== undefined && u.service !== service) throw new CommandError(`users[${at}] is of service ${String(u.service)}, not ${service}`);
  return {
    uid: integerField(u.uid, `users[${at}].uid`, 1, Number.MAX_SAFE_INTEGER - 1),
    service,
    email: emailField(u.email),
    generation: integerField(u.generation, `users[${at}].generation`, 0, MAX_GENERATION),
    clientState: clientStateField(u.clientState),
    keysChangedAt: integerField(u.keysChangedAt, `users[${at}].keysChangedAt`, 0, MAX_GENERATION - 1),
    createdAt: integerField(u.createdAt, `users[${at}].createdAt`, 0, 2 ** 48),
    replacedAt: integerField(u.replacedAt, `users[${at}].replacedAt`, 0, 2 ** 48),
    node: nodeField(u.node),
  };
}

export const IMPORTED_FIELDS = ['uid', 'email', 'generation', 'clientState', 'keysChangedAt', 'createdAt', 'replacedAt', 'node'];

export function importedUsersField(v: unknown, service: string): UserRecord[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_BATCH) throw new CommandError(`users must be an array of 1 to ${MAX_BATCH} records`);
  return v.map((u, i) => importedUserField(u, service, i));
}

/** A purge cursor (`replacedAt:uid`), or '' for the start. */
export function cursorField(v: unknown, name: string): string {
  if (v === '' || (typeof v === 'string' && PURGE_CURSOR.test(v) && v.split(':').every((n) => Number.isSafeInteger(Number(n))))) return v;
  throw new CommandError(`${name} must be a purge cursor or ''`);
}

/** What a purge job does at each step: a purge batch's fields, checked as a request's are. */
export function purgeJobSettingsField(v: unknown): PurgeJobSettings {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new CommandError('settings must be a map');
  const s = v as Record<string, unknown>;
  for (const key of Object.keys(s)) if (!PURGE_JOB_FIELDS.includes(key)) throw new CommandError(`settings has an unexpected field '${key}'`);
  const uidMin = integerField(s.uidMin, 'uidMin', 0, Number.MAX_SAFE_INTEGER);
  const uidMax = integerField(s.uidMax, 'uidMax', 0, Number.MAX_SAFE_INTEGER);
  if (uidMin !== 0 && uidMax !== 0 && uidMin > uidMax) throw new CommandError(`uidMin ${uidMin} is above uidMax ${uidMax}`);
  const overrideNode = s.overrideNode === '' ? '' : nodeField(s.overrideNode);
  const journal = s.journal as string;
  if (journal !== '' && journalNameProblem(journal) !== null) throw new CommandError('journal must be a journal name or empty');
  const force = boolField(s.force, 'force');
  if (overrideNode !== '' && (!force || journal === '')) throw new CommandError('overrideNode needs force and a journal');
  return { graceMs: integerField(s.graceMs, 'graceMs', 0, 2 ** 48), max: integerField(s.max, 'max', 1, MAX_BATCH), force, uidMin, uidMax, overrideNode, journal };
}

const PURGE_JOB_FIELDS = ['graceMs', 'max', 'force', 'uidMin', 'uidMax', 'overrideNode', 'journal'];
