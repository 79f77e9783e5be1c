// Storage quotas an administrator set for one user or one role (issue 31, item
// 7), kept by the auth family beside the users and roles they name, and how the
// limit a user is held to is worked out from them: the user's own setting, else
// the largest its roles allow, else the default the leader was started with
// (carried in the command that is judged). Each of items and bytes separately.
import { bucketPrefix } from '../../keys/index.js';
import type { StorageLimits } from '../../kit/index.js';
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';

/** A limit on what one user stores; null: not set here (the next source decides). */
export interface QuotaSetting {
  readonly items: number | null;
  readonly bytes: number | null;
}

export type QuotaTarget = 'user' | 'role';

/** 'u' or 'r' + name -> QuotaSetting. */
export const QUOTA_BUCKET = 0x001e;

export function quotaKey(target: QuotaTarget, name: string): Buffer {
  return Buffer.concat([bucketPrefix(QUOTA_BUCKET), Buffer.from(target === 'user' ? 'u' : 'r', 'utf8'), Buffer.from(name, 'utf8')]);
}

export function quotaKeyParts(key: Buffer): { target: QuotaTarget; name: string } {
  const tag = key.subarray(2, 3).toString('utf8');
  if (tag !== 'u' && tag !== 'r') throw new CorruptValueError(`a quota key has tag ${JSON.stringify(tag)}`);
  return { target: tag === 'u' ? 'user' : 'role', name: key.subarray(3).toString('utf8') };
}

export function encodeQuota(q: QuotaSetting): Buffer {
  return pack([q.items, q.bytes]);
}

export function decodeQuota(bytes: Uint8Array): QuotaSetting {
  const v = unpack(bytes);
  const ok = (x: unknown): boolean => x === null || (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0);
  if (!Array.isArray(v) || v.length !== 2 || !ok(v[0]) || !ok(v[1])) throw new CorruptValueError('a quota record is not [items, bytes]');
  return { items: v[0] as number | null, bytes: v[1] as number | null };
}

/**
 * The limits `user` is held to: per field, its own setting, else the largest any of its
 * roles sets, else `defaults`.
 */
export function limitsOf(
  user: string,
  roles: readonly string[],
  settings: { readonly users: ReadonlyMap<string, QuotaSetting>; readonly roles: ReadonlyMap<string, QuotaSetting> },
  defaults: StorageLimits,
): StorageLimits {
  const own = settings.users.get(user);
  const pick = (field: keyof QuotaSetting): number => {
    const mine = own?.[field];
    if (mine !== undefined && mine !== null) return mine;
    let best: number | null = null;
    for (const role of roles) {
      const set = settings.roles.get(role)?.[field];
      if (set !== undefined && set !== null && (best === null || set > best)) best = set;
    }
    return best ?? defaults[field];
  };
  return { items: pick('items'), bytes: pick('bytes') };
}
