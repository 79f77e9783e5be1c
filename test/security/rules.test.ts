// The pure parts of security: how rules decide (longest prefix, deny at equal
// length, path boundaries), tokens (signature, expiry, credential revision),
// password hashes, and the audit chain's verification.
import { describe, expect, it } from 'vitest';
import { GENESIS, recordHash, verifyChain, type AuditFact, type AuditRecord } from '../../src/families/audit/chain.js';
import { hashPassword, isHash, passwordMatches, VerifiedPasswords } from '../../src/families/auth/password-hash.js';
import { allows, allowsAnyBelow, covers, prefixProblem, type Rule } from '../../src/families/auth/rules.js';
import { AuthState } from '../../src/families/auth/state.js';
import { checkToken, issueToken } from '../../src/families/auth/tokens.js';

const allow = (prefix: string, ...perms: Rule['perms']): Rule => ({ prefix, perms, deny: false });
const deny = (prefix: string, ...perms: Rule['perms']): Rule => ({ prefix, perms, deny: true });

describe('rules', () => {
  it('cover a prefix and everything below it, at path and name boundaries', () => {
    expect(covers('/app', '/app')).toBe(true);
    expect(covers('/app', '/app/x/y')).toBe(true);
    expect(covers('/app', '/apple')).toBe(false);
    expect(covers('/', '/anything')).toBe(true);
    expect(covers('journal:', 'journal:orders')).toBe(true);
    expect(covers('journal:orders', 'journal:orders2')).toBe(false);
    expect(covers('*', 'cluster')).toBe(true);
    expect(covers('/app', 'journal:app')).toBe(false);
  });

  it('decide by the longest matching prefix, a deny winning at equal length, nothing matching denied', () => {
    const rules = [allow('/app', 'read', 'watch'), deny('/app/secret', 'read'), allow('/app/secret/open', 'read'), allow('*', 'watch'), deny('/app', 'watch')];
    expect(allows(rules, 'read', '/app/x')).toBe(true);
    expect(allows(rules, 'read', '/app/secret/key')).toBe(false);
    expect(allows(rules, 'read', '/app/secret/open/x')).toBe(true);
    expect(allows(rules, 'write', '/app/x')).toBe(false);
    expect(allows(rules, 'read', '/other')).toBe(false);
    expect(allows(rules, 'watch', '/other')).toBe(true); // '*'
    expect(allows(rules, 'watch', '/app/x')).toBe(false); // allow and deny on /app: the deny wins
    expect(allows([], 'read', '/')).toBe(false);
  });

  it('see below a prefix when any allow lies under it', () => {
    expect(allowsAnyBelow([allow('/app/a', 'read')], 'read', '/app')).toBe(true);
    expect(allowsAnyBelow([allow('/app/a', 'read')], 'read', '/other')).toBe(false);
    expect(allowsAnyBelow([deny('/app/a', 'read')], 'read', '/app')).toBe(false);
  });

  it('take only well-formed prefixes', () => {
    for (const ok of ['*', '/', '/app', 'journal:', 'journal:orders', 'assign:sync-1.5', 'cluster', 'auth', 'audit']) expect(prefixProblem(ok), ok).toBeNull();
    for (const bad of ['', 'app', 'Journal:x', 'a\u0000b', 42, null, 'x'.repeat(2000)]) expect(prefixProblem(bad), String(bad)).not.toBeNull();
  });
});

