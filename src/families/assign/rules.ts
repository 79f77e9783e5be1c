// Tokenserver's rules for a user's records, as pure functions: which record is
// current, which client states are old, whether a request is acceptable, and
// what it changes. Restated from syncstorage-rs (tokenserver-db's
// get_or_create_user, the request validation in syncserver's tokenserver
// extractors, and its handler's update_user); the reasons' wording follows it.
import type { UserRecord } from './records.js';
import { MAX_GENERATION } from './wire.js';

/** What a get-or-create request reports; 0 means absent (Tokenserver treats a missing header and 0 alike). */
export interface LoginRequest {
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
}

export type RejectionReason = 'invalid-generation' | 'invalid-keysChangedAt' | 'invalid-client-state';

export interface Rejection {
  readonly reason: RejectionReason;
  readonly message: string;
}

/** Newest first by (generation, created-at, uid): the first is the user's current record. */
export function newestFirst(records: readonly UserRecord[]): UserRecord[] {
  return [...records].sort((a, b) => b.generation - a.generation || b.createdAt - a.createdAt || b.uid - a.uid);
}

/** The client states of the user's other records that differ from the current one's, newest first, each once. */
export function oldClientStates(sorted: readonly UserRecord[]): string[] {
  const current = sorted[0]!.clientState;
  const out: string[] = [];
  for (const r of sorted.slice(1)) if (r.clientState !== current && !out.includes(r.clientState)) out.push(r.clientState);
  return out;
}

export function isRetired(r: UserRecord): boolean {
  return r.generation >= MAX_GENERATION;
}

/** Checks a request against the user's current record, in Tokenserver's order; null when acceptable. */
export function validate(req: LoginRequest, user: UserRecord, oldStates: readonly string[]): Rejection | null {
  const generation = req.generation === 0 ? null : req.generation;
  const keysChangedAt = req.keysChangedAt === 0 ? null : req.keysChangedAt;
  const userKeysChangedAt = user.keysChangedAt === 0 ? null : user.keysChangedAt;
  const stateChanged = req.clientState !== user.clientState;
  // A server without keys-changed-at support may have stored the new generation already; the most
  // that can be enforced is keys-changed-at <= generation.
  if (generation !== null && userKeysChangedAt !== null && userKeysChangedAt > generation) {
    return { reason: 'invalid-keysChangedAt', message: 'keys_changed_at greater than generation' };
  }
  if (req.clientState === '' && user.clientState !== '') {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value empty string' };
  }
  if (oldStates.includes(req.clientState)) {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value stale value' };
  }
  if (generation !== null && generation <= user.generation && stateChanged) {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value new value with no generation change' };
  }
  if (keysChangedAt !== null && userKeysChangedAt !== null && keysChangedAt <= userKeysChangedAt && stateChanged) {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value new value with no keys_changed_at change' };
  }
  if (generation !== null && user.generation > generation) {
    return { reason: 'invalid-generation', message: 'New generation less than previously-seen generation' };
  }
  if (keysChangedAt !== null && userKeysChangedAt !== null && userKeysChangedAt > keysChangedAt) {
    return { reason: 'invalid-keysChangedAt', message: 'keys_changed_at less than previously seen' };
  }
  if (keysChangedAt === null && userKeysChangedAt !== null) {
    return { reason: 'invalid-keysChangedAt', message: 'keys_changed_at absent but previously seen' };
  }
  return null;
}

/**
 * What an accepted request stores: generation and keys-changed-at only move forward;
 * without a generation, a newer keys-changed-at stands in for it. A new client state
 * means a new record (`newRecord`); otherwise the current one is updated in place.
 * (Tokenserver sets the generation to the new keys-changed-at outright; taking the
 * larger keeps the generation from ever going back.)
 */
export function updateOf(req: LoginRequest, user: UserRecord): { generation: number; keysChangedAt: number; newRecord: boolean } {
  const keysChangedAt = Math.max(req.keysChangedAt, user.keysChangedAt);
  const generation = req.generation !== 0 ? Math.max(req.generation, user.generation) : req.keysChangedAt > user.keysChangedAt ? Math.max(req.keysChangedAt, user.generation) : user.generation;
  return { generation, keysChangedAt, newRecord: req.clientState !== user.clientState };
}
