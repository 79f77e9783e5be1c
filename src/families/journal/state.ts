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

  // Per journal and priority, a key no live Waiting index key is below. Claims take
  // from the front of the index, so LevelDB keeps a growing run of deleted keys
  // there until it compacts; a claim that seeks from the range's start steps over
  // all of them. Starting at the floor skips them. Memory only, and only ever a
  // lower bound, so where a claim starts never changes what it finds: after a
  // restart or a snapshot the floors are gone and the first claim starts at the
  // range's start.
  private readonly floors = new Map<string, Buffer>();

  floorOf(name: string, priority: number): Buffer | undefined {
    return this.floors.get(floorName(name, priority));
  }

  /** After a claim: nothing below `key` is left in the index of this priority. */
  raiseFloor(name: string, priority: number, key: Buffer): void {
    this.floors.set(floorName(name, priority), key);
  }

  /** A Waiting index key was written: the floor must not be above it. */
  keepFloorBelow(name: string, priority: number, key: Buffer): void {
    const id = floorName(name, priority);
    const floor = this.floors.get(id);
    if (floor !== undefined && Buffer.compare(key, floor) < 0) this.floors.set(id, key);
  }

  forgetFloors(name: string): void {
    for (let p = 0; p <= 255; p++) this.floors.delete(floorName(name, p));
  }

  /** A journal that answers requests (defined, not being dropped). */
  live(name: string): JournalDefinition | null {
    const d = this.journals.get(name);
    return d === undefined || d.dropping ? null : d;
  }
}

function floorName(name: string, priority: number): string {
  return `${priority}/${name}`;
}
