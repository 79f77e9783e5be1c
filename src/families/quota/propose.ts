// The user quota a command carries (user-quota.ts), from the server's front end.
import type { FrontEnd } from '../../server/front/context.js';
import { cluster } from '../cluster/index.js';
import type { StorageLimits } from './index.js';
import { userQuotaFor } from './user-quota.js';

export function userQuotaField(fe: FrontEnd): { userQuota?: StorageLimits } {
  return userQuotaFor(fe.node.stateMachine.stateOf(cluster).active, fe.guard.meter.limits);
}
