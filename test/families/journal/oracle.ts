// A small in-memory model of one journal, written from docs/journal.md and the
// seed's rules rather than from the family's code, to test the family against:
// a map of items by key and a map of flagged items, each op a few lines.
// Order of claims: priority, then process date, then the key's bytes (the
// generated keys are ASCII, so string order is byte order).

/** The last error a timeout leaves on an item (docs/journal.md, "Retries"). */
const TIMED_OUT = 'timed out: no done, release or extend within the journal timeout';

export interface Version {
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  /** 0 = never. */
  readonly expiresAt: number;
}

export interface ModelItem extends Version {
  readonly key: string;
  readonly insertedAt: number;
  readonly status: 'waiting' | 'processing';
  readonly startedAt: number;
  readonly timeouts: number;
  /** Failed processings, kept through merges (counted from command version 9: `accounting`). */
  readonly failures: number;
  readonly lease: number;
  /** The version added while this one is processed. */
  readonly next: Version | null;
  /** The last failure's error (command version 9: a timeout leaves one). */
  readonly lastError?: string;
}

export interface ModelSettings {
  readonly timeoutMs: number;
  readonly maxTimeouts: number;
  readonly priority: number;
}

export type ModelResult =
  | { readonly ok: false; readonly code: string }
  | { readonly ok: true; readonly value: Record<string, unknown> };

const refused = (code: string): ModelResult => ({ ok: false, code });
const ok = (value: Record<string, unknown>): ModelResult => ({ ok: true, value });

const expired = (expiresAt: number, now: number): boolean => expiresAt !== 0 && expiresAt <= now;
/** "Never" is later than any date. */
const laterOf = (a: number, b: number): number => (a === 0 || b === 0 ? 0 : Math.max(a, b));

export class JournalModel {
  readonly items = new Map<string, ModelItem>();
  readonly flagged = new Map<string, { readonly item: ModelItem; readonly flaggedAt: number }>();

  /** `accounting`: the cluster runs command version 9 (docs/journal.md, "Failures"). */
  constructor(
    private readonly settings: ModelSettings,
    private readonly accounting = false,
  ) {}

  /** A processing that failed: both counters up (failures only with accounting); flagged past the maximum. */
  private failed(key: string, i: ModelItem, now: number): boolean {
    const counted: ModelItem = { ...i, timeouts: i.timeouts + 1, failures: this.accounting ? i.failures + 1 : i.failures };
    if (counted.timeouts > this.settings.maxTimeouts || (this.accounting && counted.failures > this.settings.maxTimeouts)) {
      this.flagged.set(key, { item: { ...counted, next: null }, flaggedAt: now });
      this.put(key, i.next === null ? null : JournalModel.waitingAgain(counted));
      return true;
    }
    this.put(key, JournalModel.waitingAgain(counted));
    return false;
  }

  /** The seed's merge of a new version into a waiting one. */
  private static merge(item: ModelItem, v: Version): ModelItem {
    return {
      ...item,
      data: v.data,
      priority: Math.min(item.priority, v.priority),
      processAt: Math.max(item.processAt, v.processAt),
      expiresAt: laterOf(item.expiresAt, v.expiresAt),
      timeouts: 0,
    };
  }

  /** Processing ended undone: waiting again, with the kept version merged in. */
  private static waitingAgain(item: ModelItem): ModelItem {
    const w: ModelItem = { ...item, status: 'waiting', startedAt: 0, lease: 0, next: null };
    return item.next === null ? w : JournalModel.merge(w, item.next);
  }

  /** What is left of an expired item: its kept version, if that has not expired too. */
  private static whenExpired(item: ModelItem, now: number): ModelItem | null {
    if (item.next === null || expired(item.next.expiresAt, now)) return null;
    return { ...item, ...item.next, status: 'waiting', startedAt: 0, lease: 0, timeouts: 0, failures: 0, next: null };
  }

  private put(key: string, item: ModelItem | null): void {
    if (item === null) this.items.delete(key);
    else this.items.set(key, item);
  }

  add(adds: ReadonlyArray<{ key: string; data: unknown; priority?: number; processAt?: number; expiresAt?: number }>, now: number): ModelResult {
    let inserted = 0;
    let merged = 0;
    let deferred = 0;
    for (const a of adds) {
      let cur = this.items.get(a.key) ?? null;
      if (cur !== null && expired(cur.expiresAt, now)) cur = JournalModel.whenExpired(cur, now);
      // With accounting, never before the date the item was inserted (now, for a new one).
      const processAt = this.accounting ? Math.max(a.processAt ?? now, cur?.insertedAt ?? now) : (a.processAt ?? now);
      const v: Version = { data: a.data, priority: a.priority ?? this.settings.priority, processAt, expiresAt: a.expiresAt ?? 0 };
      if (cur === null) {
        inserted++;
        this.put(a.key, { key: a.key, ...v, insertedAt: now, status: 'waiting', startedAt: 0, timeouts: 0, failures: 0, lease: 0, next: null });
      } else if (cur.status === 'waiting') {
        merged++;
        this.put(a.key, JournalModel.merge(cur, v));
      } else {
        deferred++;
        const kept: Version =
          cur.next === null
            ? v
            : (({ data, priority, processAt, expiresAt }) => ({ data, priority, processAt, expiresAt }))(JournalModel.merge({ ...cur, ...cur.next }, v));
        this.put(a.key, { ...cur, next: kept });
      }
    }
    return ok({ op: 'add', inserted, merged, deferred });
  }

