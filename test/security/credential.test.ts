// The judgement every request and notification of a connection passes
// (src/server/guard/credential.ts), as a unit: what a hello's proof rests on, and each
// way the grant ends since, against the auth state as it is now.
import { describe, expect, it } from 'vitest';
import { AuthState } from '../../src/families/auth/state.js';
import { issueToken, tokenDigest } from '../../src/families/auth/tokens.js';
import { credentialBasis, credentialProblem, type Credential } from '../../src/server/guard/credential.js';

const key = 'ab'.repeat(32);

function state(): AuthState {
  const s = new AuthState();
  s.switch = { enabled: true, tokenKey: key };
  s.users.set('alice', { hash: null, roles: [], credentialRevision: 7 });
  return s;
}

function proved(s: AuthState, proof: Parameters<typeof credentialBasis>[1]): Credential {
  return { ...credentialBasis(s, proof), user: 'alice' };
}

describe('a connection credential', () => {
  it('rests on what its proof named: a token its claims, a password the revision, a certificate the user only', () => {
    const s = state();
    const token = issueToken(key, { user: 'alice', expiresAt: 10_000, revision: 7 });
    expect(proved(s, { token })).toEqual({ user: 'alice', revision: 7, expiresAt: 10_000, tokenKey: key, tokenDigest: tokenDigest(token) });
    expect(proved(s, { user: 'alice', password: 'pw' })).toEqual({ user: 'alice', revision: 7, expiresAt: null, tokenKey: key, tokenDigest: null });
    expect(proved(s, { certUser: 'alice' })).toEqual({ user: 'alice', revision: null, expiresAt: null, tokenKey: key, tokenDigest: null });
    // A token that does not read is taken as expired, never as one that lasts.
    expect(proved(s, { token: 'vt1.garbage.x' })).toMatchObject({ expiresAt: 0 });
  });

  it('holds until its token expires, the credentials change, the user goes or authentication is turned off and on', () => {
    const byToken = proved(state(), { token: issueToken(key, { user: 'alice', expiresAt: 10_000, revision: 7 }) });
    const byPassword = proved(state(), { user: 'alice', password: 'pw' });
    const byCert = proved(state(), { certUser: 'alice' });
    const s = state();
    for (const c of [byToken, byPassword, byCert]) expect(credentialProblem(s, c, 9_999)).toBeNull();
    expect(credentialProblem(s, byToken, 10_000)?.message).toMatch(/token this connection authenticated with expired/);
    expect(credentialProblem(s, byPassword, 10_000)).toBeNull();

    s.users.set('alice', { hash: null, roles: [], credentialRevision: 8 });
    expect(credentialProblem(s, byToken, 0)?.message).toMatch(/credentials of user alice changed/);
    expect(credentialProblem(s, byPassword, 0)?.message).toMatch(/credentials of user alice changed/);
    expect(credentialProblem(s, byCert, 0)).toBeNull(); // no password change touches a certificate

    s.users.delete('alice');
    for (const c of [byToken, byPassword, byCert]) expect(credentialProblem(s, c, 0)?.message).toBe('user alice was removed');

    const reenabled = state();
    reenabled.switch = { enabled: true, tokenKey: 'cd'.repeat(32) };
    for (const c of [byToken, byPassword, byCert]) expect(credentialProblem(reenabled, c, 0)?.message).toMatch(/turned off and on again/);
    expect(credentialProblem(state(), null, 0)?.message).toMatch(/turned on after this connection was made/);
  });

  it('ends when its token is revoked (a logout), and only for that token', () => {
    const token = issueToken(key, { user: 'alice', expiresAt: 10_000, revision: 7 });
    const other = issueToken(key, { user: 'alice', expiresAt: 20_000, revision: 7 });
    const s = state();
    s.revoked.set(tokenDigest(token), 10_000);
    expect(credentialProblem(s, proved(s, { token }), 0)?.message).toMatch(/token this connection authenticated with was revoked/);
    expect(credentialProblem(s, proved(s, { token: other }), 0)).toBeNull();
    expect(credentialProblem(s, proved(s, { user: 'alice', password: 'pw' }), 0)).toBeNull();
  });

  it('is not judged while authentication is off, and says why in a close reason that fits a close frame', () => {
    const off = state();
    off.switch = { enabled: false, tokenKey: null };
    expect(credentialProblem(off, null, 0)).toBeNull();
    const name = 'a'.repeat(128);
    const s = state();
    s.users.set(name, { hash: null, roles: [], credentialRevision: 8 });
    const reenabled = state();
    reenabled.switch = { enabled: true, tokenKey: 'cd'.repeat(32) };
    const reasons = [
      credentialProblem(s, { user: name, revision: 7, expiresAt: null, tokenKey: key, tokenDigest: null }, 1),
      credentialProblem(s, { user: name, revision: 8, expiresAt: 0, tokenKey: key, tokenDigest: null }, 1),
      credentialProblem(s, { user: `${name}b`, revision: 8, expiresAt: null, tokenKey: key, tokenDigest: null }, 1),
      credentialProblem(reenabled, { user: name, revision: 8, expiresAt: null, tokenKey: key, tokenDigest: null }, 1),
      credentialProblem(s, null, 1),
    ].map((p) => p!.closeReason);
    expect(reasons).toHaveLength(5);
    for (const reason of reasons) expect(Buffer.byteLength(reason)).toBeLessThanOrEqual(123);
  });
});