describe('tokens', () => {
  const key = 'ab'.repeat(32);
  const state = (): AuthState => {
    const s = new AuthState();
    s.switch = { enabled: true, tokenKey: key };
    s.users.set('alice', { hash: null, roles: [], credentialRevision: 7 });
    return s;
  };

  it('name their user until they expire, under the credentials they were issued for', () => {
    const s = state();
    const token = issueToken(key, { user: 'alice', expiresAt: 10_000, revision: 7 });
    expect(checkToken(s, token, 9_999)).toEqual({ user: 'alice', expiresAt: 10_000 });
    expect(checkToken(s, token, 10_000)).toMatchObject({ refused: expect.stringMatching(/expired/) });
    s.users.set('alice', { hash: null, roles: [], credentialRevision: 8 });
    expect(checkToken(s, token, 0)).toMatchObject({ refused: expect.stringMatching(/changed or removed/) });
    s.users.delete('alice');
    expect(checkToken(s, token, 0)).toMatchObject({ refused: expect.stringMatching(/changed or removed/) });
  });

  it('are refused when altered, signed with another key, or malformed', () => {
    const s = state();
    const token = issueToken(key, { user: 'alice', expiresAt: 10_000, revision: 7 });
    const [head, body, mac] = token.split('.');
    const forgedBody = Buffer.from(JSON.stringify(['alice', 99_999_999, 7])).toString('base64url');
    expect(checkToken(s, `${head}.${forgedBody}.${mac}`, 0)).toHaveProperty('refused');
    expect(checkToken(s, issueToken('cd'.repeat(32), { user: 'alice', expiresAt: 10_000, revision: 7 }), 0)).toHaveProperty('refused');
    for (const bad of ['', 'vt1.', 'vt1.x', `vt1.${body}`, 'garbage', token.slice(0, -1)]) expect(checkToken(s, bad, 0), bad).toHaveProperty('refused');
    s.switch = { enabled: false, tokenKey: null };
    expect(checkToken(s, token, 0)).toHaveProperty('refused');
  });
});

describe('password hashes', () => {
  it('match only their password, and remember a correct check per credential revision', async () => {
    const hash = await hashPassword('s3cret');
    expect(isHash(hash)).toBe(true);
    expect(await hashPassword('s3cret')).not.toBe(hash); // salted
    expect(await passwordMatches('s3cret', hash)).toBe(true);
    expect(await passwordMatches('S3cret', hash)).toBe(false);
    const verified = new VerifiedPasswords(2);
    expect(await verified.check('alice', 1, 's3cret', hash)).toBe(true);
    expect(await verified.check('alice', 1, 'wrong', hash)).toBe(false);
    // Remembered: the same check no longer consults the hash (a hash that matches nothing proves it).
    expect(await verified.check('alice', 1, 's3cret', 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).toBe(true);
    expect(await verified.check('alice', 2, 's3cret', 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).toBe(false);
  });

  it('compute one hash for the same credentials checked at once', async () => {
    const hash = await hashPassword('pw');
    const verified = new VerifiedPasswords();
    const both = [verified.check('bob', 1, 'pw', hash), verified.check('bob', 1, 'pw', hash)];
    expect(verified.busy).toBe(1);
    expect(verified.cheap('bob', 1, 'pw')).toBe(true);
    expect(verified.cheap('bob', 1, 'other')).toBe(false);
    expect(await Promise.all(both)).toEqual([true, true]);
    expect(verified.busy).toBe(0);
  });
});

describe('the audit chain', () => {
  function chain(n: number): AuditRecord[] {
    const out: AuditRecord[] = [];
    let prev = GENESIS;
    for (let seq = 1; seq <= n; seq++) {
      const fact: AuditFact = { at: 1000 + seq, kind: 'denied', principal: 'alice', remote: '127.0.0.1:1', what: `push: write on /x${seq}` };
      const hash = recordHash(seq, fact, prev);
      out.push({ ...fact, seq, prev, hash });
      prev = hash;
    }
    return out;
  }

  it('verifies as written and names the first record changed, removed or reordered', () => {
    const good = chain(5);
    expect(verifyChain(good)).toBeNull();
    expect(verifyChain(good.slice(2), good[1]!.hash)).toBeNull();
    const edited = good.map((r) => (r.seq === 3 ? { ...r, what: 'nothing' } : r));
    expect(verifyChain(edited)).toEqual({ seq: 3, problem: expect.stringMatching(/was changed/) });
    const rehashed = edited.map((r) => (r.seq === 3 ? { ...r, hash: recordHash(3, r, r.prev) } : r));
    expect(verifyChain(rehashed)).toEqual({ seq: 4, problem: expect.stringMatching(/does not name the hash/) });
    expect(verifyChain([good[0]!, good[2]!])).toEqual({ seq: 3, problem: expect.stringMatching(/missing/) });
  });
});
