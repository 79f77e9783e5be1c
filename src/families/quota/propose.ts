// The user quota a command carries (user-quota.ts), from what the server's front end
// holds: named by shape, so this family imports nothing of the server.
import type { StateReader } from '../../statemachine/family.js';
import { cluster } from '../cluster/index.js';
import type { StorageLimits } from './index.js';
import { userQuotaFor } from './user-quota.js';

/** The parts of the server's front end the quota is read from: the store, and the guard's limits per user. */
export interface QuotaSource {
  readonly node: { readonly stateMachine: StateReader };
  readonly guard: { readonly meter: { readonly limits: StorageLimits } };
}

export function userQuotaField(fe: QuotaSource): { userQuota?: StorageLimits } {
  return userQuotaFor(fe.node.stateMachine.stateOf(cluster).active, fe.guard.meter.limits);
}
