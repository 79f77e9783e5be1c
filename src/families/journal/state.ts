// The journal family's in-memory index: each journal's definition (settings and
// counts, a few hundred bytes whatever the number of items), loaded from the
// definition bucket and changed only by plans' after-steps.
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../family.js';
import { DEFAULT_MAX_JOURNALS } from './commands.js';
import { JournalBucket, limitsKey } from './keys.js';
import { decodeDefinition, decodeLimits, type JournalDefinition, type JournalLimits } from './records.js';

export class JournalState {
  readonly journals = new Map<string, JournalDefinition>();
  limits: JournalLimits = { maxJournals: DEFAULT_MAX_JOURNALS };

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<JournalState> {
    const state = new JournalState();
    for await (const [key, value] of db.iterator({ ...bucketRange(JournalBucket.definition), snapshot })) {
      state.journals.set(key.subarray(3).toString('ascii'), decodeDefinition(value));
    }
    const limits = await db.get(limitsKey(), { snapshot });
    if (limits !== undefined) state.limits = decodeLimits(limits);
    return state;
  }

  /** A journal that answers requests (defined, not being dropped). */
  live(name: string): JournalDefinition | null {
    const d = this.journals.get(name);
    return d === undefined || d.dropping ? null : d;
  }
}
