// Leases on the leader, on the kit: granting one opens a session no connection is
// bound to (its id says it is a lease), a keep-alive restarts its clock on the
// leader without touching Raft, and a revoke or an expiry closes it through the
// sessions family, deleting what it owns in that same entry. Only the user who
// granted a lease may keep it alive, revoke it or use it.
import { createHash, randomBytes } from 'node:crypto';
import { VeraError } from '../../protocol/index.js';
import type { FamilyHost, Plugin, PluginNeed, PluginServer } from '../../kit/index.js';
import { LEASE_PREFIX, LEASE_SCHEMAS, type LeaseInfo } from './wire.js';
import { liveSessions } from '../sessions/public.js';
import { usableLease } from './usable.js';

type Ops = typeof LEASE_SCHEMAS;

function createServer(host: FamilyHost<null>): PluginServer<Ops> {
  const clocks = host.sessionClocks;
  return {
    handlers: {
      grant: async ({ ttlMs }, { session, frameBytes }) => {
        const live = liveSessions(host.reader);
        if (live.size >= host.limits.sessionsMax) {
          throw new VeraError('RATE_LIMITED', `session limit reached (${host.limits.sessionsMax}; a lease is a session)`, { retryAfterMs: 1000 });
        }
        host.admitWrite(frameBytes);
        const caller = live.get(session);
        const principal = caller?.principal;
        const id = `${LEASE_PREFIX}${randomBytes(16).toString('base64url')}`;
        // A resume token nobody is told: no hello can bind a connection to a lease.
        const resumeHash = createHash('sha256').update(randomBytes(32)).digest('hex');
        await host.proposeTo('sessions', {
          op: 'openSession',
          session: id,
          timeoutMs: ttlMs,
          remote: caller?.remote ?? 'lease',
          quota: { sessionsPerAddress: host.limits.sessionsPerAddress },
          resumeHash,
          ...(principal === undefined ? {} : { principal, principalSessions: host.userLimits.sessions }),
        });
        clocks.track(id, ttlMs);
        return { lease: id, ttlMs };
      },
      keepAlive: async ({ lease }, { session }) => {
        const { timeoutMs } = usableLease(host.reader, session, lease);
        // Tracked since this member began to lead, or since the grant; restarted at its full TTL.
        if (clocks.has(lease)) clocks.touch(lease);
        else clocks.track(lease, timeoutMs);
        return { ttlMs: timeoutMs };
      },
      revoke: async ({ lease }, { session }) => {
        usableLease(host.reader, session, lease);
        await host.proposeTo('sessions', { op: 'closeSession', session: lease, reason: 'bye' });
        return {};
      },
      show: async ({ lease }, { session }) => {
        const info = usableLease(host.reader, session, lease);
        const shown: LeaseInfo = {
          lease,
          ttlMs: info.timeoutMs,
          remainingMs: Math.max(0, Math.round(clocks.remainingMs(lease) ?? info.timeoutMs)),
          ...(info.principal === undefined ? {} : { user: info.principal }),
        };
        return shown;
      },
    },
    // A lease is a session no connection may hold: its clock is its keep-alives'.
    resumeRefusal: (session) => (session.startsWith(LEASE_PREFIX) ? `${session} is a lease, not a session a connection can resume` : null),
  };
}

const writeLease = (): readonly PluginNeed[] => [{ perm: 'write', resource: 'lease:' }];

export const plugin: Plugin<Ops, null> = {
  ops: LEASE_SCHEMAS,
  needs: {
    grant: writeLease,
    keepAlive: writeLease,
    revoke: writeLease,
    show: () => [{ perm: 'read', resource: 'lease:' }],
  },
  touchesNoLists: 'a lease is a session; what it owns is deleted by the sessions family, not read here',
  createServer,
};
