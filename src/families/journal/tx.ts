// One journal entry's changes to one journal, staged in memory: reads see the
// entry's own earlier changes (a batch may add one key twice), and the writes
// are derived at the end from each touched item's before and after (item value,
// the index entries of its status and expiry, the journal's counts).
import type { BatchOp } from '../../statemachine/family.js';
import type { PlanReads } from '../../statemachine/pending-reads.js';
import type { DueFront, JournalState } from './state.js';
import type { DerivedKeys, RecentHandle, RecentRecord } from './recent-items.js';
import { definitionKey, expiryKey, flaggedKey, itemKey, processingKey, resultExpiryKey, resultKey, waitingKey } from './keys.js';
import {
  chargeOf,
  decodeFlagged,
  decodeItem,
  decodeResult,
  encodeDefinition,
  encodeFlagged,
  encodeItem,
  encodeResult,
  type FlaggedItem,
  type JournalCounts,
  type JournalDefinition,
  type JournalItem,
  type KeptResult,
} from './records.js';

/** One user's items and bytes changed by an entry (negative: given back). */
export interface UsageChange {
  items: number;
  bytes: number;
}

interface Change<T> {
  readonly before: T | null;
  after: T | null;
}

interface ItemChange extends Change<JournalItem> {
  /** Bytes of the stored record read for `before` (0 when there was none). */
  readonly storedBytes: number;
  /** The item's key in the item bucket, once known; with `before`'s index entries when they came with its record. */
  readonly derived: DerivedKeys | { readonly itemKey: Buffer; readonly indexKeys: null } | null;
  /** Where the recent records held `before`, when they did: its next record is remembered through it. */
  readonly recent?: RecentHandle;
}

export class JournalTx {
  private readonly items = new Map<string, ItemChange>();
  /** Fronts of the Waiting index a claim read or extended, per priority, to keep once the entry is applied (state.ts). */
  readonly frontsRead = new Map<number, DueFront>();
  private readonly flags = new Map<string, Change<FlaggedItem>>();
  private readonly results = new Map<string, Change<KeptResult>>();
  /** Changes to the definition besides its counts (pause, the rate limit's window), kept by definitionAfter. */
  readonly definitionChanges: { -readonly [K in keyof JournalDefinition]?: JournalDefinition[K] } = {};

  constructor(
    private readonly db: PlanReads,
    private readonly state: JournalState,
    readonly name: string,
    readonly definition: JournalDefinition,
  ) {}

  /**
   * The item as get would give it, when that needs no read of the db (staged here, or among
   * the recent records): undefined otherwise. Hot loops call this first, so that most items
   * cost no await (a promise and a trip through the microtask queue each).
   */
  known(key: string): JournalItem | null | undefined {
    const staged = this.items.get(key);
    if (staged !== undefined) return staged.after;
    const handle = this.state.recent.lookup(this.name, key);
    if (handle === undefined) return undefined;
    const recent = handle.written;
    const item = recent === null ? null : recent.item;
    this.items.set(key, { before: item, after: item, storedBytes: recent === null ? 0 : recent.record.length, derived: recent?.derived ?? null, recent: handle });
    return item;
  }

  async get(key: string): Promise<JournalItem | null> {
    const known = this.known(key);
    if (known !== undefined) return known;
    const dbKey = itemKey(this.name, key);
    const raw = await this.db.get(dbKey);
    const item = raw === undefined ? null : decodeItem(raw);
    this.items.set(key, { before: item, after: item, storedBytes: raw?.length ?? 0, derived: { itemKey: dbKey, indexKeys: null } });
    return item;
  }

  /** The size of `key`'s stored record as this entry found it (call get first): what a reply carrying it costs, near enough. */
  storedBytes(key: string): number {
    return this.items.get(key)?.storedBytes ?? 0;
  }

  /** The index entries `key` has as this entry has left it so far (call get first). */
  indexKeysOf(key: string): readonly Buffer[] {
    const change = this.items.get(key);
    if (change === undefined) throw new Error(`journal tx: indexKeysOf(${key}) before get`);
    if (change.after === change.before && change.derived?.indexKeys) return change.derived.indexKeys;
    return indexKeys(this.name, change.after);
  }

  /** Waiting index keys of `priority` this entry has made so far (items it put back to Waiting), in order. */
  stagedWaitingKeys(priority: number): Buffer[] {
    const out: Buffer[] = [];
    for (const { before, after } of this.items.values()) {
      if (after === null || after.status !== 'waiting' || after.priority !== priority) continue;
      const key = waitingKey(this.name, after.priority, after.processAt, after.key);
      if (before !== null && before.status === 'waiting' && waitingKey(this.name, before.priority, before.processAt, before.key).equals(key)) continue;
      out.push(key);
    }
    return out.sort(Buffer.compare);
  }

