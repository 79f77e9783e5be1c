// What a leader adds to a command that stores items: its default limits per user
// (`--items-per-user`, `--bytes-per-user`), once every member applies command
// version 9; apply charges the user behind the session and judges these (or the
// user's or its roles' own settings). Given the active version and the limits, so
// a kit plugin (its host has both) and the server's own parts share it.
import { USER_QUOTA_SINCE, type StorageLimits } from './index.js';

export function userQuotaFor(activeVersion: number, limits: StorageLimits): { userQuota?: StorageLimits } {
  if (activeVersion < USER_QUOTA_SINCE) return {};
  return { userQuota: { items: limits.items, bytes: limits.bytes } };
}
