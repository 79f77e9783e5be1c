// The lag family's in-memory index: the highest notification index each
// session has acknowledged. Rebuilt from the lag bucket at load.
import { bucketRange, entriesInKeyOrder } from '../../keys/index.js';
import { LagBucket, decodeLagKey } from './keys.js';
import { decodeLagValue } from './codec.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';

export class LagState {
  private readonly acked = new Map<string, number>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<LagState> {
    const state = new LagState();
    for await (const [key, value] of db.iterator({ ...bucketRange(LagBucket.lag), snapshot })) {
      state.acked.set(decodeLagKey(key), decodeLagValue(value));
    }
    return state;
  }

  /** Highest notification index the session acknowledged (0 if none). */
  of(session: string): number {
    return this.acked.get(session) ?? 0;
  }

  set(session: string, index: number): void {
    this.acked.set(session, index);
  }

  delete(session: string): void {
    this.acked.delete(session);
  }

  dump(): Array<[string, number]> {
    return entriesInKeyOrder(this.acked);
  }
}
