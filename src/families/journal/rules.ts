// The journal's item rules as pure functions (seed 002): how an add merges into
// an existing key, and what an item becomes when its processing ends.
import * as crypto from 'node:crypto';
import type { JournalItem, NextVersion, RetryPolicy } from './records.js';

/** What an add brings for one key. */
export interface Incoming extends NextVersion {
  readonly key: string;
  /** The item's own retry policy, when the add gives one: it replaces the one it had. */
  readonly retry?: RetryPolicy;
}

/** 0 means never: never is later than any date. */
export function laterExpiry(a: number, b: number): number {
  return a === 0 || b === 0 ? 0 : Math.max(a, b);
}

export function isExpired(expiresAt: number, now: number): boolean {
  return expiresAt !== 0 && expiresAt <= now;
}

/** A new key: Waiting, inserted now. */
export function inserted(add: Incoming, now: number): JournalItem {
  return {
    key: add.key,
    data: add.data,
    priority: add.priority,
    processAt: add.processAt,
    insertedAt: now,
    expiresAt: add.expiresAt,
    status: 'waiting',
    startedAt: 0,
    timeouts: 0,
    failures: 0,
    lease: 0,
    next: null,
  };
}

/**
 * The seed's merge of a new version into a Waiting item: insertion date kept,
 * the later expiration, the smaller priority, the later process date, the
 * status kept, the timeout counter reset, the user data replaced.
 */
export function merged(item: JournalItem, add: NextVersion): JournalItem {
  return {
    ...item,
    data: add.data,
    priority: Math.min(item.priority, add.priority),
    processAt: Math.max(item.processAt, add.processAt),
    expiresAt: laterExpiry(item.expiresAt, add.expiresAt),
    timeouts: 0,
  };
}

/** An add for a key: inserted, merged into a Waiting item, or kept aside while it is Processing. */
export function added(existing: JournalItem | null, add: Incoming, now: number): JournalItem {
  const item = addedVersion(existing, add, now);
  return add.retry === undefined ? item : { ...item, retry: add.retry };
}

function addedVersion(existing: JournalItem | null, add: Incoming, now: number): JournalItem {
  if (existing === null) return inserted(add, now);
  if (existing.status === 'waiting') return merged(existing, add);
  const next = existing.next === null ? stripKey(add) : stripKey({ ...merged({ ...existing, ...existing.next }, add), key: add.key });
  return { ...existing, next };
}

function stripKey(v: NextVersion & { readonly key: string }): NextVersion {
  return { data: v.data, priority: v.priority, processAt: v.processAt, expiresAt: v.expiresAt };
}

/**
 * Processing ends without the work being done (release, timeout): the item waits
 * again, or, when a newer version was added meanwhile, that version merged in.
 */
export function backToWaiting(item: JournalItem): JournalItem {
  const waiting: JournalItem = { ...item, status: 'waiting', startedAt: 0, lease: 0, next: null };
  return item.next === null ? waiting : merged(waiting, item.next);
}

/** Processing ends with the work done: the item is gone, unless a newer version was added meanwhile. */
export function afterDone(item: JournalItem): JournalItem | null {
  return item.next === null ? null : backToWaiting(item);
}

/** An item expires: it is gone, unless a newer version that has not expired was added meanwhile. */
export function afterExpiry(item: JournalItem, now: number): JournalItem | null {
  if (item.next === null || isExpired(item.next.expiresAt, now)) return null;
  return { ...item, ...item.next, status: 'waiting', startedAt: 0, lease: 0, timeouts: 0, failures: 0, next: null };
}

/**
 * Processing ended without a done and counts as a failure (a timeout; from command version 9
 * also a release that does not say otherwise): the seed's timeout counter rises, and with
 * `countFailures` the failure count a merge does not reset. Flagged once either passes the
 * journal's maximum. Without `countFailures` this is the seed's rule exactly.
 */
export function afterFailure(item: JournalItem, maxTimeouts: number, countFailures: boolean, policy?: RetryPolicy): { readonly item: JournalItem; readonly flag: boolean } {
  const failed: JournalItem = { ...item, timeouts: item.timeouts + 1, failures: countFailures ? item.failures + 1 : item.failures };
  // A retry policy's attempts replace maxTimeouts: the failure that ends the last attempt flags it.
  if (policy !== undefined) return { item: failed, flag: failed.failures >= policy.attempts };
  return { item: failed, flag: failed.timeouts > maxTimeouts || (countFailures && failed.failures > maxTimeouts) };
}

/**
 * How long after its `failures`-th failure an item waits under `policy`: the delay (doubled
 * per failure after the first when exponential, up to maxDelayMs), less up to jitterPct of
 * it. The jitter comes from a hash of the key and the failure count, never a random number:
 * every member applying the entry computes the same date.
 */
export function retryDelay(policy: RetryPolicy, key: string, failures: number): number {
  const base = policy.backoff === 'fixed' ? policy.delayMs : Math.min(policy.maxDelayMs, policy.delayMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  if (policy.jitterPct === 0 || base === 0) return base;
  const u = crypto.createHash('sha256').update(`${failures}:${key}`, 'utf8').digest().readUInt32BE(0) / 2 ** 32;
  return base - Math.floor((base * policy.jitterPct * u) / 100);
}

/**
 * A process date is never before the item's insertion date (seed 002): an earlier one is
 * raised to it, so back-dating cannot jump the line within a priority.
 */
export function notBeforeInsertion(processAt: number, insertedAt: number): number {
  return Math.max(processAt, insertedAt);
}
