// The journal family's commands: what its entries carry, checked field by field
// (on the leader before proposing, and on every member when decoding an entry).
import { MAX_INDEX } from '../../keys/index.js';
import { CommandError } from '../family.js';
import { integerField, indexField, quotaField } from '../fields.js';
import type { JournalSettings } from './records.js';
import type { StorageLimits } from '../quota/index.js';
import { journalKeyProblem, journalNameProblem, MAX_ADD_ITEMS, MAX_CLAIM_ITEMS, MAX_DATE, MAX_JOURNALS_CEILING } from './wire.js';

export { MAX_CLAIM_ITEMS, MAX_JOURNALS_CEILING };
/** Journals one cluster may hold until an operator sets another limit. */
export const DEFAULT_MAX_JOURNALS = 10_000;


export interface AddedItem {
  readonly key: string;
  readonly data: unknown;
  /** Defaults: the journal's priority, now, and its default expiry. */
  readonly priority?: number;
  readonly processAt?: number;
  readonly expiresAt?: number;
}

export type JournalCommand =
  | { readonly op: 'create'; readonly name: string; readonly settings: JournalSettings }
  | { readonly op: 'configure'; readonly name: string; readonly settings: JournalSettings }
  | { readonly op: 'drop'; readonly name: string }
  /**
   * `user`: who adds (the caller's user, command version 9), charged for the items it adds
   * and judged against `userQuota` (the leader's default limits per user) or its own settings;
   * the two go together. Without them the items are charged to nobody.
   */
  | { readonly op: 'add'; readonly name: string; readonly items: readonly AddedItem[]; readonly user?: string; readonly userQuota?: StorageLimits }
  /** `maxBytes`: stop before the claimed items' stored bytes pass this (the serving member's reply budget); at least one is taken. */
  | { readonly op: 'claim'; readonly name: string; readonly max: number; readonly maxBytes?: number }
  | { readonly op: 'extend'; readonly name: string; readonly key: string; readonly lease: number }
  /** `claim`: also claim up to this many items under this entry's lease (a worker's next job, in the same entry). */
  | { readonly op: 'done'; readonly name: string; readonly key: string; readonly lease: number; readonly claim?: number; readonly claimBytes?: number }
  /** Many items done in one entry, each under its own lease (a stale one is reported, not fatal); `claim` as in done. */
  | { readonly op: 'doneMany'; readonly name: string; readonly items: ReadonlyArray<readonly [string, number]>; readonly claim?: number; readonly claimBytes?: number }
  /**
   * From command version 9 a release is a failed processing (its counters rise, and past the
   * maximum it is flagged) unless `failure` is false (a worker handing back work it did not
   * start, e.g. while shutting down).
   */
  | { readonly op: 'release'; readonly name: string; readonly key: string; readonly lease: number; readonly processAt?: number; readonly failure?: false }
  | { readonly op: 'timeout'; readonly name: string; readonly claims: ReadonlyArray<readonly [string, number]> }
  | { readonly op: 'expire'; readonly name: string; readonly max: number }
  | { readonly op: 'requeue'; readonly name: string; readonly key: string }
  | { readonly op: 'forget'; readonly name: string; readonly key: string }
  | { readonly op: 'limits'; readonly maxJournals: number };

export function nameField(value: unknown): string {
  const problem = journalNameProblem(value);
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

export function keyField(value: unknown): string {
  const problem = journalKeyProblem(value);
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

export function priorityField(value: unknown, name = 'priority'): number {
  return integerField(value, name, 0, 255);
}

/** A release's `failure` field: only ever false (a release is a failure unless it says not). */
export function notAFailure(value: unknown): false {
  if (value !== false) throw new CommandError('failure, when given, must be false (a release counts as a failure unless it says not)');
  return false;
}

export function dateField(value: unknown, name: string): number {
  return integerField(value, name, 0, MAX_DATE);
}

export function settingsField(value: unknown): JournalSettings {
  const v = record(value, 'settings', ['timeoutMs', 'maxTimeouts', 'priority', 'expiresInMs', 'maxItems']);
  return {
    timeoutMs: integerField(v.timeoutMs, 'settings.timeoutMs', 1, 2 ** 40),
    maxTimeouts: integerField(v.maxTimeouts, 'settings.maxTimeouts', 0, 255),
    priority: priorityField(v.priority, 'settings.priority'),
    expiresInMs: integerField(v.expiresInMs, 'settings.expiresInMs', 0, MAX_DATE),
    maxItems: integerField(v.maxItems, 'settings.maxItems', 1, 2 ** 40),
  };
}

export function itemsField(value: unknown): AddedItem[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ADD_ITEMS) {
    throw new CommandError(`items must be an array of 1 to ${MAX_ADD_ITEMS} items`);
  }
  return value.map((raw: unknown, i) => {
    const v = record(raw, `items[${i}]`, ['key', 'data', 'priority', 'processAt', 'expiresAt']);
    if (!('data' in v) || v.data === undefined) throw new CommandError(`items[${i}].data is missing`);
    return {
      key: keyField(v.key),
      data: v.data,
      ...(v.priority === undefined ? {} : { priority: priorityField(v.priority, `items[${i}].priority`) }),
      ...(v.processAt === undefined ? {} : { processAt: dateField(v.processAt, `items[${i}].processAt`) }),
      ...(v.expiresAt === undefined ? {} : { expiresAt: dateField(v.expiresAt, `items[${i}].expiresAt`) }),
    };
  });
}

/** An add's user and the default limits it is judged against: both or neither. */
export function addChargeFields(c: Readonly<Record<string, unknown>>): { user?: string; userQuota?: StorageLimits } {
  if (c.user === undefined && c.userQuota === undefined) return {};
  if (typeof c.user !== 'string' || c.user.length === 0 || c.user.length > 128) throw new CommandError('user must be a user name');
  if (c.userQuota === undefined) throw new CommandError('user goes with userQuota');
  return { user: c.user, userQuota: quotaField(c.userQuota, ['items', 'bytes']) as StorageLimits };
}

export function leaseField(value: unknown): number {
  return integerField(value, 'lease', 1, MAX_INDEX);
}

/** [key, lease] pairs: `what` names the field in errors; at least `min` of them. */
export function claimsField(value: unknown, what = 'claims', min = 0): Array<readonly [string, number]> {
  if (!Array.isArray(value) || value.length < min || value.length > MAX_CLAIM_ITEMS) throw new CommandError(`${what} must be an array of ${min} to ${MAX_CLAIM_ITEMS} [key, lease] pairs`);
  return value.map((pair: unknown) => {
    if (!Array.isArray(pair) || pair.length !== 2) throw new CommandError('each claim must be [key, lease]');
    return [keyField(pair[0]), leaseField(pair[1])] as const;
  });
}

export function countField(value: unknown, name: string, max: number): number {
  return integerField(value, name, 1, max);
}

export { indexField };

function record(value: unknown, what: string, allowed: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CommandError(`${what} must be a map`);
  for (const key of Object.keys(value)) if (!allowed.includes(key)) throw new CommandError(`${what} has an unexpected field '${key}'`);
  return value as Record<string, unknown>;
}
