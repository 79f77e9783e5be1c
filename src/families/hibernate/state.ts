// Hibernation's in-memory state: every Frozen unit (what stays hot about it),
// loaded from its bucket, and the cold store the units' data is in. The cold
// store lives beside the db, in the data directory's `cold` folder.
import { dirname, join } from 'node:path';
import { bucketRange } from '../../keys/index.js';
import type { VeraDb } from '../../statemachine/types.js';
import type { DbSnapshot } from '../../statemachine/family.js';
import { FrozenSpanCompactor } from './compactor.js';
import { RecentColdRead } from './held-reads.js';
import { Breather, ColdStore, ColdStoreError, decodeColdFile, READ_PAGE_PAUSE_MS, type HeldColdUnit } from './cold-store.js';
import { limited, prepareUnit, type Prepared } from './freezing.js';
import { decodeItemKey, type ListsState } from '../lists/public.js';
import { HibernateBucket, transitKey, unitItemRanges, unitOfKey } from './keys.js';
import { decodeFreezing, decodeFrozen, type FreezingUnit, type FrozenList, type FrozenUnit } from './records.js';

/** The state each cold directory's member runs on now (the last loaded): an older one's background work is void. */
const liveStates = new Map<string, WeakRef<HibernateState>>();

/** A Freezing unit being made ready in the background on this member. */
export interface BackgroundPrepare {
  /** The Freezing record's `since`: the work is that freeze's. */
  readonly since: number;
  readonly done: Promise<Prepared>;
  /** The commit is applied and waits for it: stop pacing the read. */
  readonly hurry: () => void;
}

/**
 * Whether a unit drains or thaws in steps here (the compaction waits until none does). A
 * function of its own so that it holds only these two collections, not what else the
 * state's load had in scope (the set of every Frozen unit's file, for one).
 */
function stepsUnder(draining: ReadonlySet<string>, thawing: ReadonlyMap<string, number>): () => boolean {
  return () => draining.size > 0 || thawing.size > 0;
}

/** Units read and written at once per freeze: one, so the work beside the log comes in small pieces between client requests. */
const PREPARE_WIDTH = 1;
/** Thaw reads a member keeps decoded at once (HibernateState.thawReads). */
export const MAX_HELD_THAW_READS = 16;

/**
 * For each path, the names of its children that lead to lists of Frozen units, each with
 * how many such lists: `ls` and "does this unit hold a Frozen one" are answered by a
 * lookup, not a scan of every Frozen unit (a root may hold millions).
 */
class FrozenPaths {
  private readonly below = new Map<string, Map<string, number>>();

  add(lists: readonly FrozenList[]): void {
    for (const l of lists) for (const [parent, child] of steps(l.path)) {
      let children = this.below.get(parent);
      if (children === undefined) this.below.set(parent, (children = new Map()));
      children.set(child, (children.get(child) ?? 0) + 1);
    }
  }

  remove(lists: readonly FrozenList[]): void {
    for (const l of lists) for (const [parent, child] of steps(l.path)) {
      const children = this.below.get(parent)!;
      const n = children.get(child)! - 1;
      if (n > 0) children.set(child, n);
      else if (children.delete(child) && children.size === 0) this.below.delete(parent);
    }
  }

  /** The names of `path`'s children that are or lead to lists of Frozen units. */
  childrenOf(path: string): string[] {
    return [...(this.below.get(path)?.keys() ?? [])];
  }

  /** Whether some Frozen unit's list lies strictly below `path`. */
  anyBelow(path: string): boolean {
    return this.below.has(path);
  }
}

/** Each (parent, child name) on the way from the root to `path`: `/a/b` gives (`/`, a), (`/a`, b). */
function* steps(path: string): Generator<readonly [string, string]> {
  let parent = '/';
  for (const name of path.slice(1).split('/')) {
    yield [parent, name];
    parent = parent === '/' ? `/${name}` : `${parent}/${name}`;
  }
}

