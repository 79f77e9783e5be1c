// The auth family's server side, on the kit: the ops that manage users and roles,
// login (a token from a user and password, on any member), and the review of live
// connections when an auth change applies: a watch its user may no longer hold is
// dropped and its owner told, at once (docs/security.md).
import { randomBytes } from 'node:crypto';
import { VeraError } from '../../protocol/index.js';
import { opRequest, type FamilyHost, type Plugin, type PluginNeed, type PluginServer } from '../../kit/index.js';
import type { AuthCommand } from './index.js';
import type { AuthState } from './state.js';
import { hashPassword } from './password-hash.js';
import { ROOT_ROLE } from './rules.js';
import { checkToken, issueToken, tokenDigest } from './tokens.js';
import { AUTH_SCHEMAS, DEFAULT_TOKEN_TTL_MS, type Done, type QuotaSetting } from './wire.js';
import type { QuotaTarget } from './quotas.js';
import { liveSessions } from '../sessions/public.js';

type Ops = typeof AUTH_SCHEMAS;
type Host = FamilyHost<AuthState, unknown, AuthCommand>;

function createServer(host: Host): PluginServer<Ops> {
  const propose = async (command: AuthCommand): Promise<Done> => {
    await host.propose(command);
    return {};
  };

  /** Sets a user's or role's storage quota: a field the request leaves out keeps its current setting. */
  const setQuota = (target: QuotaTarget, r: { name: string; items?: number | null; bytes?: number | null }): Promise<Done> => {
    const quotas = host.state().quotas;
    const now: QuotaSetting = (target === 'user' ? quotas.users : quotas.roles).get(r.name) ?? { items: null, bytes: null };
    return propose({ op: 'setQuota', target, name: r.name, items: r.items === undefined ? now.items : r.items, bytes: r.bytes === undefined ? now.bytes : r.bytes });
  };

  return {
    handlers: {
      status: async (_r, { session }) => {
        const principal = liveSessions(host.reader).get(session)?.principal;
        return { enabled: host.state().enabled, ...(principal === undefined ? {} : { user: principal }) };
      },
      login: async (r, { remote }) => {
        if (!host.state().enabled) throw new VeraError('BAD_REQUEST', 'authentication is off: no token is needed (vera auth enable turns it on)');
        // The client's own address: what the audit log names and the backoff of password guesses counts by.
        const user = (await host.access.authenticate(r.user, r.password, remote))!;
        const state = host.state();
        const record = state.users.get(user)!;
        const expiresAt = Date.now() + (r.ttlMs ?? DEFAULT_TOKEN_TTL_MS);
        return { token: issueToken(state.switch.tokenKey!, { user, expiresAt, revision: record.credentialRevision }), expiresAt, user };
      },
      // Revokes the token given (the dashboard's logout): holding it is the proof. Every member refuses it from then on.
      logout: async ({ token }) => {
        const state = host.state();
        if (!state.enabled) throw new VeraError('BAD_REQUEST', 'authentication is off: there is no token to revoke');
        if (state.revoked.has(tokenDigest(token))) return {};
        const verdict = checkToken(state, token, Date.now());
        if ('refused' in verdict) throw new VeraError('UNAUTHORIZED', verdict.refused);
        return propose({ op: 'revokeToken', digest: tokenDigest(token), expiresAt: verdict.expiresAt });
      },
      enable: () => propose({ op: 'enable', tokenKey: randomBytes(32).toString('hex') }),
      disable: () => {
        const exposed = host.access.exposedWithoutAuth();
        if (exposed !== null) throw new VeraError('CONFLICT', `authentication stays on: ${exposed}`);
        return propose({ op: 'disable' });
      },
      userAdd: async ({ name, password }) => propose({ op: 'addUser', name, hash: password === undefined ? null : await hashPassword(password) }),
      userPasswd: async ({ name, password }) => propose({ op: 'setPassword', name, hash: await hashPassword(password) }),
      userRm: ({ name }) => propose({ op: 'removeUser', name }),
      userGrant: ({ name, role }) => propose({ op: 'grantRole', user: name, role }),
      userRevoke: ({ name, role }) => propose({ op: 'revokeRole', user: name, role }),
      users: async () => {
        const state = host.state();
        const users = [...state.users].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        const usage = host.reader.users;
        const quotas = state.quotas.users;
        return {
          users: users.map(([name, u]) => ({ name, roles: [...u.roles], password: u.hash !== null, stored: usage.of(name), ...(quotas.has(name) ? { quota: quotas.get(name)! } : {}) })),
          defaultQuota: { items: host.userLimits.items, bytes: host.userLimits.bytes },
        };
      },
      roleAdd: ({ name }) => propose({ op: 'addRole', name }),
      roleRm: ({ name }) => propose({ op: 'removeRole', name }),
      roleGrant: ({ name, prefix, perms, deny }) => propose({ op: 'grantPermission', role: name, prefix, perms, deny }),
      roleRevoke: ({ name, prefix }) => propose({ op: 'revokePermission', role: name, prefix }),
      roles: async () => {
        const state = host.state();
        const roles = [...state.roles].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
        const quotas = state.quotas.roles;
        const withQuota = (name: string): { quota?: QuotaSetting } => (quotas.has(name) ? { quota: quotas.get(name)! } : {});
        return {
          roles: [
            { name: ROOT_ROLE, rules: [{ prefix: '*', perms: ['read', 'write', 'watch', 'admin'], deny: false }], ...withQuota(ROOT_ROLE) },
            ...roles.map(([name, rules]) => ({ name, rules: [...rules], ...withQuota(name) })),
          ],
        };
      },
      userQuota: (r) => setQuota('user', r),
      roleQuota: (r) => setQuota('role', r),
    },
    http: [
      /** POST /v1/auth/login {user, password, ttlMs?}: a token, from any member; POST /v1/auth/logout {token}: that token revoked. */
      {
        prefix: '/v1/auth',
        get: (_rest, url) => {
          throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}; POST /v1/auth/login or /v1/auth/logout`);
        },
        post: (rest, url, body) => {
          if (rest === '/login') return opRequest(AUTH_SCHEMAS.login, body, host.limits);
          if (rest === '/logout') return opRequest(AUTH_SCHEMAS.logout, body, host.limits);
          throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}; POST /v1/auth/login or /v1/auth/logout`);
        },
      },
    ],
    /** After an auth change, every live connection on this member re-judges what it holds. */
    applied: (_index, value) => {
      if (value !== null) host.access.reviewConnections();
    },
  };
}

/** Managing users and roles is an administrator's act on the resource 'auth'; status, login and logout need nothing. */
const admin = (): readonly PluginNeed[] => [{ perm: 'admin', resource: 'auth' }];
const none = (): readonly PluginNeed[] => [];

export const plugin: Plugin<Ops, AuthState, unknown, AuthCommand> = {
  ops: AUTH_SCHEMAS,
  needs: {
    status: none,
    login: none,
    logout: none,
    enable: admin,
    disable: admin,
    userAdd: admin,
    userPasswd: admin,
    userRm: admin,
    userGrant: admin,
    userRevoke: admin,
    users: admin,
    roleAdd: admin,
    roleRm: admin,
    roleGrant: admin,
    roleRevoke: admin,
    roles: admin,
    userQuota: admin,
    roleQuota: admin,
  },
  touchesNoLists: 'users, roles and tokens live in their own buckets; a rule names a path but reads no list',
  createServer,
};
