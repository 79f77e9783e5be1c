// The auth family: users, roles and whether authentication is on, replicated so
// that every member judges every request by the same rules (docs/security.md).
// Password hashes are computed by the member that proposes (a slow hash has no
// place in apply); apply only stores them. Tokens are signed with a key chosen
// when authentication is enabled, so any member can check one.
import type { ApplyError } from '../../statemachine/types.js';
import { CommandError, failure, type BatchOp, type Family, type Plan, type PlanContext } from '../../statemachine/family.js';
import { boolField } from '../fields.js';
import { isHash } from './password-hash.js';
import { encodeExpiry, encodeRules, encodeSwitch, encodeUser, isPermission, nameProblem, revokedKey, roleKey, SWITCH_KEY, userKey, AuthBucket, type UserRecord } from './records.js';
import { prefixProblem, ROOT_ROLE, ROOT_USER, type Permission, type Rule } from './rules.js';
import { AuthState } from './state.js';
import { encodeQuota, QUOTA_BUCKET, quotaKey, type QuotaSetting, type QuotaTarget } from './quotas.js';
import { MAX_QUOTA } from '../fields.js';
import { USER_QUOTA_SINCE } from '../../kit/index.js';

/** The command version that brought users, roles and sessions' principals. */
export const AUTH_SINCE = 7;
/** The command version that brought per-token revocation (a logout). */
export const TOKEN_REVOCATION_SINCE = 9;
/** Revoked tokens not yet expired that a cluster keeps; revocations past their token's expiry are dropped. */
export const MAX_REVOKED_TOKENS = 100_000;
export const MAX_USERS = 10_000;
export const MAX_ROLES = 1_000;
export const MAX_RULES_PER_ROLE = 256;
export const MAX_ROLES_PER_USER = 64;

export type AuthCommand =
  | { readonly op: 'addUser'; readonly name: string; readonly hash: string | null }
  | { readonly op: 'setPassword'; readonly name: string; readonly hash: string | null }
  | { readonly op: 'removeUser'; readonly name: string }
  | { readonly op: 'grantRole'; readonly user: string; readonly role: string }
  | { readonly op: 'revokeRole'; readonly user: string; readonly role: string }
  | { readonly op: 'addRole'; readonly name: string }
  | { readonly op: 'removeRole'; readonly name: string }
  | { readonly op: 'grantPermission'; readonly role: string; readonly prefix: string; readonly perms: readonly Permission[]; readonly deny: boolean }
  | { readonly op: 'revokePermission'; readonly role: string; readonly prefix: string }
  | { readonly op: 'enable'; readonly tokenKey: string }
  | { readonly op: 'disable' }
  | { readonly op: 'revokeToken'; readonly digest: string; readonly expiresAt: number }
  /** null for a field: not set for this user or role (both null: the setting is removed). */
  | { readonly op: 'setQuota'; readonly target: QuotaTarget; readonly name: string; readonly items: number | null; readonly bytes: number | null };

/** What an applied auth entry answers. */
export interface AuthValue {
  readonly op: AuthCommand['op'];
}

function name(value: unknown, what: string): string {
  const problem = nameProblem(value, what);
  if (problem !== null) throw new CommandError(problem);
  return value as string;
}

function hash(value: unknown): string | null {
  if (value === null) return null;
  if (!isHash(value)) throw new CommandError('hash must be a password hash this version writes, or null');
  return value;
}

function rule(c: Readonly<Record<string, unknown>>): Rule {
  const problem = prefixProblem(c.prefix);
  if (problem !== null) throw new CommandError(problem);
  const perms = c.perms;
  if (!Array.isArray(perms) || perms.length === 0 || perms.length > 4 || !perms.every(isPermission) || new Set(perms).size !== perms.length) {
    throw new CommandError('perms must be a non-empty list of distinct read, write, watch, admin');
  }
  return { prefix: c.prefix as string, perms: perms as Permission[], deny: boolField(c.deny, 'deny') };
}

function done(op: AuthCommand['op'], ops: BatchOp[], after: () => void, state: AuthState): Plan {
  return {
    result: { ok: true, op: 'family', family: 'auth', value: { op } satisfies AuthValue },
    ops,
    events: [],
    after: [
      after,
      () => state.changed(),
    ],
  };
}

