// The journal family's commands: what its entries carry, checked field by field
// (on the leader before proposing, and on every member when decoding an entry).
import { MAX_INDEX } from '../../keys/index.js';
import { CommandError } from '../../statemachine/family.js';
import { integerField, indexField, quotaField } from '../fields.js';
import type { JournalSettings, RetryPolicy } from './records.js';
import type { StorageLimits } from '../../kit/index.js';
import { boundedError, journalKeyProblem, journalNameProblem, MAX_ADD_ITEMS, MAX_CLAIM_ITEMS, MAX_DATE, MAX_ERROR_BYTES, MAX_JOURNALS_CEILING, MAX_KEEP_MS, parseRateLimit, parseRetryPolicy } from './wire.js';
import { utf8Length } from '../../protocol/index.js';
import { parseScheduleSpec, scheduleIdProblem } from './wire.js';
import type { ScheduleSpec } from './schedules.js';
import { parseCron } from './cron.js';

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
  /** This item's own retry policy (command version 9). */
  readonly retry?: RetryPolicy;
}

/** A done item: [key, lease], or [key, lease, result] to keep a result (command version 9). */
export type DoneItem = readonly [string, number] | readonly [string, number, unknown];

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
  /**
   * `maxBytes`: stop before the claimed items' stored bytes pass this (the serving member's reply budget); at least one is taken.
   * `dueBy` (command version 9): take the items due by this date rather than by the entry's clock, when it is later (at most
   * CLAIM_AHEAD_MAX_MS later, apply.ts): a claim proposed a Raft round ahead of an item's date, whose serving member holds
   * the reply until the date (docs/journal.md, "Claims a round ahead"). The replicated clock stays the entry's.
   */
  | { readonly op: 'claim'; readonly name: string; readonly max: number; readonly maxBytes?: number; readonly dueBy?: number }
  | { readonly op: 'extend'; readonly name: string; readonly key: string; readonly lease: number }
  /** `claim`: also claim up to this many items under this entry's lease (a worker's next job, in the same entry). */
  | { readonly op: 'done'; readonly name: string; readonly key: string; readonly lease: number; readonly claim?: number; readonly claimBytes?: number; readonly result?: unknown }
  /** Many items done in one entry, each under its own lease (a stale one is reported, not fatal); `claim` as in done, `dueBy` as in claim. */
  | { readonly op: 'doneMany'; readonly name: string; readonly items: readonly DoneItem[]; readonly claim?: number; readonly claimBytes?: number; readonly dueBy?: number }
  /**
   * From command version 9 a release is a failed processing (its counters rise, and past the
   * maximum it is flagged) unless `failure` is false (a worker handing back work it did not
   * start, e.g. while shutting down).
   */
  | {
      readonly op: 'release';
      readonly name: string;
      readonly key: string;
      readonly lease: number;
      readonly processAt?: number;
      readonly failure?: false;
      /** Command version 9: the failure's error text (kept on the item), and a failure no retry can mend (flagged at once). */
      readonly error?: string;
      readonly unrecoverable?: true;
    }
  /** Command version 9: a job removed by key (Waiting: deleted; Processing: cancelled). */
  | { readonly op: 'remove'; readonly name: string; readonly key: string }
  | { readonly op: 'pause'; readonly name: string; readonly paused: boolean }
  /** Deletes up to `max` Waiting items (a drain proposes these until one deletes fewer). */
  | { readonly op: 'drain'; readonly name: string; readonly max: number }
  | { readonly op: 'progress'; readonly name: string; readonly key: string; readonly lease: number; readonly progress: unknown }
  /** Deletes up to `max` kept results whose time is up (a leader duty). */
  | { readonly op: 'expireResults'; readonly name: string; readonly max: number }
  | { readonly op: 'timeout'; readonly name: string; readonly claims: ReadonlyArray<readonly [string, number]> }
  | { readonly op: 'expire'; readonly name: string; readonly max: number }
  | { readonly op: 'requeue'; readonly name: string; readonly key: string }
  | { readonly op: 'forget'; readonly name: string; readonly key: string }
  | { readonly op: 'limits'; readonly maxJournals: number }
  /** Command version 9, repeatable jobs: a schedule added (or replaced, its ticks so far kept), removed, and one tick of it (a leader duty). */
  | { readonly op: 'schedule'; readonly name: string; readonly schedule: ScheduleSpec }
  | { readonly op: 'unschedule'; readonly name: string; readonly id: string }
  | { readonly op: 'tick'; readonly name: string; readonly id: string; readonly tick: number };

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
  const v = record(value, 'settings', ['timeoutMs', 'maxTimeouts', 'priority', 'expiresInMs', 'maxItems', 'retry', 'keepResultsMs', 'rateLimit']);
  const rate = v.rateLimit === undefined ? undefined : parseRateLimit(v.rateLimit);
  if (typeof rate === 'string') throw new CommandError(rate);
  return {
    timeoutMs: integerField(v.timeoutMs, 'settings.timeoutMs', 1, 2 ** 40),
    maxTimeouts: integerField(v.maxTimeouts, 'settings.maxTimeouts', 0, 255),
    priority: priorityField(v.priority, 'settings.priority'),
    expiresInMs: integerField(v.expiresInMs, 'settings.expiresInMs', 0, MAX_DATE),
    maxItems: integerField(v.maxItems, 'settings.maxItems', 1, 2 ** 40),
    ...(v.retry === undefined ? {} : { retry: retryField(v.retry, 'settings.retry') }),
    ...(v.keepResultsMs === undefined ? {} : { keepResultsMs: integerField(v.keepResultsMs, 'settings.keepResultsMs', 0, MAX_KEEP_MS) }),
    ...(rate === undefined ? {} : { rateLimit: rate }),
  };
}

