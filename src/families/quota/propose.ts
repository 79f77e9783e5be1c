// What a leader adds to a command that stores items: its default limits per user
// (`--items-per-user`, `--bytes-per-user`), once every member applies command
// version 9; apply charges the user behind the session and judges these (or the
// user's or its roles' own settings).
import type { FrontEnd } from '../../server/front/context.js';
import { cluster } from '../cluster/index.js';
import { USER_QUOTA_SINCE, type StorageLimits } from './index.js';

export function userQuotaField(fe: FrontEnd): { userQuota?: StorageLimits } {
  if (fe.node.stateMachine.stateOf(cluster).active < USER_QUOTA_SINCE) return {};
  const { items, bytes } = fe.guard.meter.limits;
  return { userQuota: { items, bytes } };
}
