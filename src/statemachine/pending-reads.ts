// Reads for planning an entry that shares a LevelDB batch with the entries
// planned before it: the db as it will be once those entries' writes are in.
//
// The kernel writes a run of entries in one batch (state-machine.ts). An entry
// that reads the db used to go alone, so its reads saw every earlier write. A
// family whose reads go through these instead may share the batch: a read
// consults the planned-but-unwritten writes first and the db after, so it gets
// exactly what it would have got had every earlier entry been written alone.
// Only point reads and forward key ranges are offered: what the journal needs.
import type { BatchOp, VeraDb } from './types.js';

/** At most one lower bound (gt or gte) and one upper bound (lt or lte). */
export interface KeyRange {
  readonly gt?: Buffer;
  readonly gte?: Buffer;
  readonly lt?: Buffer;
  readonly lte?: Buffer;
  /** At most this many keys. */
  readonly limit?: number;
}

export interface PlanReads {
  get(key: Buffer): Promise<Buffer | undefined>;
  /** The keys in `range`, in ascending order. */
  keys(range: KeyRange): Promise<Buffer[]>;
}

export class PendingReads implements PlanReads {
  // key (as a latin1 string: one char per byte, so equal keys are equal strings) -> value, null = deleted
  private readonly pending = new Map<string, { readonly key: Buffer; readonly value: Buffer | null }>();
  /** The batch `pending` indexes, and how much of it. */
  private source: readonly BatchOp[] | null = null;
  private indexed = 0;

  /**
   * `unwritten()`: the writes planned but not yet in the db, in order; a new array once
   * they are written. Indexed only when something reads, so entries whose families
   * plan from memory (a push) cost nothing here.
   */
  constructor(
    private readonly db: VeraDb,
    private readonly unwritten: () => readonly BatchOp[],
  ) {}

  private catchUp(): void {
    const ops = this.unwritten();
    if (ops !== this.source) {
      this.source = ops;
      this.indexed = 0;
      this.pending.clear();
    }
    for (; this.indexed < ops.length; this.indexed++) {
      const op = ops[this.indexed]!;
      this.pending.set(op.key.toString('latin1'), { key: op.key, value: op.type === 'put' ? op.value : null });
    }
  }

  async get(key: Buffer): Promise<Buffer | undefined> {
    this.catchUp();
    const staged = this.pending.get(key.toString('latin1'));
    if (staged !== undefined) return staged.value ?? undefined;
    // Synchronous: planning runs one entry at a time, and a point read of a hot key (in
    // LevelDB's memtable or cache) costs microseconds, far less than a thread-pool round trip.
    return this.db.getSync(key);
  }

  async keys(range: KeyRange): Promise<Buffer[]> {
    const limit = range.limit ?? Infinity;
    // The unwritten ops scanned in place, not through the point reads' index: a claim reading
    // its front needs the few in its range, and indexing thousands of ops for it cost more.
    const ops = this.unwritten();
    if (ops.length === 0) return this.db.keys(range).all();
    // Every key between two bounds starts with the bytes they share: a key that does not is out
    // of range at once, without a native compare (a batch holds thousands of ops, few in range).
    const shared = sharedPrefix(range.gt ?? range.gte, range.lt ?? range.lte);
    const inRange = (key: Buffer): boolean =>
      startsWith(key, shared) &&
      (range.gt === undefined || Buffer.compare(key, range.gt) > 0) &&
      (range.gte === undefined || Buffer.compare(key, range.gte) >= 0) &&
      (range.lt === undefined || Buffer.compare(key, range.lt) < 0) &&
      (range.lte === undefined || Buffer.compare(key, range.lte) <= 0);
    // In-range keys written here (latin1 id), each with its last write: a value, or null if deleted.
    const staged = new Map<string, BatchOp>();
    for (const op of ops) if (inRange(op.key)) staged.set(op.key.toString('latin1'), op);
    const added: Buffer[] = [];
    for (const op of staged.values()) if (op.type === 'put') added.push(op.key);
    if (staged.size === 0) return this.db.keys(range).all();
    added.sort(Buffer.compare);
    // Merge the db's keys (less those deleted or rewritten here) with the ones written here.
    // At most staged.size of the db's keys drop out, so that many more than the limit is
    // enough, read in one go (an iterator stepped key by key costs a thread-pool trip each).
    const out: Buffer[] = [];
    let next = 0;
    const { limit: _limit, ...bounds } = range;
    const fromDb = await this.db.keys(limit === Infinity ? bounds : { ...bounds, limit: limit + staged.size }).all();
    for (const key of fromDb) {
      while (next < added.length && Buffer.compare(added[next]!, key) < 0 && out.length < limit) out.push(added[next++]!);
      if (out.length >= limit) return out;
      if (staged.has(key.toString('latin1'))) continue; // deleted here, or rewritten and already among `added`
      out.push(key);
      if (out.length >= limit) return out;
    }
    while (next < added.length && out.length < limit) out.push(added[next++]!);
    return out;
  }
}

/** The bytes `a` and `b` both start with (none when either is missing). */
function sharedPrefix(a: Buffer | undefined, b: Buffer | undefined): Buffer {
  if (a === undefined || b === undefined) return EMPTY;
  let n = 0;
  const most = Math.min(a.length, b.length);
  while (n < most && a[n] === b[n]) n++;
  return a.subarray(0, n);
}

const EMPTY = Buffer.alloc(0);

function startsWith(key: Buffer, prefix: Buffer): boolean {
  if (key.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}