export class HibernateState {
  /** Freezing units being made ready on this member (not replicated: a restart forgets them, and the commit does the work itself). */
  readonly writing = new Map<string, BackgroundPrepare>();
  private readonly paths = new FrozenPaths();
  private frozenBytes = 0;
  /**
   * False until this member may hold a Frozen record: at load, none; set when a freeze is
   * planned, before its batch is written, and never cleared. A reader that took its db
   * snapshot before looking here and finds it false knows the snapshot holds no Frozen
   * record, so a cluster that never hibernates pays no lookup per read.
   */
  mayHoldFrozen: boolean;
  /**
   * Per draining unit, the last key a dropHot step deleted (all before it are gone too): where
   * the next step seeks to. Not replicated: without it (after a restart) a step reads from the
   * unit's first key and finds the same keys, only slower.
   */
  readonly drainCursor = new Map<string, Buffer>();
  /**
   * A unit's cold file as its steps of thawing read it: read (in slices) once per thaw, not per step.
   * At most MAX_HELD_THAW_READS, the oldest dropped first: a thaw begun whose leader died before any
   * step would otherwise hold its decoded unit until the unit is thawed again; a step whose read was
   * dropped reads the file again.
   */
  private readonly thawReads = new Map<string, { readonly frozenAt: number; readonly read: Promise<HeldColdUnit>; done: boolean }>();

  /** The Frozen unit's file, verified to be its freeze's, for a step of its thaw. */
  thawRead(unit: string, frozenAt: number): Promise<HeldColdUnit> {
    const held = this.thawReads.get(unit);
    if (held !== undefined && held.frozenAt === frozenAt) return held.read;
    const read = this.cold.readInSlices(unit).then((cold) => {
      if (cold.meta.frozenAt !== frozenAt) throw new ColdStoreError(unit, 'foreign', `the file is from the freeze at ${String(cold.meta.frozenAt)}, the unit froze at ${frozenAt}`);
      return cold;
    });
    const entry = { frozenAt, read, done: false };
    read.then(
      () => void (entry.done = true),
      () => {
        if (this.thawReads.get(unit)?.read === read) this.thawReads.delete(unit);
      },
    );
    this.thawReads.delete(unit); // a re-read goes to the end of the order
    this.thawReads.set(unit, entry);
    for (const oldest of this.thawReads.keys()) {
      if (this.thawReads.size <= MAX_HELD_THAW_READS) break;
      this.thawReads.delete(oldest);
    }
    return read;
  }

  /**
   * Whether this member holds the unit's file read for its thaw, read to the end: a step
   * that needs no more is quick. Local to the member: it only decides whether a step shares
   * the batch around it, which changes nothing a step writes.
   */
  thawReadReady(unit: string, frozenAt: number): boolean {
    const held = this.thawReads.get(unit);
    return held !== undefined && held.frozenAt === frozenAt && held.done;
  }

  /** The unit is Hot again (or its thaw read is no longer wanted). */
  forgetThaw(unit: string): void {
    this.thawing.delete(unit);
    this.thawReads.delete(unit);
  }

  /** The cold file reads of Frozen lists were last served from (held-reads.ts). */
  readonly recentColdRead = new RecentColdRead();

  private constructor(
    private readonly frozenUnits: Map<string, FrozenUnit>,
    readonly freezing: Map<string, FreezingUnit>,
    /** Frozen units whose hot entries are not all deleted yet (dropHot entries delete them). */
    readonly draining: Set<string>,
    /** Frozen units being thawed in steps (thawStep), each with the offset in its file's entries the next step puts from. */
    readonly thawing: Map<string, number>,
    readonly cold: ColdStore,
    readonly compactor: FrozenSpanCompactor,
  ) {
    for (const record of frozenUnits.values()) {
      this.paths.add(record.lists);
      this.frozenBytes += record.bytes;
    }
    this.mayHoldFrozen = frozenUnits.size > 0 || freezing.size > 0;
  }

  /** The Frozen units' cold files' bytes in all (kept as they change, not summed per metrics scrape). */
  get coldBytes(): number {
    return this.frozenBytes;
  }

  /** Every Frozen unit and what stays hot of it. */
  get frozen(): ReadonlyMap<string, FrozenUnit> {
    return this.frozenUnits;
  }

  /** A freeze's batch is written: the unit is Frozen. */
  setFrozen(unit: string, record: FrozenUnit): void {
    this.frozenUnits.set(unit, record);
    this.paths.add(record.lists);
    this.frozenBytes += record.bytes;
  }

