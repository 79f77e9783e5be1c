// The one place a request is judged: every client op of every family, every
// notification and resync, every HTTP endpoint. Each op declares what it
// touches (`needs`), and the connection or HTTP layer asks `Guard.check`
// before anything runs, so a family filed later is covered by construction:
// its ops cannot be registered without saying what they need (src/server/front/plugin-part.ts).
// Rules and their matching are in src/families/auth/rules.ts.
import type { IncomingMessage } from 'node:http';
import { auth } from '../../families/auth/index.js';
import { VerifiedPasswords } from '../../families/auth/password-hash.js';
import { allows, allowsAnyBelow, type Permission } from '../../families/auth/rules.js';
import type { AuthState } from '../../families/auth/state.js';
import { checkToken } from '../../families/auth/tokens.js';
import { VeraError, type FamilyRequest, type FamilyResult, type Op, type RequestOf } from '../../protocol/index.js';
import type { FrontEnd } from '../front/context.js';
import type { FamilyOp } from '../front/plugin-part.js';
import { accessesOf, guarded } from './path-guard.js';
import { certificateUser as certificateUserOf } from './tls.js';
import type { VeraNode } from '../node/vera-node.js';
import { AuditQueue, type Taken } from './audit-queue.js';
import { hostOf, LoginBackoff } from './login-backoff.js';
import { DEFAULT_PRINCIPAL_LIMITS, PrincipalMeter, type PrincipalLimits } from './principal-limits.js';
import { sessions } from '../../families/sessions/index.js';
import { watches } from '../../families/watches/index.js';

/** One permission on one resource (a list path, or a family's resource such as 'journal:orders'). */
export interface Need {
  readonly perm: Permission;
  readonly resource: string;
}

/**
 * Who a connection or HTTP request acts for: a user, or `null` when it was
 * established while authentication was off (everything is allowed then, and
 * nothing once it is turned on).
 */
export type Principal = string | null;

/** What each core op needs. Ops that touch only the caller's own session need nothing. */
export const CORE_NEEDS: { readonly [O in Op]: (request: RequestOf<O>) => readonly Need[] } = {
  hello: () => [],
  ping: () => [],
  bye: () => [],
  unwatch: () => [],
  push: (r) => [{ perm: 'write', resource: r.path }],
  delete: (r) => [{ perm: 'write', resource: r.path }],
  get: (r) => [{ perm: 'read', resource: r.path }],
  ls: (r) => [{ perm: 'read', resource: r.path }],
  watch: (r) => [{ perm: 'watch', resource: r.path }],
};

/** A denial, an authentication failure or an administrator's act: what the audit log records. */
export interface AccessIncident {
  readonly kind: 'auth-failed' | 'denied' | 'admin';
  readonly principal: Principal;
  readonly remote: string;
  readonly what: string;
}

/** How the member's log tells an incident: failures and denials are warnings, an admin's act that succeeded is news. */
export interface IncidentLogLine {
  readonly level: 'warn' | 'info';
  readonly event: 'authentication-failed' | 'permission-denied' | 'admin-act';
  readonly message: string;
}

export function incidentLogLine(kind: AccessIncident['kind']): IncidentLogLine {
  switch (kind) {
    case 'auth-failed':
      return { level: 'warn', event: 'authentication-failed', message: 'authentication failed' };
    case 'denied':
      return { level: 'warn', event: 'permission-denied', message: 'a request was denied' };
    case 'admin':
      return { level: 'info', event: 'admin-act', message: 'an administrator\'s act succeeded' };
  }
}

/** Slow password hashes one member computes at once (libuv's thread pool has 4 threads, which LevelDB needs too). */
export const MAX_PASSWORD_CHECKS = 2;


export class Guard {
  private readonly passwords = new VerifiedPasswords();
  private readonly backoff = new LoginBackoff();
  /** Addresses with a password hash under way on this member (at most MAX_PASSWORD_CHECKS). */
  private readonly hashingHosts = new Set<string>();
  private readonly incidentListeners: Array<(incident: AccessIncident) => void> = [];
  /** What the audit log has not been given yet (the audit family's leader duty takes it): audit-queue.ts. */
  private readonly unwritten = new AuditQueue();

  /** Connections and requests per user on this member (principal-limits.ts). */
  readonly meter: PrincipalMeter;

