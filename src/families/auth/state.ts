// The auth family's in-memory state: users, roles and the switch, loaded from
// their buckets, with each user's rules gathered once per change so that the
// check on every request is a scan of a few rules, not of every role.
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { AuthBucket, decodeExpiry, decodeRules, decodeSwitch, decodeUser, digestOfRevokedKey, nameOfKey, SWITCH_KEY, type AuthSwitch, type UserRecord } from './records.js';
import { ROOT_ROLE, type Rule } from './rules.js';
import { decodeQuota, QUOTA_BUCKET, quotaKeyParts, type QuotaSetting } from './quotas.js';

/** Everything, everywhere: what the root role grants. */
const ROOT_RULES: readonly Rule[] = [{ prefix: '*', perms: ['read', 'write', 'watch', 'admin'], deny: false }];

export class AuthState {
  switch: AuthSwitch = { enabled: false, tokenKey: null };
  readonly users = new Map<string, UserRecord>();
  readonly roles = new Map<string, readonly Rule[]>();
  /** Tokens revoked before their expiry (a logout): SHA-256 of the token (hex) -> when it would have expired. */
  readonly revoked = new Map<string, number>();
  private readonly rulesOfUser = new Map<string, readonly Rule[]>();
  /** Storage quotas set per user and per role (quotas.ts). */
  readonly quotas = { users: new Map<string, QuotaSetting>(), roles: new Map<string, QuotaSetting>() };

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<AuthState> {
    const state = new AuthState();
    for await (const [key, value] of db.iterator({ ...bucketRange(AuthBucket.user), snapshot })) state.users.set(nameOfKey(key), decodeUser(value));
    for await (const [key, value] of db.iterator({ ...bucketRange(AuthBucket.role), snapshot })) state.roles.set(nameOfKey(key), decodeRules(value));
    for await (const [key, value] of db.iterator({ ...bucketRange(AuthBucket.meta), snapshot })) {
      const digest = digestOfRevokedKey(key);
      if (digest !== null) state.revoked.set(digest, decodeExpiry(value));
    }
    for await (const [key, value] of db.iterator({ ...bucketRange(QUOTA_BUCKET), snapshot })) {
      const { target, name } = quotaKeyParts(key);
      (target === 'user' ? state.quotas.users : state.quotas.roles).set(name, decodeQuota(value));
    }
    const raw = await db.get(SWITCH_KEY, { snapshot });
    if (raw !== undefined) state.switch = decodeSwitch(raw);
    return state;
  }

  get enabled(): boolean {
    return this.switch.enabled;
  }

  /** The rules of all of `user`'s roles together (none for an unknown user). */
  rulesOf(user: string): readonly Rule[] {
    let rules = this.rulesOfUser.get(user);
    if (rules === undefined) {
      const record = this.users.get(user);
      const gathered: Rule[] = [];
      for (const role of record?.roles ?? []) for (const r of role === ROOT_ROLE ? ROOT_RULES : (this.roles.get(role) ?? [])) gathered.push(r);
      rules = gathered;
      this.rulesOfUser.set(user, rules);
    }
    return rules;
  }

  isRoot(user: string): boolean {
    return this.users.get(user)?.roles.includes(ROOT_ROLE) ?? false;
  }

  /** Run after every applied change: the gathered rules are stale. */
  changed(): void {
    this.rulesOfUser.clear();
  }
}
