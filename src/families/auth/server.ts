// The auth family's server part: the ops that manage users and roles, login
// (a token from a user and password, on any member), and the review of live
// connections when an auth change applies: a watch its user may no longer
// hold is dropped and its owner told, at once (docs/security.md).
import { randomBytes } from 'node:crypto';
import { VeraError, type FamilyRequest, type FamilyResult } from '../../protocol/index.js';
import type { Need } from '../../server/guard/access.js';
import { expectOk, type FrontEnd } from '../../server/front/context.js';
import { exposureProblem } from '../../server/guard/exposure.js';
import { familyOps, proposeTimed, type FamilyHttpRoute, type FamilyOpCall, type ServerPart } from '../../server/front/family-part.js';
import type { ApplyOutcome } from '../../statemachine/types.js';
import { auth, type AuthCommand } from './index.js';
import { hashPassword } from './password-hash.js';
import { ROOT_ROLE } from './rules.js';
import { checkToken, issueToken, tokenDigest } from './tokens.js';
import { AUTH_OPS, DEFAULT_TOKEN_TTL_MS } from './wire.js';
import { quota } from '../quota/index.js';
import type { QuotaSetting, QuotaTarget } from './quotas.js';
import { liveSessions } from '../sessions/queries.js';

async function propose(fe: FrontEnd, command: AuthCommand): Promise<FamilyResult> {
  expectOk(await proposeTimed(fe, { family: 'auth', ...command } as never));
  return {};
}

/** Sets a user's or role's storage quota: a field the request leaves out keeps its current setting. */
function setQuota(fe: FrontEnd, target: QuotaTarget, r: FamilyRequest): Promise<FamilyResult> {
  const quotas = fe.guard.state.quotas;
  const now: QuotaSetting = (target === 'user' ? quotas.users : quotas.roles).get(r.name as string) ?? { items: null, bytes: null };
  const pick = (field: keyof QuotaSetting): number | null => (r[field] === undefined ? now[field] : (r[field] as number | null));
  return propose(fe, { op: 'setQuota', target, name: r.name as string, items: pick('items'), bytes: pick('bytes') });
}