  constructor(
    private readonly node: VeraNode,
    limits: PrincipalLimits = DEFAULT_PRINCIPAL_LIMITS,
  ) {
    this.meter = new PrincipalMeter(limits);
  }

  /** QUOTA_EXCEEDED when `principal`'s sessions together hold as many watches as one user may. */
  checkWatchBudget(principal: Principal): void {
    if (principal === null || !this.enabled) return;
    const sm = this.node.stateMachine;
    let held = 0;
    for (const session of sm.stateOf(sessions).sessionIdsOf(principal)) held += sm.stateOf(watches).count(session);
    const limit = this.meter.limits.watches;
    if (held >= limit) throw new VeraError('QUOTA_EXCEEDED', `user ${principal} already holds ${held} watches across its sessions, the most one user may (--watches-per-user ${limit})`);
  }

  get state(): AuthState {
    return this.node.stateMachine.stateOf(auth);
  }

  get enabled(): boolean {
    return this.state.enabled;
  }

  onIncident(listener: (incident: AccessIncident) => void): void {
    this.incidentListeners.push(listener);
  }

  private report(incident: AccessIncident): void {
    for (const l of this.incidentListeners) l(incident);
    this.unwritten.add({ ...incident, what: incident.what.slice(0, 512), at: Date.now() });
  }

  /** A failed proof of the cluster secret, or any other authentication failure found outside this class. */
  recordAuthFailure(remote: string, what: string): void {
    this.report({ kind: 'auth-failed', principal: null, remote, what });
  }

  /** An administrator's act that succeeded (an op that needed admin): recorded in the audit log. */
  recordAdminAct(principal: Principal, remote: string, what: string): void {
    this.report({ kind: 'admin', principal, remote, what });
  }

  /** Up to `max` facts for the audit log, denials and admin acts first, and what was counted instead since the last take. */
  takeAuditFacts(max: number): Taken {
    return this.unwritten.take(max, Date.now());
  }

  /** Puts facts back at the front (their write failed). */
  returnAuditFacts(taken: Taken): void {
    this.unwritten.giveBack(taken);
  }

  /**
   * Who the credentials name: a token, a user and password, or a client certificate's
   * user (TLS verified it). UNAUTHORIZED when authentication is on and none proves a user.
   */
  async authenticate(creds: { token?: string; user?: string; password?: string; certUser?: string | null }, remote: string, now: number): Promise<Principal> {
    const state = this.state;
    if (!state.enabled) return null;
    const fail = (message: string, who: Principal = null): never => {
      this.report({ kind: 'auth-failed', principal: who, remote, what: message });
      throw new VeraError('UNAUTHORIZED', message);
    };
    if (creds.token !== undefined) {
      const verdict = checkToken(state, creds.token, now);
      return 'user' in verdict ? verdict.user : fail(verdict.refused);
    }
    if (creds.user !== undefined && creds.password !== undefined) {
      const record = state.users.get(creds.user);
      const known = record !== undefined && record.hash !== null && this.passwords.cheap(creds.user, record.credentialRevision, creds.password);
      const release = known ? () => {} : this.startPasswordAttempt(creds.user, remote);
      try {
        // The same answer, after the same work, whether the user exists or not: names are not to be probed.
        if (record === undefined || record.hash === null) {
          await this.passwords.checkUnknown(creds.user, creds.password);
          return fail('wrong user name or password', creds.user);
        }
        const ok = await this.passwords.check(creds.user, record.credentialRevision, creds.password, record.hash);
        if (!ok) return fail('wrong user name or password', creds.user);
        this.backoff.succeeded(creds.user, remote);
        return creds.user;
      } finally {
        release();
      }
    }
    if (creds.certUser !== undefined && creds.certUser !== null) {
      return state.users.has(creds.certUser) ? creds.certUser : fail(`the client certificate names ${creds.certUser}, who is not a user here`, creds.certUser);
    }
    return fail('authentication is on: say hello with a token (vera login) or a user and password');
  }