function putUser(state: AuthState, name: string, record: UserRecord, op: AuthCommand['op']): Plan {
  return done(op, [{ type: 'put', key: userKey(name), value: encodeUser(record) }], () => state.users.set(name, record), state);
}

function plan(c: AuthCommand, { states, index, now }: PlanContext): Plan | ApplyError {
  const state = states.of(auth);
  switch (c.op) {
    case 'addUser': {
      if (state.users.has(c.name)) return failure('CONFLICT', `user ${c.name} already exists`);
      if (state.users.size >= MAX_USERS) return failure('QUOTA_EXCEEDED', `there are already ${MAX_USERS} users, the most a cluster holds`);
      return putUser(state, c.name, { hash: c.hash, roles: [], credentialRevision: index }, c.op);
    }
    case 'setPassword': {
      const user = state.users.get(c.name);
      if (user === undefined) return failure('NOT_FOUND', `no user ${c.name}`);
      return putUser(state, c.name, { ...user, hash: c.hash, credentialRevision: index }, c.op);
    }
    case 'removeUser': {
      if (!state.users.has(c.name)) return failure('NOT_FOUND', `no user ${c.name}`);
      if (c.name === ROOT_USER && state.enabled) return failure('CONFLICT', `user ${ROOT_USER} cannot be removed while authentication is on`);
      return done(c.op, [{ type: 'del', key: userKey(c.name) }, { type: 'del', key: quotaKey('user', c.name) }], () => {
        state.users.delete(c.name);
        state.quotas.users.delete(c.name);
      }, state);
    }
    case 'grantRole': {
      const user = state.users.get(c.user);
      if (user === undefined) return failure('NOT_FOUND', `no user ${c.user}`);
      if (c.role !== ROOT_ROLE && !state.roles.has(c.role)) return failure('NOT_FOUND', `no role ${c.role}`);
      if (user.roles.includes(c.role)) return done(c.op, [], () => undefined, state);
      if (user.roles.length >= MAX_ROLES_PER_USER) return failure('QUOTA_EXCEEDED', `user ${c.user} already has ${MAX_ROLES_PER_USER} roles`);
      return putUser(state, c.user, { ...user, roles: [...user.roles, c.role] }, c.op);
    }
    case 'revokeRole': {
      const user = state.users.get(c.user);
      if (user === undefined) return failure('NOT_FOUND', `no user ${c.user}`);
      if (!user.roles.includes(c.role)) return failure('NOT_FOUND', `user ${c.user} does not have role ${c.role}`);
      if (c.user === ROOT_USER && c.role === ROOT_ROLE && state.enabled) return failure('CONFLICT', `user ${ROOT_USER} keeps role ${ROOT_ROLE} while authentication is on`);
      return putUser(state, c.user, { ...user, roles: user.roles.filter((r) => r !== c.role) }, c.op);
    }
    case 'addRole': {
      if (c.name === ROOT_ROLE || state.roles.has(c.name)) return failure('CONFLICT', `role ${c.name} already exists`);
      if (state.roles.size >= MAX_ROLES) return failure('QUOTA_EXCEEDED', `there are already ${MAX_ROLES} roles, the most a cluster holds`);
      return done(c.op, [{ type: 'put', key: roleKey(c.name), value: encodeRules([]) }], () => state.roles.set(c.name, []), state);
    }
    case 'removeRole': {
      if (c.name === ROOT_ROLE) return failure('CONFLICT', `role ${ROOT_ROLE} is built in and cannot be removed`);
      if (!state.roles.has(c.name)) return failure('NOT_FOUND', `no role ${c.name}`);
      // Users lose the role in the same entry (at most MAX_USERS records).
      const ops: BatchOp[] = [{ type: 'del', key: roleKey(c.name) }, { type: 'del', key: quotaKey('role', c.name) }];
      const changed: Array<[string, UserRecord]> = [];
      for (const [userName, user] of state.users) {
        if (!user.roles.includes(c.name)) continue;
        const next = { ...user, roles: user.roles.filter((r) => r !== c.name) };
        changed.push([userName, next]);
        ops.push({ type: 'put', key: userKey(userName), value: encodeUser(next) });
      }
      return done(
        c.op,
        ops,
        () => {
          state.roles.delete(c.name);
          state.quotas.roles.delete(c.name);
          for (const [userName, next] of changed) state.users.set(userName, next);
        },
        state,
      );
    }
    case 'grantPermission': {
      const rule: Rule = { prefix: c.prefix, perms: c.perms, deny: c.deny };
      if (c.role === ROOT_ROLE) return failure('CONFLICT', `role ${ROOT_ROLE} already has every permission and cannot be changed`);
      const rules = state.roles.get(c.role);
      if (rules === undefined) return failure('NOT_FOUND', `no role ${c.role}`);
      // One rule per (prefix, allow or deny): granting again adds to its permissions.
      const same = rules.find((r) => r.prefix === rule.prefix && r.deny === rule.deny);
      if (same === undefined && rules.length >= MAX_RULES_PER_ROLE) return failure('QUOTA_EXCEEDED', `role ${c.role} already has ${MAX_RULES_PER_ROLE} rules`);
      const merged: Rule = same === undefined ? rule : { ...same, perms: [...new Set([...same.perms, ...rule.perms])] };
      const next = [...rules.filter((r) => r !== same), merged];
      return done(c.op, [{ type: 'put', key: roleKey(c.role), value: encodeRules(next) }], () => state.roles.set(c.role, next), state);
    }
    case 'revokePermission': {
      const rules = state.roles.get(c.role);
      if (rules === undefined) return failure('NOT_FOUND', `no role ${c.role}`);
      const next = rules.filter((r) => r.prefix !== c.prefix);
      if (next.length === rules.length) return failure('NOT_FOUND', `role ${c.role} has no rule on ${c.prefix}`);
      return done(c.op, [{ type: 'put', key: roleKey(c.role), value: encodeRules(next) }], () => state.roles.set(c.role, next), state);
    }
    case 'enable': {
      if (state.enabled) return done(c.op, [], () => undefined, state);
      if (!state.isRoot(ROOT_USER)) return failure('CONFLICT', `authentication needs a user ${ROOT_USER} with role ${ROOT_ROLE} first (vera user add root; vera user grant root root)`);
      const next = { enabled: true, tokenKey: c.tokenKey };
      return done(c.op, [{ type: 'put', key: SWITCH_KEY, value: encodeSwitch(next) }], () => (state.switch = next), state);
    }
    case 'revokeToken': {
      // Revocations of tokens expired by the entry's time go first (an expired token is refused anyway).
      const ops: BatchOp[] = [];
      const gone: string[] = [];
      for (const [digest, expiresAt] of state.revoked) {
        if (expiresAt > now) continue;
        gone.push(digest);
        ops.push({ type: 'del', key: revokedKey(digest) });
      }
      const fresh = !state.revoked.has(c.digest) && c.expiresAt > now;
      if (fresh && state.revoked.size - gone.length >= MAX_REVOKED_TOKENS) {
        return failure('QUOTA_EXCEEDED', `${MAX_REVOKED_TOKENS} revoked tokens are kept until they expire, the most a cluster holds`);
      }
      if (fresh) ops.push({ type: 'put', key: revokedKey(c.digest), value: encodeExpiry(c.expiresAt) });
      const after = (): void => {
        for (const digest of gone) state.revoked.delete(digest);
        if (fresh) state.revoked.set(c.digest, c.expiresAt);
      };
      return done(c.op, ops, after, state);
    }
    case 'disable': {
      const next = { enabled: false, tokenKey: null };
      return done(c.op, [{ type: 'put', key: SWITCH_KEY, value: encodeSwitch(next) }], () => (state.switch = next), state);
    }
    case 'setQuota':
      return setQuota(c, state);
  }
}