/** Whether settings use what command version 9 brought (create and configure need it then). */
export function settingsNeedV9(s: JournalSettings): boolean {
  return s.retry !== undefined || s.keepResultsMs !== undefined || s.rateLimit !== undefined;
}

export function retryField(value: unknown, where: string): RetryPolicy {
  const p = parseRetryPolicy(value, where);
  if (typeof p === 'string') throw new CommandError(p);
  return p;
}

/** An error text no longer than MAX_ERROR_BYTES (the client cuts longer ones; an entry must already be cut). */
export function errorTextField(value: unknown): string {
  if (typeof value !== 'string' || utf8Length(value) > MAX_ERROR_BYTES + 3 || boundedError(value) !== value) throw new CommandError(`error must be a string of at most ${MAX_ERROR_BYTES} UTF-8 bytes`);
  return value;
}

/** Done items: [key, lease] or [key, lease, result] triples, 1 to MAX_CLAIM_ITEMS. */
export function doneItemsField(value: unknown): DoneItem[] {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_CLAIM_ITEMS) throw new CommandError(`items must be an array of 1 to ${MAX_CLAIM_ITEMS} [key, lease, result?] triples`);
  return value.map((t: unknown) => {
    if (!Array.isArray(t) || (t.length !== 2 && t.length !== 3)) throw new CommandError('each done item must be [key, lease] or [key, lease, result]');
    return t.length === 2 ? ([keyField(t[0]), leaseField(t[1])] as const) : ([keyField(t[0]), leaseField(t[1]), t[2]] as const);
  });
}

export function itemsField(value: unknown): AddedItem[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ADD_ITEMS) {
    throw new CommandError(`items must be an array of 1 to ${MAX_ADD_ITEMS} items`);
  }
  return value.map((raw: unknown, i) => {
    const v = record(raw, `items[${i}]`, ['key', 'data', 'priority', 'processAt', 'expiresAt', 'retry']);
    if (!('data' in v) || v.data === undefined) throw new CommandError(`items[${i}].data is missing`);
    return {
      key: keyField(v.key),
      data: v.data,
      ...(v.priority === undefined ? {} : { priority: priorityField(v.priority, `items[${i}].priority`) }),
      ...(v.processAt === undefined ? {} : { processAt: dateField(v.processAt, `items[${i}].processAt`) }),
      ...(v.expiresAt === undefined ? {} : { expiresAt: dateField(v.expiresAt, `items[${i}].expiresAt`) }),
      ...(v.retry === undefined ? {} : { retry: retryField(v.retry, `items[${i}].retry`) }),
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

/** A schedule as an entry carries it (its time zone's name is checked on the leader, whose zone data computes the ticks). */
export function scheduleField(value: unknown): ScheduleSpec {
  const spec = parseScheduleSpec(value);
  if (typeof spec === 'string') throw new CommandError(spec);
  const cron = 'cron' in spec.timing ? parseCron(spec.timing.cron) : null;
  if (typeof cron === 'string') throw new CommandError(cron);
  return spec;
}

export function scheduleIdField(value: unknown): string {
  const problem = scheduleIdProblem(value);
  if (problem !== null) throw new CommandError(problem);
  return value as string;
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