  /**
   * Admits a password check that needs a hash, or refuses it with RATE_LIMITED: while its user
   * at its address, or its address, must wait after failures (login-backoff.ts); while a hash
   * for the same address is under way (one address never holds more than one of the member's
   * MAX_PASSWORD_CHECKS, so a flood from it leaves room for everyone else); and while
   * MAX_PASSWORD_CHECKS hashes are under way. Returns what to call when the check is done.
   */
  private startPasswordAttempt(user: string, remote: string): () => void {
    const now = Date.now();
    const waitMs = this.backoff.wait(user, remote, now);
    // Counted even when refused: a guesser that knocks during its wait, or keeps finding the hashes busy, is
    // still guessing, and its wait grows (only its own user at its own address, and its address, wait).
    this.backoff.attempt(user, remote, now);
    if (waitMs > 0) {
      this.report({ kind: 'auth-failed', principal: user, remote, what: 'password attempt refused: too many failures from this address' });
      throw new VeraError('RATE_LIMITED', `too many failed password attempts from this address; retry in ${this.backoff.wait(user, remote, now)} ms, or log in once and use the token`, { retryAfterMs: this.backoff.wait(user, remote, now) });
    }
    const host = hostOf(remote);
    if (this.hashingHosts.has(host)) {
      throw new VeraError('RATE_LIMITED', 'a password check from this address is under way; retry when it is answered, or log in once and use the token', { retryAfterMs: 100 });
    }
    if (this.passwords.busy >= MAX_PASSWORD_CHECKS) {
      // Each check is a slow hash on purpose: a flood of guesses must not take the thread pool from storage.
      throw new VeraError('RATE_LIMITED', `${MAX_PASSWORD_CHECKS} password checks are under way on this member; retry, or log in once and use the token`, { retryAfterMs: 100 });
    }
    this.hashingHosts.add(host);
    return () => this.hashingHosts.delete(host);
  }

  /** Throws UNAUTHORIZED or FORBIDDEN unless `principal` may do all of `needs`. */
  check(principal: Principal, needs: readonly Need[], remote: string, what: string): void {
    const state = this.state;
    if (!state.enabled || needs.length === 0) return;
    if (principal === null || !state.users.has(principal)) {
      const message = principal === null ? 'authentication was turned on after this connection was made; reconnect with credentials' : `user ${principal} no longer exists`;
      this.report({ kind: 'auth-failed', principal, remote, what: `${what}: ${message}` });
      throw new VeraError('UNAUTHORIZED', message);
    }
    const rules = state.rulesOf(principal);
    for (const need of needs) {
      if (allows(rules, need.perm, need.resource)) continue;
      this.report({ kind: 'denied', principal, remote, what: `${what}: ${need.perm} on ${need.resource}` });
      throw new VeraError('FORBIDDEN', `user ${principal} may not ${need.perm} ${need.resource}`);
    }
  }

  /** Whether `principal` may be told of changes to `path` (each notification and resync is filtered so). */
  mayWatch(principal: Principal, path: string): boolean {
    const state = this.state;
    if (!state.enabled) return true;
    if (principal === null || !state.users.has(principal)) return false;
    return allows(state.rulesOf(principal), 'watch', path);
  }

  /** Whether `principal` may read `path` (each path a range.paths page lists is judged so). */
  mayRead(principal: Principal, path: string): boolean {
    const state = this.state;
    if (!state.enabled) return true;
    if (principal === null || !state.users.has(principal)) return false;
    return allows(state.rulesOf(principal), 'read', path);
  }

  /** Whether `principal` may see that something exists at or below `path` (the entries an ls shows). */
  maySeeBelow(principal: Principal, path: string): boolean {
    const state = this.state;
    if (!state.enabled) return true;
    if (principal === null || !state.users.has(principal)) return false;
    return allowsAnyBelow(state.rulesOf(principal), 'read', path);
  }

  /** Whether every request of `principal` is allowed (no filtering needed). */
  unrestricted(principal: Principal): boolean {
    const state = this.state;
    return !state.enabled || (principal !== null && state.isRoot(principal));
  }

  /** Authenticates an HTTP request and judges what it needs, as for a WebSocket request; resolves to its principal. */
  async admitHttp(req: IncomingMessage, needs: readonly Need[], what: string): Promise<Principal> {
    const principal = await this.principalOfHttp(req, needs);
    this.check(principal, needs, req.socket.remoteAddress ?? 'unknown', what);
    return principal;
  }

