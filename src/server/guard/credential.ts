// What a connection's credential rests on, kept from its hello so that every
// request and every notification can judge it again against the replicated auth
// state as it is now: a password changed, a token expired, a user removed, or
// authentication turned off and on again since the hello all end the grant. A
// few map lookups and a clock read, so it runs on every request (as etcd checks
// its auth revision on each one) and never needs the slow hash again.
import type { AuthState } from '../../families/auth/state.js';
import { claimsOf, tokenDigest } from '../../families/auth/tokens.js';

export interface Credential {
  readonly user: string;
  /** The user's credential revision the proof was made under; null for a client certificate, which no password change touches. */
  readonly revision: number | null;
  /** When the proof was a token: its expiry (ms since the epoch). */
  readonly expiresAt: number | null;
  /** The token key in force: turning authentication off and on again chooses another. */
  readonly tokenKey: string | null;
  /** When the proof was a token: its SHA-256, which a logout's revocation names. */
  readonly tokenDigest: string | null;
}

export interface Proof {
  readonly token?: string;
  readonly user?: string;
  readonly password?: string;
  readonly certUser?: string | null;
}

/**
 * What `proof` rests on, read before it is checked (so a change applied while a
 * password is being hashed can only make the credential look older, never newer).
 * The user is filled in once the check has named one.
 */
export function credentialBasis(state: AuthState, proof: Proof): Omit<Credential, 'user'> {
  const tokenKey = state.switch.tokenKey;
  if (proof.token !== undefined) {
    const claims = claimsOf(proof.token);
    // A token the check accepts always reads; one that did not would be judged expired at once.
    return { revision: claims?.revision ?? -1, expiresAt: claims?.expiresAt ?? 0, tokenKey, tokenDigest: tokenDigest(proof.token) };
  }
  if (proof.user !== undefined && proof.password !== undefined) {
    return { revision: state.users.get(proof.user)?.credentialRevision ?? null, expiresAt: null, tokenKey, tokenDigest: null };
  }
  return { revision: null, expiresAt: null, tokenKey, tokenDigest: null };
}

/** Why a credential no longer holds: `message` for replies and logs, `closeReason` short enough for a close frame (123 bytes). */
export interface CredentialProblem {
  readonly message: string;
  readonly closeReason: string;
}

function problem(closeReason: string, message: string): CredentialProblem {
  return { closeReason, message };
}

/**
 * Why a connection authenticated as `credential` (null: made while authentication was
 * off) may no longer act, or null while it may. Nothing is judged while authentication
 * is off: everyone may do everything then.
 */
export function credentialProblem(state: AuthState, credential: Credential | null, now: number): CredentialProblem | null {
  if (!state.enabled) return null;
  if (credential === null) return problem('authentication was turned on; reconnect with credentials', 'authentication was turned on after this connection was made; reconnect with credentials');
  if (state.switch.tokenKey !== credential.tokenKey) {
    return problem('authentication was turned off and on again; reconnect with credentials', 'authentication was turned off and on again since this connection authenticated; reconnect with credentials');
  }
  const record = state.users.get(credential.user);
  if (record === undefined) return problem('the user was removed', `user ${credential.user} was removed`);
  if (credential.revision !== null && record.credentialRevision !== credential.revision) {
    return problem(
      "the user's credentials changed; reconnect with the current ones",
      `the credentials of user ${credential.user} changed since this connection authenticated (a new password, or the user removed and added again); reconnect with the current ones`,
    );
  }
  if (credential.tokenDigest !== null && state.revoked.has(credential.tokenDigest)) {
    return problem('the token was revoked (logged out); log in again', 'the token this connection authenticated with was revoked (logged out); log in again');
  }
  if (credential.expiresAt !== null && credential.expiresAt <= now) {
    const at = new Date(credential.expiresAt).toISOString();
    return problem(`the token expired at ${at}; log in again`, `the token this connection authenticated with expired at ${at}; log in again`);
  }
  return null;
}