const handlers: Record<string, (call: FamilyOpCall) => Promise<FamilyResult>> = {
  'auth.status': async ({ fe, session }) => {
    const principal = liveSessions(fe.node.stateMachine).get(session)?.principal;
    return { enabled: fe.guard.enabled, ...(principal === undefined ? {} : { user: principal }) };
  },
  'auth.login': async ({ fe, request: r, remote }) => {
    if (!fe.guard.enabled) throw new VeraError('BAD_REQUEST', 'authentication is off: no token is needed (vera auth enable turns it on)');
    // The client's own address: what the audit log names and the backoff of password guesses counts by.
    const user = await fe.guard.authenticate({ user: r.user as string, password: r.password as string }, remote, Date.now());
    const state = fe.guard.state;
    const record = state.users.get(user!)!;
    const expiresAt = Date.now() + ((r.ttlMs as number | undefined) ?? DEFAULT_TOKEN_TTL_MS);
    return { token: issueToken(state.switch.tokenKey!, { user: user!, expiresAt, revision: record.credentialRevision }), expiresAt, user };
  },
  // Revokes the token given (the dashboard's logout): holding it is the proof. Every member refuses it from then on.
  'auth.logout': async ({ fe, request: r }) => {
    if (!fe.guard.enabled) throw new VeraError('BAD_REQUEST', 'authentication is off: there is no token to revoke');
    const token = r.token as string;
    const state = fe.guard.state;
    if (state.revoked.has(tokenDigest(token))) return {};
    const verdict = checkToken(state, token, Date.now());
    if ('refused' in verdict) throw new VeraError('UNAUTHORIZED', verdict.refused);
    return propose(fe, { op: 'revokeToken', digest: tokenDigest(token), expiresAt: verdict.expiresAt });
  },
  'auth.enable': ({ fe }) => propose(fe, { op: 'enable', tokenKey: randomBytes(32).toString('hex') }),
  'auth.disable': ({ fe }) => {
    const exposed = exposureProblem({ client: fe.clientAddress, insecure: fe.insecure }, false);
    if (exposed !== null) throw new VeraError('CONFLICT', `authentication stays on: ${exposed}`);
    return propose(fe, { op: 'disable' });
  },
  'auth.userAdd': async ({ fe, request: r }) => propose(fe, { op: 'addUser', name: r.name as string, hash: r.password === undefined ? null : await hashPassword(r.password as string) }),
  'auth.userPasswd': async ({ fe, request: r }) => propose(fe, { op: 'setPassword', name: r.name as string, hash: await hashPassword(r.password as string) }),
  'auth.userRm': ({ fe, request: r }) => propose(fe, { op: 'removeUser', name: r.name as string }),
  'auth.userGrant': ({ fe, request: r }) => propose(fe, { op: 'grantRole', user: r.name as string, role: r.role as string }),
  'auth.userRevoke': ({ fe, request: r }) => propose(fe, { op: 'revokeRole', user: r.name as string, role: r.role as string }),
  'auth.users': async ({ fe }) => {
    const users = [...fe.guard.state.users].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const usage = fe.node.stateMachine.stateOf(quota);
    const quotas = fe.guard.state.quotas.users;
    return {
      users: users.map(([name, u]) => ({ name, roles: u.roles, password: u.hash !== null, stored: usage.of(name), ...(quotas.has(name) ? { quota: quotas.get(name) } : {}) })),
      defaultQuota: { items: fe.guard.meter.limits.items, bytes: fe.guard.meter.limits.bytes },
    };
  },
  'auth.roleAdd': ({ fe, request: r }) => propose(fe, { op: 'addRole', name: r.name as string }),
  'auth.roleRm': ({ fe, request: r }) => propose(fe, { op: 'removeRole', name: r.name as string }),
  'auth.roleGrant': ({ fe, request: r }) =>
    propose(fe, { op: 'grantPermission', role: r.name as string, prefix: r.prefix as string, perms: r.perms as Need['perm'][], deny: r.deny === true }),
  'auth.roleRevoke': ({ fe, request: r }) => propose(fe, { op: 'revokePermission', role: r.name as string, prefix: r.prefix as string }),
  'auth.roles': async ({ fe }) => {
    const roles = [...fe.guard.state.roles].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const quotas = fe.guard.state.quotas.roles;
    const withQuota = (name: string): object => (quotas.has(name) ? { quota: quotas.get(name) } : {});
    return {
      roles: [
        { name: ROOT_ROLE, rules: [{ prefix: '*', perms: ['read', 'write', 'watch', 'admin'], deny: false }], ...withQuota(ROOT_ROLE) },
        ...roles.map(([name, rules]) => ({ name, rules, ...withQuota(name) })),
      ],
    };
  },
  'auth.userQuota': ({ fe, request: r }) => setQuota(fe, 'user', r),
  'auth.roleQuota': ({ fe, request: r }) => setQuota(fe, 'role', r),
};

/** Managing users and roles is an administrator's act on the resource 'auth'; status and login need nothing. */
const admin = (): readonly Need[] => [{ perm: 'admin', resource: 'auth' }];
const NEEDS: Record<string, (r: FamilyRequest) => readonly Need[]> = {
  'auth.status': () => [],
  'auth.login': () => [],
  'auth.logout': () => [],
  ...Object.fromEntries(
    ['auth.enable', 'auth.disable', 'auth.userAdd', 'auth.userPasswd', 'auth.userRm', 'auth.userGrant', 'auth.userRevoke', 'auth.users', 'auth.roleAdd', 'auth.roleRm', 'auth.roleGrant', 'auth.roleRevoke', 'auth.roles', 'auth.userQuota', 'auth.roleQuota'].map((op) => [op, admin]),
  ),
};

const protocolOps = familyOps('auth', AUTH_OPS, handlers, NEEDS);

/** POST /v1/auth/login {user, password, ttlMs?}: a token, from any member; POST /v1/auth/logout {token}: that token revoked. */
const http: FamilyHttpRoute = {
  prefix: '/v1/auth',
  get: (_fe, _rest, url) => {
    throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}; POST /v1/auth/login or /v1/auth/logout`);
  },
  post: (fe, rest, url, body) => {
    if (rest === '/login') return AUTH_OPS.get('auth.login')!(body, 0, fe.limits);
    if (rest === '/logout') return AUTH_OPS.get('auth.logout')!(body, 0, fe.limits);
    throw new VeraError('NOT_FOUND', `no endpoint ${url.pathname}; POST /v1/auth/login or /v1/auth/logout`);
  },
};

/** After an auth change, every live connection on this member re-judges what it holds. */
function onApplied(outcome: ApplyOutcome, fe: FrontEnd): void {
  const r = outcome.result;
  if (!r.ok || r.op !== 'family' || r.family !== auth.name) return;
  for (const connection of fe.connections.values()) connection.reviewAccess?.();
}

export const server: ServerPart = { protocolOps, http: [http], onApplied };