  /** Who an HTTP request acts for; one that needs nothing (a login) is not asked to prove anything. */
  principalOfHttp(req: IncomingMessage, needs: readonly Need[]): Promise<Principal> {
    return needs.length === 0 ? Promise.resolve(null) : this.authenticateHttp(req, certificateUserOf(req), Date.now());
  }

  /** The principal of an HTTP request: a bearer token, basic credentials, or a client certificate. */
  async authenticateHttp(req: IncomingMessage, certUser: string | null, now: number): Promise<Principal> {
    if (!this.enabled) return null;
    const header = req.headers.authorization ?? '';
    const remote = req.socket.remoteAddress ?? 'unknown';
    if (header.startsWith('Bearer vt1.')) return this.authenticate({ token: header.slice('Bearer '.length) }, remote, now);
    if (header.startsWith('Basic ')) {
      const decoded = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0) return this.authenticate({ user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }, remote, now);
    }
    return this.authenticate({ certUser }, remote, now);
  }
}


/**
 * The check for operator endpoints (membership, leader transfer, defrag, backups). A caller
 * that presents a user's credentials (a token, basic credentials, a client certificate)
 * while authentication is on needs admin on 'cluster'; any other caller must prove the
 * cluster secret as `proveSecret` demands. With authentication on, being on loopback is
 * no longer enough by itself.
 */
export async function authorizeOperatorRequest(guard: Guard, req: IncomingMessage, what: string, proveSecret: (req: IncomingMessage, what: string) => void, hasSecret: boolean): Promise<void> {
  const header = req.headers.authorization ?? '';
  const userCredential = header.startsWith('Bearer vt1.') || header.startsWith('Basic ') || (header === '' && certificateUserOf(req) !== null);
  const remote = req.socket.remoteAddress ?? 'unknown';
  const act = `${req.method ?? 'GET'} ${req.url ?? ''}`;
  if (guard.enabled && userCredential) {
    const principal = await guard.admitHttp(req, [{ perm: 'admin', resource: 'cluster' }], what);
    guard.recordAdminAct(principal, remote, act);
    return;
  }
  if (guard.enabled && !hasSecret) {
    throw new VeraError('UNAUTHORIZED', `${what} need a user with admin on 'cluster' (Authorization: Bearer <token from vera login>) while authentication is on`);
  }
  try {
    proveSecret(req, what);
  } catch (err) {
    guard.recordAuthFailure(remote, `${what}: ${err instanceof Error ? err.message : String(err)}`);
    throw err;
  }
  // Reads of the member list are not acts; everything else an operator does here is.
  if (req.method !== 'GET' || !(req.url ?? '').startsWith('/v1/members')) guard.recordAdminAct(null, remote, `${act} (cluster secret)`);
}

/** Whether any of `needs` is an administrator's: such an op is recorded in the audit log when it succeeds. */
export function isAdminAct(needs: readonly Need[]): boolean {
  return needs.some((n) => n.perm === 'admin');
}

/** A request as the audit log tells it: its op and fields, passwords left out, cut to a few hundred characters. */
export function describeRequest(request: Readonly<Record<string, unknown>>): string {
  const { id: _id, op, password: _password, ...fields } = request;
  return `${String(op)} ${JSON.stringify(fields)}`.slice(0, 500);
}

/** Who asks for a family op: its principal and address, for the check and the audit log. */
export interface Caller {
  readonly principal: Principal;
  readonly remote: string;
  readonly session: string;
  readonly frameBytes: number;
  /** How a denial names the request in the log and the audit log (the op; HTTP adds method and target). */
  readonly what: string;
}

/**
 * A family op as `caller`, over the WebSocket or HTTP alike: judged at the one check
 * point, answered, and, when it needed admin, recorded in the audit log.
 */
export async function runFamilyOp(fe: FrontEnd, op: FamilyOp, request: FamilyRequest, caller: Caller): Promise<FamilyResult> {
  const needs = op.needs(request);
  fe.guard.check(caller.principal, needs, caller.remote, caller.what);
  // Its paths pass every family's path guard first (a hibernated unit is thawed for a use): path-guard.ts.
  const result = await guarded(fe, accessesOf(request, needs, op.touches), () => op.handle({ session: caller.session, request, frameBytes: caller.frameBytes, principal: caller.principal, remote: caller.remote }));
  if (isAdminAct(needs)) fe.guard.recordAdminAct(caller.principal, caller.remote, describeRequest(request));
  return result;
}
