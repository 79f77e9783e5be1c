// What each user stores (issue 31, item 7): its list items and their stored
// bytes, one record per user in the usage bucket, loaded whole at start and after
// a snapshot install (one record per user, not a walk of the items). Apply keeps
// it: the plans of an entry charge and credit users through a ledger, and once the
// entry is planned the ledger becomes that entry's writes of the changed records
// (in the same batch as the items) and, after them, the new counts in memory.
import { bucketPrefix, bucketRange, compareUtf8 } from '../../keys/index.js';
import { CorruptValueError, pack, unpack } from '../../statemachine/codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { BatchOp, DbSnapshot } from '../../statemachine/family.js';

/** user name -> [items, bytes]. */
export const USAGE_BUCKET = 0x001f;

export interface Usage {
  readonly items: number;
  readonly bytes: number;
}

const NONE: Usage = { items: 0, bytes: 0 };

export function usageKey(user: string): Buffer {
  return Buffer.concat([bucketPrefix(USAGE_BUCKET), Buffer.from(user, 'utf8')]);
}

export function encodeUsage(u: Usage): Buffer {
  return pack([u.items, u.bytes]);
}

export function decodeUsage(bytes: Uint8Array): Usage {
  const v = unpack(bytes);
  const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (!Array.isArray(v) || v.length !== 2 || !count(v[0]) || !count(v[1])) throw new CorruptValueError('a usage record is not [items, bytes]');
  return { items: v[0] as number, bytes: v[1] as number };
}

export class UsageState {
  private readonly byUser = new Map<string, Usage>();
  /** Changes the entry being planned made so far, by user (cleared when it is settled). */
  private readonly pending = new Map<string, { items: number; bytes: number }>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<UsageState> {
    const state = new UsageState();
    for await (const [key, value] of db.iterator({ ...bucketRange(USAGE_BUCKET), snapshot })) state.byUser.set(key.subarray(2).toString('utf8'), decodeUsage(value));
    return state;
  }

  /** What `user` stores as of the entries applied so far (this entry's changes not included). */
  of(user: string): Usage {
    return this.byUser.get(user) ?? NONE;
  }

  /** What `user` stores with the changes the entry being planned made so far. */
  planned(user: string): Usage {
    const base = this.of(user);
    const change = this.pending.get(user);
    return change === undefined ? base : { items: base.items + change.items, bytes: base.bytes + change.bytes };
  }

  /** Records a change for the entry being planned (negative: a credit). */
  change(user: string, items: number, bytes: number): void {
    const change = this.pending.get(user);
    if (change === undefined) this.pending.set(user, { items, bytes });
    else {
      change.items += items;
      change.bytes += bytes;
    }
  }

  /**
   * The entry is planned (`kept`: it will be written) or refused: its changes become
   * writes of the users' records, in user-name order, and the counts to keep after them.
   */
  settle(kept: boolean): { ops: BatchOp[]; after: Array<() => void> } | null {
    if (this.pending.size === 0) return null;
    const users = [...this.pending.keys()].sort(compareUtf8);
    const next = users.map((user) => {
      const u = this.planned(user);
      return [user, { items: Math.max(0, u.items), bytes: Math.max(0, u.bytes) }] as const;
    });
    this.pending.clear();
    if (!kept) return null;
    const ops: BatchOp[] = next.map(([user, u]) => (u.items === 0 && u.bytes === 0 ? { type: 'del', key: usageKey(user) } : { type: 'put', key: usageKey(user), value: encodeUsage(u) }));
    const after = [
      () => {
        for (const [user, u] of next) {
          if (u.items === 0 && u.bytes === 0) this.byUser.delete(user);
          else this.byUser.set(user, u);
        }
      },
    ];
    return { ops, after };
  }

  /** Every user's usage, sorted by name, for reads and tests. */
  dump(): Array<[string, Usage]> {
    return [...this.byUser].sort(([a], [b]) => compareUtf8(a, b));
  }
}
