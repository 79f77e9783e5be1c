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

/**
 * Which first check applies: Tokenserver's, or the one Vera applied before command version 9
 * (stored keys-changed-at above the reported generation), kept for entries applied before the
 * cluster runs version 9 so every member applies them alike.
 */
export type CheckRules = 'tokenserver' | 'before-v9';

/**
 * Checks a request against the user's current record, in Tokenserver's order; null when acceptable.
 *
 * Restated from syncstorage-rs `TokenserverRequest::validate` (syncserver/src/tokenserver/extractors.rs).
 * Upstream compares two values only when both are known: a 0 (absent) on either side makes the
 * comparison false, so that check passes. The stored generation is always known (0 included);
 * a stored keys-changed-at of 0 is "never reported" (upstream's NULL). A new user is checked against
 * the record just made from its own request, so every check passes for it.
 */
export function validate(req: LoginRequest, user: UserRecord, oldStates: readonly string[], rules: CheckRules = 'tokenserver'): Rejection | null {
  const generation = req.generation === 0 ? null : req.generation;
  const keysChangedAt = req.keysChangedAt === 0 ? null : req.keysChangedAt;
  const storedKeysChangedAt = user.keysChangedAt === 0 ? null : user.keysChangedAt;
  const stateChanged = req.clientState !== user.clientState;
  // 1. Keys that changed must come with a generation at least as new: keys-changed-at <= generation
  //    is all that can be enforced, as a server without keys-changed-at may already have stored the
  //    new generation. Judged only on a keys-changed-at newer than the stored one.
  const keysAhead =
    rules === 'tokenserver'
      ? keysChangedAt !== null && storedKeysChangedAt !== null && keysChangedAt > storedKeysChangedAt && generation !== null && generation < keysChangedAt
      : generation !== null && storedKeysChangedAt !== null && storedKeysChangedAt > generation; // before command version 9
  if (keysAhead) return { reason: 'invalid-keysChangedAt', message: 'keys_changed_at greater than generation' };
  // 2-5. The client state: never back to empty, never an old one, and a new one only with a newer
  //      generation and a newer keys-changed-at (each where reported).
  if (req.clientState === '' && user.clientState !== '') {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value empty string' };
  }
  if (oldStates.includes(req.clientState)) {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value stale value' };
  }
  if (stateChanged && generation !== null && generation <= user.generation) {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value new value with no generation change' };
  }
  if (stateChanged && keysChangedAt !== null && storedKeysChangedAt !== null && keysChangedAt <= storedKeysChangedAt) {
    return { reason: 'invalid-client-state', message: 'Unacceptable client-state value new value with no keys_changed_at change' };
  }
  // 6-8. Neither timestamp goes back, and keys-changed-at, once stored, must be reported.
  if (generation !== null && user.generation > generation) {
    return { reason: 'invalid-generation', message: 'New generation less than previously-seen generation' };
  }
  if (keysChangedAt !== null && storedKeysChangedAt !== null && storedKeysChangedAt > keysChangedAt) {
    return { reason: 'invalid-keysChangedAt', message: 'keys_changed_at less than previously seen' };
  }
  if (keysChangedAt === null && storedKeysChangedAt !== null) {
    return { reason: 'invalid-keysChangedAt', message: 'keys_changed_at absent but previously seen' };
  }
  return null;
}

/**
 * What an accepted request stores (syncstorage-rs `update_user` in syncserver/src/tokenserver/handlers.rs):
 * a reported keys-changed-at replaces the stored one (validation has made sure it is not older); a
 * reported generation replaces the stored one likewise; without a generation, a keys-changed-at newer
 * than both stored values becomes the generation, else the generation stays. A new client state means
 * a new record (`newRecord`); otherwise the current one is updated in place. Both only ever move forward.
 */
export function updateOf(req: LoginRequest, user: UserRecord): { generation: number; keysChangedAt: number; newRecord: boolean } {
  const keysChangedAt = Math.max(req.keysChangedAt, user.keysChangedAt);
  const generation = req.generation !== 0 ? Math.max(req.generation, user.generation) : req.keysChangedAt > user.keysChangedAt ? Math.max(req.keysChangedAt, user.generation) : user.generation;
  return { generation, keysChangedAt, newRecord: req.clientState !== user.clientState };
}