function setQuota(c: Extract<AuthCommand, { op: 'setQuota' }>, state: AuthState): Plan | ApplyError {
  const known = c.target === 'user' ? state.users.has(c.name) : c.name === ROOT_ROLE || state.roles.has(c.name);
  if (!known) return failure('NOT_FOUND', `no ${c.target} ${c.name}`);
  const map = c.target === 'user' ? state.quotas.users : state.quotas.roles;
  const key = quotaKey(c.target, c.name);
  if (c.items === null && c.bytes === null) return done(c.op, [{ type: 'del', key }], () => map.delete(c.name), state);
  const setting: QuotaSetting = { items: c.items, bytes: c.bytes };
  return done(c.op, [{ type: 'put', key, value: encodeQuota(setting) }], () => map.set(c.name, setting), state);
}

function limitField(value: unknown, what: string): number | null {
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_QUOTA) throw new CommandError(`${what} must be null or an integer in [0, ${MAX_QUOTA}]`);
  return value;
}

export const auth: Family<AuthCommand, AuthState> = {
  name: 'auth',
  since: AUTH_SINCE,
  buckets: [
    { id: AuthBucket.user, name: 'auth users' },
    { id: AuthBucket.role, name: 'auth roles' },
    { id: AuthBucket.meta, name: 'auth switch' },
    { id: QUOTA_BUCKET, name: 'auth storage quotas by user and role' },
  ],
  ops: {
    addUser: { fields: ['name', 'hash'], since: AUTH_SINCE, decode: (c) => ({ op: 'addUser', name: name(c.name, 'name'), hash: hash(c.hash) }) },
    setPassword: { fields: ['name', 'hash'], since: AUTH_SINCE, decode: (c) => ({ op: 'setPassword', name: name(c.name, 'name'), hash: hash(c.hash) }) },
    removeUser: { fields: ['name'], since: AUTH_SINCE, decode: (c) => ({ op: 'removeUser', name: name(c.name, 'name') }) },
    grantRole: { fields: ['user', 'role'], since: AUTH_SINCE, decode: (c) => ({ op: 'grantRole', user: name(c.user, 'user'), role: name(c.role, 'role') }) },
    revokeRole: { fields: ['user', 'role'], since: AUTH_SINCE, decode: (c) => ({ op: 'revokeRole', user: name(c.user, 'user'), role: name(c.role, 'role') }) },
    addRole: { fields: ['name'], since: AUTH_SINCE, decode: (c) => ({ op: 'addRole', name: name(c.name, 'name') }) },
    removeRole: { fields: ['name'], since: AUTH_SINCE, decode: (c) => ({ op: 'removeRole', name: name(c.name, 'name') }) },
    grantPermission: { fields: ['role', 'prefix', 'perms', 'deny'], since: AUTH_SINCE, decode: (c) => ({ op: 'grantPermission', role: name(c.role, 'role'), ...rule(c) }) },
    revokePermission: {
      fields: ['role', 'prefix'],
      since: AUTH_SINCE,
      decode: (c) => {
        const problem = prefixProblem(c.prefix);
        if (problem !== null) throw new CommandError(problem);
        return { op: 'revokePermission', role: name(c.role, 'role'), prefix: c.prefix as string };
      },
    },
    enable: {
      fields: ['tokenKey'],
      since: AUTH_SINCE,
      decode: (c) => {
        if (typeof c.tokenKey !== 'string' || !/^[0-9a-f]{64}$/.test(c.tokenKey)) throw new CommandError('tokenKey must be 64 lowercase hex digits');
        return { op: 'enable', tokenKey: c.tokenKey };
      },
    },
    disable: { fields: [], since: AUTH_SINCE, decode: () => ({ op: 'disable' }) },
    revokeToken: {
      fields: ['digest', 'expiresAt'],
      since: TOKEN_REVOCATION_SINCE,
      decode: (c) => {
        if (typeof c.digest !== 'string' || !/^[0-9a-f]{64}$/.test(c.digest)) throw new CommandError('digest must be 64 lowercase hex digits (a token\'s SHA-256)');
        if (typeof c.expiresAt !== 'number' || !Number.isSafeInteger(c.expiresAt) || c.expiresAt < 0) throw new CommandError('expiresAt must be a time in milliseconds');
        return { op: 'revokeToken', digest: c.digest, expiresAt: c.expiresAt };
      },
    },
    setQuota: {
      fields: ['target', 'name', 'items', 'bytes'],
      since: USER_QUOTA_SINCE,
      decode: (c) => {
        if (c.target !== 'user' && c.target !== 'role') throw new CommandError("target must be 'user' or 'role'");
        return { op: 'setQuota', target: c.target, name: name(c.name, 'name'), items: limitField(c.items, 'items'), bytes: limitField(c.bytes, 'bytes') };
      },
    },
  },
  load: (db, snapshot) => AuthState.load(db, snapshot),
  plan,
  goesAlone: () => false,
  plugin: async () => (await import('./server.js')).plugin,
};