  /** Due, unexpired Waiting items in claim order; expired ones met on the way are deleted (up to 1000). */
  claim(max: number, now: number, lease: number): ModelResult {
    const waiting = [...this.items.values()]
      .filter((i) => i.status === 'waiting' && i.processAt <= now)
      .sort((a, b) => a.priority - b.priority || a.processAt - b.processAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const taken: Array<Record<string, unknown>> = [];
    let budget = 1000;
    for (const i of waiting) {
      if (taken.length >= max) break;
      if (expired(i.expiresAt, now)) {
        if (budget > 0) {
          budget--;
          this.put(i.key, JournalModel.whenExpired(i, now));
        }
        continue;
      }
      this.put(i.key, { ...i, status: 'processing', startedAt: now, lease });
      taken.push({ key: i.key, data: i.data, priority: i.priority, processAt: i.processAt, insertedAt: i.insertedAt, timeouts: i.timeouts, failures: i.failures });
    }
    return ok({ op: 'claim', lease, items: taken });
  }

  private held(key: string, lease: number): ModelItem | null {
    const i = this.items.get(key);
    return i !== undefined && i.status === 'processing' && i.lease === lease ? i : null;
  }

  extend(key: string, lease: number, now: number): ModelResult {
    const i = this.held(key, lease);
    if (i === null) return refused('CONFLICT');
    this.put(key, { ...i, startedAt: now });
    return ok({ op: 'extend' });
  }

  done(key: string, lease: number, now: number, claimNext: number | undefined, entry: number): ModelResult {
    const i = this.held(key, lease);
    if (i === null) return refused('CONFLICT');
    this.put(key, i.next === null ? null : JournalModel.waitingAgain(i));
    const value: Record<string, unknown> = { op: 'done', requeued: i.next !== null };
    if (claimNext !== undefined) {
      const c = this.claim(claimNext, now, entry) as unknown as { value: { items: unknown[] } };
      value.next = { lease: entry, items: c.value.items };
    }
    return ok(value);
  }

  /** Each held item done (the others reported lost, unchanged), then maybe a claim under this entry. */
  doneMany(items: ReadonlyArray<readonly [string, number]>, now: number, claimNext: number | undefined, entry: number): ModelResult {
    const lost: string[] = [];
    let requeued = 0;
    for (const [key, lease] of items) {
      const i = this.held(key, lease);
      if (i === null) {
        lost.push(key);
        continue;
      }
      this.put(key, i.next === null ? null : JournalModel.waitingAgain(i));
      if (i.next !== null) requeued++;
    }
    const value: Record<string, unknown> = { op: 'doneMany', done: items.length - lost.length, lost, requeued };
    if (claimNext !== undefined) {
      const c = this.claim(claimNext, now, entry) as unknown as { value: { items: unknown[] } };
      value.next = { lease: entry, items: c.value.items };
    }
    return ok(value);
  }

  /** With accounting, a release is a failure unless `failure` is false, and its date is never before the insertion date. */
  release(key: string, lease: number, processAt: number | undefined, failure: boolean, now: number): ModelResult {
    const i = this.held(key, lease);
    if (i === null) return refused('CONFLICT');
    const at = processAt === undefined ? i.processAt : this.accounting ? Math.max(processAt, i.insertedAt) : processAt;
    const back = { ...i, processAt: at };
    if (!this.accounting || !failure) {
      this.put(key, JournalModel.waitingAgain(back));
      return ok({ op: 'release', key, flagged: false });
    }
    return ok({ op: 'release', key, flagged: this.failed(key, back, now) });
  }

  timeout(claims: ReadonlyArray<readonly [string, number]>, now: number): ModelResult {
    const requeued: string[] = [];
    const flagged: string[] = [];
    for (const [key, lease] of claims) {
      const i = this.held(key, lease);
      if (i === null || i.startedAt + this.settings.timeoutMs > now) continue;
      if (this.failed(key, this.accounting ? { ...i, lastError: TIMED_OUT } : i, now)) flagged.push(key);
      else requeued.push(key);
    }
    return ok({ op: 'timeout', requeued, flagged });
  }

  /** Expired items (any status) in expiry order, at most `max` looked at. */
  expire(max: number, now: number): ModelResult {
    const due = [...this.items.values()]
      .filter((i) => expired(i.expiresAt, now))
      .sort((a, b) => a.expiresAt - b.expiresAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, max);
    for (const i of due) this.put(i.key, JournalModel.whenExpired(i, now));
    return ok({ op: 'expire', expired: due.length });
  }

  requeue(key: string, now: number): ModelResult {
    const f = this.flagged.get(key);
    if (f === undefined) return refused('NOT_FOUND');
    if (this.items.has(key)) return refused('CONFLICT');
    this.put(key, { ...f.item, status: 'waiting', startedAt: 0, lease: 0, timeouts: 0, failures: 0, next: null, processAt: now });
    this.flagged.delete(key);
    return ok({ op: 'requeue' });
  }

  forget(key: string): ModelResult {
    if (!this.flagged.delete(key)) return refused('NOT_FOUND');
    return ok({ op: 'forget' });
  }
}
