// Leases on the leader: granting one opens a session no connection is bound to
// (its id says it is a lease), a keep-alive restarts its clock on the leader
// without touching Raft, and a revoke or an expiry closes it through the
// sessions family, deleting what it owns in that same entry. Only the user who
// granted a lease may keep it alive, revoke it or use it.
import { createHash, randomBytes } from 'node:crypto';
import { VeraError, type FamilyResult } from '../../protocol/index.js';
import type { Need } from '../../server/guard/access.js';
import { expectOk, type FrontEnd } from '../../server/front/context.js';
import { familyOps, proposeTimed, type FamilyOpCall, type ServerPart } from '../../server/front/family-part.js';
import { LEASE_OPS, LEASE_PREFIX, type LeaseInfo } from './wire.js';
import { liveSessions } from '../sessions/queries.js';
import { usableLease as usableBy } from './usable.js';

/** The lease `id` as the calling session may use it (usable.ts). */
function usableLease(fe: FrontEnd, session: string, id: string): { readonly timeoutMs: number; readonly principal?: string } {
  return usableBy(fe.node.stateMachine, session, id);
}

const handlers: Record<string, (call: FamilyOpCall) => Promise<FamilyResult>> = {
  'lease.grant': async ({ fe, session, request: r, frameBytes }) => {
    const ttlMs = r.ttlMs as number;
    const sm = fe.node.stateMachine;
    if (liveSessions(sm).size >= fe.limits.sessionsMax) {
      throw new VeraError('RATE_LIMITED', `session limit reached (${fe.limits.sessionsMax}; a lease is a session)`, { retryAfterMs: 1000 });
    }
    fe.disk.admit(frameBytes);
    const caller = liveSessions(sm).get(session);
    const principal = caller?.principal;
    const id = `${LEASE_PREFIX}${randomBytes(16).toString('base64url')}`;
    // A resume token nobody is told: no hello can bind a connection to a lease.
    const resumeHash = createHash('sha256').update(randomBytes(32)).digest('hex');
    expectOk(
      await proposeTimed(fe, {
        op: 'openSession',
        session: id,
        timeoutMs: ttlMs,
        remote: caller?.remote ?? 'lease',
        quota: { sessionsPerAddress: fe.limits.sessionsPerAddress },
        resumeHash,
        ...(principal === undefined ? {} : { principal, principalSessions: fe.guard.meter.limits.sessions }),
      }),
    );
    fe.expiry.track(id, ttlMs);
    return { lease: id, ttlMs };
  },
  'lease.keepAlive': async ({ fe, session, request: r }) => {
    const id = r.lease as string;
    const { timeoutMs } = usableLease(fe, session, id);
    // Tracked since this member began to lead, or since the grant; restarted at its full TTL.
    if (fe.expiry.has(id)) fe.expiry.touch(id);
    else fe.expiry.track(id, timeoutMs);
    return { ttlMs: timeoutMs };
  },
  'lease.revoke': async ({ fe, session, request: r }) => {
    const id = r.lease as string;
    usableLease(fe, session, id);
    expectOk(await proposeTimed(fe, { op: 'closeSession', session: id, reason: 'bye' }));
    return {};
  },
  'lease.show': async ({ fe, session, request: r }) => {
    const id = r.lease as string;
    const info = usableLease(fe, session, id);
    const shown: LeaseInfo = {
      lease: id,
      ttlMs: info.timeoutMs,
      remainingMs: Math.max(0, Math.round(fe.expiry.remainingMs(id) ?? info.timeoutMs)),
      ...(info.principal === undefined ? {} : { user: info.principal }),
    };
    return { ...shown };
  },
};

const writeLease = (): readonly Need[] => [{ perm: 'write', resource: 'lease:' }];
const NEEDS: Record<string, () => readonly Need[]> = {
  'lease.grant': writeLease,
  'lease.keepAlive': writeLease,
  'lease.revoke': writeLease,
  'lease.show': () => [{ perm: 'read', resource: 'lease:' }],
};

export const server: ServerPart = { protocolOps: familyOps('lease', LEASE_OPS, handlers, NEEDS) };
