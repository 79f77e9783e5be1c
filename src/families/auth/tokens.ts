// Tokens a login issues: who, until when, and under which credential revision,
// signed with the cluster's token key (HMAC-SHA256), so any member can check
// one without asking another. A password change or the user's removal voids
// every token issued before it; turning authentication off and on again
// changes the key and voids all of them. A logout revokes one token: its
// SHA-256 is replicated until the token would have expired anyway.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { AuthState } from './state.js';

export interface TokenClaims {
  readonly user: string;
  /** Milliseconds since the epoch after which the token is refused. */
  readonly expiresAt: number;
  readonly revision: number;
}

const PREFIX = 'vt1.';

function sign(key: string, body: string): string {
  return createHmac('sha256', Buffer.from(key, 'hex')).update(body, 'utf8').digest('base64url');
}

export function issueToken(key: string, claims: TokenClaims): string {
  const body = Buffer.from(JSON.stringify([claims.user, claims.expiresAt, claims.revision]), 'utf8').toString('base64url');
  return `${PREFIX}${body}.${sign(key, body)}`;
}

/** What a revocation (logout) records of a token: its SHA-256, never the token itself. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The user a token names and when it expires, or why it is refused. */
export function checkToken(state: AuthState, token: string, now: number): { user: string; expiresAt: number } | { refused: string } {
  const key = state.switch.tokenKey;
  if (key === null) return { refused: 'authentication is off; no token is needed' };
  if (!token.startsWith(PREFIX) || token.length > 2048) return { refused: 'the token is not one this cluster issued' };
  const [body, mac] = token.slice(PREFIX.length).split('.', 2);
  if (body === undefined || mac === undefined) return { refused: 'the token is not one this cluster issued' };
  const expected = Buffer.from(sign(key, body));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { refused: 'the token is not one this cluster issued (or authentication was turned off since)' };
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return { refused: 'the token is not one this cluster issued' };
  }
  if (!Array.isArray(claims) || typeof claims[0] !== 'string' || typeof claims[1] !== 'number' || typeof claims[2] !== 'number') return { refused: 'the token is not one this cluster issued' };
  const [user, expiresAt, revision] = claims as [string, number, number];
  if (expiresAt <= now) return { refused: `the token expired at ${new Date(expiresAt).toISOString()}; log in again` };
  const record = state.users.get(user);
  if (record === undefined || record.credentialRevision !== revision) return { refused: `the token's credentials for ${user} were changed or removed since it was issued; log in again` };
  if (state.revoked.has(tokenDigest(token))) return { refused: `the token was revoked (logged out); log in again` };
  return { user, expiresAt };
}

/**
 * The claims a token carries, unverified: for a token `checkToken` has just accepted,
 * what the connection it opened must be judged by later (src/server/guard/credential.ts).
 */
export function claimsOf(token: string): TokenClaims | null {
  if (!token.startsWith(PREFIX) || token.length > 2048) return null;
  const body = token.slice(PREFIX.length).split('.', 1)[0] ?? '';
  try {
    const claims: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    if (!Array.isArray(claims) || typeof claims[0] !== 'string' || typeof claims[1] !== 'number' || typeof claims[2] !== 'number') return null;
    return { user: claims[0], expiresAt: claims[1], revision: claims[2] };
  } catch {
    return null;
  }
}
