// How the auth family's records are stored: users, roles and whether
// authentication is on, one LevelDB record each (layout in docs/storage.md).
import { bucketPrefix } from '../../keys/index.js';
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import { isPermission, prefixProblem, type Permission, type Rule } from './wire.js';

export { isPermission, MAX_NAME_LENGTH, nameProblem } from './wire.js';

export const AuthBucket = {
  /** user name -> UserRecord */
  user: 0x001a,
  /** role name -> its rules */
  role: 0x001b,
  /** 'state' -> AuthSwitch */
  meta: 0x001c,
} as const;

export interface UserRecord {
  /** The password's slow hash (passwords.ts), or null for a user that only authenticates by certificate. */
  readonly hash: string | null;
  readonly roles: readonly string[];
  /** The index of the entry that last set the password or removed it: tokens issued before it are void. */
  readonly credentialRevision: number;
}

export interface AuthSwitch {
  readonly enabled: boolean;
  /** The key tokens are signed with (hex), chosen by the leader that enabled authentication. */
  readonly tokenKey: string | null;
}

export function userKey(name: string): Buffer {
  return Buffer.concat([bucketPrefix(AuthBucket.user), Buffer.from(name, 'utf8')]);
}

export function roleKey(name: string): Buffer {
  return Buffer.concat([bucketPrefix(AuthBucket.role), Buffer.from(name, 'utf8')]);
}

export const SWITCH_KEY = Buffer.concat([bucketPrefix(AuthBucket.meta), Buffer.from('state', 'utf8')]);

/** Revoked tokens live beside the switch, one record each: 'revoked:' + the token's SHA-256 (hex) -> its expiry. */
const REVOKED_PREFIX = Buffer.concat([bucketPrefix(AuthBucket.meta), Buffer.from('revoked:', 'utf8')]);

export function revokedKey(digest: string): Buffer {
  return Buffer.concat([REVOKED_PREFIX, Buffer.from(digest, 'utf8')]);
}

/** The digest a revocation key names, or null for another meta record. */
export function digestOfRevokedKey(key: Buffer): string | null {
  return key.subarray(0, REVOKED_PREFIX.length).equals(REVOKED_PREFIX) ? key.subarray(REVOKED_PREFIX.length).toString('utf8') : null;
}

export function encodeExpiry(expiresAt: number): Buffer {
  return pack(expiresAt);
}

export function decodeExpiry(bytes: Uint8Array): number {
  const v = unpack(bytes);
  if (typeof v !== 'number') throw new CorruptValueError('a token revocation is not an expiry time');
  return v;
}

export function nameOfKey(key: Buffer): string {
  return key.subarray(2).toString('utf8');
}

export function encodeUser(u: UserRecord): Buffer {
  return pack([u.hash, u.roles, u.credentialRevision]);
}

export function decodeUser(bytes: Uint8Array): UserRecord {
  const v = unpack(bytes);
  if (!Array.isArray(v) || v.length !== 3) throw new CorruptValueError('a user record is not [hash, roles, revision]');
  const [hash, roles, credentialRevision] = v as unknown[];
  if ((hash !== null && typeof hash !== 'string') || !Array.isArray(roles) || !roles.every((r) => typeof r === 'string') || typeof credentialRevision !== 'number') {
    throw new CorruptValueError('a user record has fields of the wrong types');
  }
  return { hash, roles: roles as string[], credentialRevision };
}

export function encodeRules(rules: readonly Rule[]): Buffer {
  return pack(rules.map((r) => [r.prefix, r.perms, r.deny]));
}

export function decodeRules(bytes: Uint8Array): Rule[] {
  const v = unpack(bytes);
  if (!Array.isArray(v)) throw new CorruptValueError('a role record is not a list of rules');
  return v.map((raw) => {
    if (!Array.isArray(raw) || raw.length !== 3) throw new CorruptValueError('a rule is not [prefix, perms, deny]');
    const [prefix, perms, deny] = raw as unknown[];
    if (prefixProblem(prefix) !== null || !Array.isArray(perms) || !perms.every(isPermission) || typeof deny !== 'boolean') {
      throw new CorruptValueError('a rule has fields of the wrong types');
    }
    return { prefix: prefix as string, perms: perms as Permission[], deny };
  });
}

export function encodeSwitch(s: AuthSwitch): Buffer {
  return pack([s.enabled, s.tokenKey]);
}

export function decodeSwitch(bytes: Uint8Array): AuthSwitch {
  const v = unpack(bytes);
  if (!Array.isArray(v) || typeof v[0] !== 'boolean' || (v[1] !== null && typeof v[1] !== 'string')) throw new CorruptValueError('the auth switch is not [enabled, tokenKey]');
  return { enabled: v[0], tokenKey: v[1] as string | null };
}