  /** A thaw's batch is written: the unit is Hot. */
  setThawed(unit: string): void {
    const record = this.frozenUnits.get(unit);
    if (record === undefined) return;
    this.frozenUnits.delete(unit);
    this.paths.remove(record.lists);
    this.frozenBytes -= record.bytes;
  }

  /** The names of `path`'s children that are (or lead to) lists of Frozen units, as `ls` gives children. */
  frozenChildren(path: string): string[] {
    return this.paths.childrenOf(path);
  }

  static async load(db: VeraDb, snapshot: DbSnapshot): Promise<HibernateState> {
    const frozen = new Map<string, FrozenUnit>();
    for await (const [key, value] of db.iterator({ ...bucketRange(HibernateBucket.unit), snapshot })) frozen.set(unitOfKey(key), decodeFrozen(value));
    const freezing = new Map<string, FreezingUnit>();
    for await (const [key, value] of db.iterator({ ...bucketRange(HibernateBucket.freezing), snapshot })) freezing.set(unitOfKey(key), decodeFreezing(value));
    const draining = new Set<string>();
    const thawing = new Map<string, number>();
    for await (const [key, value] of db.iterator({ ...bucketRange(HibernateBucket.draining), snapshot })) {
      if (value.length === 0) draining.add(unitOfKey(key));
      else thawing.set(unitOfKey(key), decodeThawNext(value));
    }
    const cold = await ColdStore.open(coldDirOf(db));
    // From here the state this replaces (if any) is void: its background writes must not land on the files
    // landed now, and its compaction (waiting on drains of a state no longer applied) never comes.
    liveStates.get(cold.dir)?.deref()?.compactor.stop();
    liveStates.delete(cold.dir);
    await landTransit(db, snapshot, cold, frozen);
    // What a crash can leave: temporary files, and the files of units thawed since (their thaw is in the db).
    const keep = new Set([...frozen.keys()].map((u) => cold.fileOf(u)));
    await cold.sweep((file) => keep.has(file));
    const state = new HibernateState(frozen, freezing, draining, thawing, cold, new FrozenSpanCompactor(db, undefined, stepsUnder(draining, thawing)));
    liveStates.set(cold.dir, new WeakRef(state));
    return state;
  }

  /**
   * Once every family is loaded: the lists family counted a draining unit's hot entries
   * not yet deleted as hot lists; a member that never stopped took the whole unit out of
   * its index at the commit, so this does the same.
   */
  async hideDraining(db: VeraDb, snapshot: DbSnapshot, listsState: ListsState): Promise<void> {
    for (const unit of [...this.draining, ...this.thawing.keys()]) {
      const counts = new Map<string, number>();
      for (const range of unitItemRanges(unit)) {
        for await (const key of db.keys({ ...range, snapshot })) {
          const { path } = decodeItemKey(key);
          counts.set(path, (counts.get(path) ?? 0) + 1);
        }
      }
      for (const [path, items] of counts) {
        listsState.setLastIndex(path, 0);
        listsState.usage.removedFromList(path, items);
      }
    }
  }

  /**
   * Starts making the units a freeze began at `since` ready: called right after that
   * entry was written, so the snapshot taken here is the state the freeze began at.
   */
  prepareInBackground(db: VeraDb, targets: ReadonlyArray<{ readonly unit: string; readonly seen: number }>, since: number): void {
    const snapshot = db.snapshot();
    const run = limited(PREPARE_WIDTH);
    // The file is written only if, when its turn comes, this freeze is still under way in the state the
    // member runs on: a freeze cancelled since, or a state replaced since (a snapshot installed), may have
    // a newer file of the unit that this one must not land on.
    const wanted = (unit: string) => (): boolean => liveStates.get(this.cold.dir)?.deref() === this && this.freezing.get(unit)?.since === since;
    // Paced, unless a commit is already applied and waits for it (BackgroundPrepare.hurry).
    const paces = targets.map(() => Breather.forFreeze(READ_PAGE_PAUSE_MS));
    const written = targets.map(({ unit, seen }, n) => run(() => prepareUnit(db, this.cold, unit, seen, since, snapshot, wanted(unit), paces[n])));
    // One sync of the directory for the freeze's files, once all are renamed into it: each is durable only then.
    const synced = Promise.allSettled(written).then((all) => (all.some((r) => r.status === 'fulfilled' && !('why' in r.value)) ? this.cold.syncDir() : undefined));
    const dones = targets.map(({ unit }, n) => {
      const done = written[n]!.then(async (prepared) => {
        await synced;
        return prepared;
      });
      done.catch(() => undefined); // the commit sees the failure and does the work itself
      this.writing.set(unit, { since, done, hurry: () => paces[n]!.hurry() });
      return done;
    });
    void Promise.allSettled(dones).then(() => snapshot.close().catch(() => undefined));
  }