  /** Call get(key) first: the change is recorded against what it read. */
  set(key: string, item: JournalItem | null): void {
    const staged = this.items.get(key);
    if (staged === undefined) throw new Error(`journal tx: set(${key}) before get`);
    staged.after = item;
  }

  async getFlagged(key: string): Promise<FlaggedItem | null> {
    const staged = this.flags.get(key);
    if (staged !== undefined) return staged.after;
    const raw = await this.db.get(flaggedKey(this.name, key));
    const flagged = raw === undefined ? null : decodeFlagged(raw);
    this.flags.set(key, { before: flagged, after: flagged });
    return flagged;
  }

  async setFlagged(key: string, flagged: FlaggedItem | null): Promise<void> {
    await this.getFlagged(key);
    this.flags.get(key)!.after = flagged;
  }

  async getResult(key: string): Promise<KeptResult | null> {
    const staged = this.results.get(key);
    if (staged !== undefined) return staged.after;
    const raw = await this.db.get(resultKey(this.name, key));
    const result = raw === undefined ? null : decodeResult(raw);
    this.results.set(key, { before: result, after: result });
    return result;
  }

  async setResult(key: string, result: KeptResult | null): Promise<void> {
    await this.getResult(key);
    this.results.get(key)!.after = result;
  }

  /** Results kept once the staged changes are written. */
  resultCount(): number {
    let n = this.definition.results ?? 0;
    for (const { before, after } of this.results.values()) n += (after === null ? 0 : 1) - (before === null ? 0 : 1);
    return n;
  }

  /** The journal's counts once the staged changes are written. */
  counts(): JournalCounts {
    const c = this.definition.counts;
    let waiting = c.waiting;
    let processing = c.processing;
    let flagged = c.flagged;
    const byPriority: Record<number, number> = { ...c.byPriority };
    const count = (item: JournalItem | null, sign: 1 | -1): void => {
      if (item === null) return;
      if (item.status === 'processing') processing += sign;
      else {
        waiting += sign;
        byPriority[item.priority] = (byPriority[item.priority] ?? 0) + sign;
        if (byPriority[item.priority] === 0) delete byPriority[item.priority];
      }
    };
    for (const { before, after } of this.items.values()) {
      count(before, -1);
      count(after, 1);
    }
    for (const { before, after } of this.flags.values()) flagged += (after === null ? 0 : 1) - (before === null ? 0 : 1);
    return { waiting, processing, flagged, byPriority };
  }

  /**
   * Each user's change in what it stores once the staged changes are written (issue 31,
   * item 7): an item or flagged item gone gives its user back what it was charged, a new or
   * changed one charges its user (an item whose data, next version or user changed is
   * charged anew, from its content alone). Users whose usage does not change are left out,
   * so a claim or an extend charges nobody. Call before ops(): it settles the charges the
   * records are written with.
   */
  usageChanges(): Map<string, UsageChange> {
    const changes = new Map<string, UsageChange>();
    const count = (item: JournalItem | null, sign: 1 | -1): void => {
      if (item === null || item.user === undefined) return;
      const c = changes.get(item.user) ?? { items: 0, bytes: 0 };
      c.items += sign;
      c.bytes += sign * (item.chargedBytes ?? 0);
      changes.set(item.user, c);
    };
    for (const change of this.items.values()) {
      const { before } = change;
      let after = change.after;
      if (before === after) continue;
      if (after !== null) {
        if (after.user === undefined) {
          if (after.chargedBytes !== undefined) after = { ...after, chargedBytes: undefined };
        } else if (after.chargedBytes === undefined || before === null || before.user !== after.user || before.data !== after.data || before.next !== after.next) {
          after = { ...after, chargedBytes: chargeOf(after) };
        }
        change.after = after;
      }
      count(before, -1);
      count(after, 1);
    }
    for (const change of this.flags.values()) {
      const { before, after } = change;
      if (before === after) continue;
      // A flagged copy is charged anew too (a flag drops the item's next version).
      if (after !== null && after.item.user !== undefined && before?.item !== after.item) change.after = { ...after, item: { ...after.item, chargedBytes: chargeOf(after.item) } };
      count(before === null ? null : before.item, -1);
      count(change.after === null ? null : change.after.item, 1);
    }
    for (const [user, c] of changes) if (c.items === 0 && c.bytes === 0) changes.delete(user);
    return changes;
  }

