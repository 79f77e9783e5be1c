// Whether a session may use a lease, read from the replicated sessions alone, so
// the lease family's server part and the kv family's plugin judge it the same way.
import { VeraError } from '../../protocol/index.js';
import type { StateReader } from '../../statemachine/family.js';
import { liveSessions } from '../sessions/public.js';
import { LEASE_PREFIX } from './wire.js';

/**
 * The lease `id` as the calling session may use it: NOT_FOUND once it expired or was
 * revoked, FORBIDDEN when another user granted it.
 */
export function usableLease(reader: StateReader, session: string, id: string): { readonly timeoutMs: number; readonly principal?: string } {
  const live = liveSessions(reader);
  const info = live.get(id);
  if (info === undefined || !id.startsWith(LEASE_PREFIX)) throw new VeraError('NOT_FOUND', `lease ${id} has expired, was revoked or never existed`);
  if (info.principal !== live.get(session)?.principal) throw new VeraError('FORBIDDEN', `lease ${id} belongs to another user`);
  return info;
}
