// The lease family's client protocol (docs/protocol.md, "Extension: leases").
import { buildersOf, defineOp, invalid, uintField, type RequestBuilder } from '../../protocol/index.js';

/** Lease ids are session ids with this prefix: a lease op takes no connection's session, and a hello cannot resume a lease. */
export const LEASE_PREFIX = 'lease-';
export const MIN_LEASE_TTL_MS = 1000;
/** The longest a Node timer waits (about 24.8 days). */
export const MAX_LEASE_TTL_MS = 2 ** 31 - 1;
const LEASE_ID = /^lease-[A-Za-z0-9_-]{22}$/;

type Fields = Readonly<Record<string, unknown>>;

export function leaseProblem(value: unknown): string | null {
  return typeof value === 'string' && LEASE_ID.test(value) ? null : `lease must be a lease id as lease.grant gives (${LEASE_PREFIX} and 22 characters)`;
}

function leaseId(f: Fields): string {
  const problem = leaseProblem(f.lease);
  if (problem !== null) throw invalid(problem);
  return f.lease as string;
}

const withLease = <Res extends object>(name: string, read = false) => defineOp<{ lease: string }, Res>({ name, read, fields: ['lease'], parse: (f) => ({ lease: leaseId(f) }) });

/** The lease family's ops, as the client and the server both check them. */
export const LEASE_SCHEMAS = {
  grant: defineOp<{ ttlMs: number }, { lease: string; ttlMs: number }>({
    name: 'lease.grant',
    fields: ['ttlMs'],
    parse: (f) => {
      const ttlMs = uintField(f, 'ttlMs');
      if (ttlMs === undefined || ttlMs < MIN_LEASE_TTL_MS || ttlMs > MAX_LEASE_TTL_MS) throw invalid(`ttlMs must be ${MIN_LEASE_TTL_MS} to ${MAX_LEASE_TTL_MS} ms`);
      return { ttlMs };
    },
  }),
  keepAlive: withLease<{ ttlMs: number }>('lease.keepAlive'),
  revoke: withLease<Readonly<Record<string, never>>>('lease.revoke'),
  show: withLease<LeaseInfo>('lease.show', true),
};

/** The ops' request builders, by op name (the frame decoder's view of the same schemas). */
export const LEASE_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(LEASE_SCHEMAS));

export interface LeaseInfo {
  readonly lease: string;
  readonly ttlMs: number;
  /** Until it expires without a keep-alive, by the leader's clock. */
  readonly remainingMs: number;
  /** The user who granted it (absent when authentication is off). */
  readonly user?: string;
}