  /** The Freezing unit `path` is in, if any: a lookup per ancestor. */
  freezingUnitOf(path: string): string | null {
    return unitIn(this.freezing, path);
  }

  /** The Frozen unit `path` is in (the unit's list or one below it), if any: a lookup per ancestor, not a scan. */
  unitOf(path: string): string | null {
    return unitIn(this.frozen, path);
  }

  /**
   * Whether a Frozen unit lies strictly below `unit` (its lists' data is already cold).
   * Asked only of a unit that is neither Frozen nor inside one: then any Frozen list below
   * it belongs to a unit below it.
   */
  holdsFrozen(unit: string): boolean {
    return this.paths.anyBelow(unit);
  }
}

/** The key of `units` that is `path` or an ancestor of it, if any. */
function unitIn(units: ReadonlyMap<string, unknown>, path: string): string | null {
  if (units.size === 0) return null;
  for (let end = path.indexOf('/', 1); ; end = path.indexOf('/', end + 1)) {
    const candidate = end === -1 ? path : path.slice(0, end);
    if (units.has(candidate)) return candidate;
    if (end === -1) return null;
  }
}

export function coldDirOf(db: VeraDb): string {
  return join(dirname(db.location), 'cold');
}

/**
 * Cold files that came in an installed snapshot or a restored backup (records of the
 * transit bucket): each is verified against its unit's record, written durably, and
 * only then are the records deleted, so a crash in between finds them again.
 */
async function landTransit(db: VeraDb, snapshot: DbSnapshot, cold: ColdStore, frozen: ReadonlyMap<string, FrozenUnit>): Promise<void> {
  const landed: Buffer[] = [];
  for await (const [key, value] of db.iterator({ ...bucketRange(HibernateBucket.transit), snapshot })) {
    const unit = unitOfKey(key);
    const record = frozen.get(unit);
    if (record === undefined) {
      landed.push(key); // a file of a unit the state does not hold Frozen: nothing to keep
      continue;
    }
    const file = await cold.writeBytes(unit, value);
    if (file.meta.frozenAt !== record.frozenAt) throw new ColdStoreError(unit, 'foreign', `the file that came with the snapshot is from the freeze at ${String(file.meta.frozenAt)}, the unit froze at ${record.frozenAt}`);
    landed.push(key);
  }
  if (landed.length > 0) await db.batch(landed.map((key) => ({ type: 'del' as const, key })), { sync: true });
}

/** The cold files of the units Frozen at `snapshot`, as transit records (what a snapshot carries). */
export async function* coldFilesAt(db: VeraDb, snapshot: DbSnapshot): AsyncGenerator<readonly [Buffer, Buffer]> {
  const cold = await ColdStore.open(coldDirOf(db));
  for await (const [key, value] of db.iterator({ ...bucketRange(HibernateBucket.unit), snapshot })) {
    const unit = unitOfKey(key);
    const record = decodeFrozen(value);
    const bytes = await cold.readBytes(unit);
    // The file must be this freeze's: a thaw and a new freeze since the snapshot would have replaced it.
    const file = decodeColdFile(unit, bytes);
    if (file.meta.frozenAt !== record.frozenAt) throw new ColdStoreError(unit, 'foreign', `the cold file is from the freeze at ${String(file.meta.frozenAt)}, the snapshot's unit froze at ${record.frozenAt}; capture again`);
    yield [transitKey(unit), bytes];
  }
}

/** A thawing unit's mark: the offset in its file's entries the next step puts from (an empty mark is a draining unit's). */
export function encodeThawNext(next: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(next, 0);
  return b;
}

export function decodeThawNext(value: Buffer): number {
  return value.readUInt32BE(0);
}
