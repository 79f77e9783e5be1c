// What each user stores (docs/security.md "Per-user storage quotas"): the families that
// store items on a user's behalf (lists, journal, kv) charge and credit the user through
// the kernel's ledger (States.users), and the family that keeps the counts (quota) judges
// the charges. The charging families name only this, never the quota family, which is
// newer than all of them.

/** The command version from which a command that stores items carries the leader's default limits per user. */
export const USER_QUOTA_SINCE = 9;

/** What one user may store: items and their stored bytes. */
export interface StorageLimits {
  readonly items: number;
  readonly bytes: number;
}

/**
 * What a leader adds to a command that stores items: its default limits per user
 * (`--items-per-user`, `--bytes-per-user`), once every member applies USER_QUOTA_SINCE;
 * apply charges the user behind the session and judges these (or the user's or its
 * roles' own settings).
 */
export function userQuotaFor(activeVersion: number, limits: StorageLimits): { userQuota?: StorageLimits } {
  if (activeVersion < USER_QUOTA_SINCE) return {};
  return { userQuota: { items: limits.items, bytes: limits.bytes } };
}
