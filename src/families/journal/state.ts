// The journal family's in-memory index: each journal's definition (settings and
// counts, a few hundred bytes whatever the number of items), loaded from the
// definition bucket and changed only by plans' after-steps.
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { JournalBucket } from './keys.js';
import { decodeDefinition, type JournalDefinition } from './records.js';

export class JournalState {
  readonly journals = new Map<string, JournalDefinition>();

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<JournalState> {
    const state = new JournalState();
    for await (const [key, value] of db.iterator({ ...bucketRange(JournalBucket.definition), snapshot })) {
      state.journals.set(key.subarray(3).toString('ascii'), decodeDefinition(value));
    }
    return state;
  }

  /** A journal that answers requests (defined, not being dropped). */
  live(name: string): JournalDefinition | null {
    const d = this.journals.get(name);
    return d === undefined || d.dropping ? null : d;
  }
}
