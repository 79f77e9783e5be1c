// The quota family: what each user stores, and the per-user limits on it judged
// in apply (issue 31, item 7; docs/security.md "Per-user storage quotas"). It has
// no commands of its own: the lists, journal and kv families charge the user behind the
// session that adds an item (the principal its openSession recorded, so no proposer can
// name another user; a journal add names the caller's user, filled in by the leader) and
// credit the user an item records when it is deleted, all through the kernel's ledger
// (States.users), which this family answers, so none of them imports it;
// the limits are the auth family's settings per user and role, else the
// leader's defaults carried in the command. With authentication off nothing is
// judged (there are no users); items added by a session with a principal are still
// counted, so the counts hold when it is turned on again.
import type { ApplyError } from '../../statemachine/types.js';
import { failure, type Family, type States, type UserLedger } from '../../statemachine/family.js';
import { USER_QUOTA_SINCE, type StorageLimits } from '../../kit/index.js';
import { auth, limitsOf } from '../auth/public.js';
import { USAGE_BUCKET, UsageState } from './state.js';

export const quota: Family<never, UsageState> = {
  name: 'quota',
  since: USER_QUOTA_SINCE,
  buckets: [{ id: USAGE_BUCKET, name: 'storage used by each user' }],
  ops: {},
  load: (db, snapshot) => UsageState.load(db, snapshot),
  plan: () => {
    throw new Error('the quota family has no commands');
  },
  goesAlone: () => false,
  settleEntry: (states, kept) => states.of(quota).settle(kept),
  // The families that store items charge users through the kernel (States.users), never importing this one.
  userLedger: (states): UserLedger => ({
    charge: (user, items, bytes, limits) => chargeUser(states, user, items, bytes, limits),
    change: (user, items, bytes) => states.of(quota).change(user, items, bytes),
    of: (user) => states.of(quota).of(user),
  }),
};

/** The limits `user` is held to, given the leader's defaults. */
function userLimits(states: States, user: string, defaults: StorageLimits): StorageLimits {
  const a = states.of(auth);
  return limitsOf(user, a.users.get(user)?.roles ?? [], a.quotas, defaults);
}

/**
 * Charges `user` for `items` more items of `bytes` stored bytes in the entry being
 * planned. With authentication on, refuses (charging nothing) when that would pass
 * the user's limits; the caller then changes nothing either.
 */
function chargeUser(states: States, user: string, items: number, bytes: number, defaults: StorageLimits): ApplyError | null {
  const usage = states.of(quota);
  if (states.of(auth).enabled) {
    const held = usage.planned(user);
    const limits = userLimits(states, user, defaults);
    const how = `(vera user quota ${user} --items N --bytes SIZE, a quota on one of its roles, or --items-per-user/--bytes-per-user raises it); delete some of its items first`;
    if (held.items + items > limits.items) {
      return failure('QUOTA_EXCEEDED', `user ${user} stores ${held.items} items and may store at most ${limits.items} ${how}`);
    }
    if (held.bytes + bytes > limits.bytes) {
      return failure('QUOTA_EXCEEDED', `user ${user} stores ${held.bytes} bytes; ${bytes} more would pass its limit of ${limits.bytes} bytes ${how}`);
    }
  }
  usage.change(user, items, bytes);
  return null;
}