  /** The definition after this entry (counts updated; settings and dropping as given). */
  definitionAfter(changes: Partial<Omit<JournalDefinition, 'counts'>> = {}): JournalDefinition {
    const d: { -readonly [K in keyof JournalDefinition]?: JournalDefinition[K] } = { ...this.definition, ...this.definitionChanges, ...changes, counts: this.counts() };
    const results = this.resultCount();
    if (results > 0) d.results = results;
    else delete d.results;
    if (d.paused !== true) delete d.paused;
    return d as JournalDefinition;
  }

  /** What the last ops() writes to and deletes from the Waiting index, in order (state.ts keeps claims' fronts by it). */
  readonly waitingChanges: Array<{ readonly priority: number; readonly key: Buffer; readonly put: boolean }> = [];

  /** The item records the last ops() writes (null: deletes), for the state's recent items once the entry is applied (with where they held the item before, if they did). */
  readonly itemsWritten: Array<readonly [string, RecentRecord | null, RecentHandle | undefined]> = [];

  /** Every write of the staged changes, and the definition with its new counts. */
  ops(definition: JournalDefinition | null = this.definitionAfter()): BatchOp[] {
    const ops: BatchOp[] = [];
    this.waitingChanges.length = 0;
    this.itemsWritten.length = 0;
    for (const [key, change] of this.items) {
      const { before, after } = change;
      if (before === after) continue;
      const old = change.derived?.indexKeys ?? indexKeys(this.name, before);
      const now = indexKeys(this.name, after);
      // A new item (an add) or a deleted one (a done) has nothing to compare: the common cases.
      for (const k of old) if (now.length === 0 || !includes(now, k)) ops.push({ type: 'del', key: k });
      for (const k of now) if (old.length === 0 || !includes(old, k)) ops.push({ type: 'put', key: k, value: EMPTY });
      // Changes to the Waiting index (its first key, when the item waits), for the claims' fronts.
      const was = before !== null && before.status === 'waiting' ? old[0]! : null;
      const is = after !== null && after.status === 'waiting' ? now[0]! : null;
      if (was !== null && (is === null || !is.equals(was))) this.waitingChanges.push({ priority: before!.priority, key: was, put: false });
      if (is !== null && (was === null || !was.equals(is))) this.waitingChanges.push({ priority: after!.priority, key: is, put: true });
      const dbKey = change.derived?.itemKey ?? itemKey(this.name, key);
      if (after === null) {
        ops.push({ type: 'del', key: dbKey });
        this.itemsWritten.push([key, null, change.recent]);
        continue;
      }
      const record = encodeItem(after);
      ops.push({ type: 'put', key: dbKey, value: record });
      this.itemsWritten.push([key, { record, item: after, derived: { itemKey: dbKey, indexKeys: now } }, change.recent]);
    }
    for (const [key, { before, after }] of this.flags) {
      if (before === after) continue;
      ops.push(after === null ? { type: 'del', key: flaggedKey(this.name, key) } : { type: 'put', key: flaggedKey(this.name, key), value: encodeFlagged(after) });
    }
    for (const [key, { before, after }] of this.results) {
      if (before === after) continue;
      if (before !== null) ops.push({ type: 'del', key: resultExpiryKey(this.name, before.keptUntil, key) });
      if (after === null) ops.push({ type: 'del', key: resultKey(this.name, key) });
      else ops.push({ type: 'put', key: resultKey(this.name, key), value: encodeResult(after) }, { type: 'put', key: resultExpiryKey(this.name, after.keptUntil, key), value: EMPTY });
    }
    if (definition === null) ops.push({ type: 'del', key: definitionKey(this.name) });
    else ops.push({ type: 'put', key: definitionKey(this.name), value: encodeDefinition(definition) });
    return ops;
  }
}

const EMPTY = Buffer.alloc(0);

function includes(keys: readonly Buffer[], key: Buffer): boolean {
  for (const k of keys) if (k.equals(key)) return true;
  return false;
}

/** The index entries an item has: its place in claim order or among the claims, and its expiry. */
function indexKeys(name: string, item: JournalItem | null): Buffer[] {
  if (item === null) return [];
  const keys = [item.status === 'waiting' ? waitingKey(name, item.priority, item.processAt, item.key) : processingKey(name, item.startedAt, item.key)];
  if (item.expiresAt !== 0) keys.push(expiryKey(name, item.expiresAt, item.key));
  return keys;
}
