// Acknowledgements that wait a little on the member serving them, to ride in
// the entry of the next claim of their journal. A worker short of work sends
// its completions (doneMany with holdMs) while its next claim waits on the
// server; held here, they go out in that claim's entry when an item falls due
// (one entry per item instead of a claim and a done), or alone once the
// shortest hold among them ends. Only requests that asked are held, and only
// while a claim of that journal waits on this member; the reply is the same
// as without holding, sent once the entry that carried them is applied.
import { MAX_CLAIM_ITEMS } from './wire.js';

/** What one held doneMany request gets back. */
export interface AckResult {
  readonly done: number;
  readonly lost: readonly string[];
}

export interface HeldAck {
  readonly items: ReadonlyArray<readonly [string, number]>;
  resolve(result: AckResult): void;
  reject(err: unknown): void;
}

interface Held extends HeldAck {
  readonly keys: ReadonlySet<string>;
  readonly until: number;
}

/** Proposes held requests alone (a doneMany of their items), answering each. */
export type AloneSender = (name: string, requests: readonly HeldAck[]) => void;

/** Items held per journal, at most: past it, acknowledgements go at once. */
export const MAX_HELD_ITEMS = 4 * MAX_CLAIM_ITEMS;

export class HeldAcks {
  private readonly byJournal = new Map<string, Held[]>();
  private readonly itemCounts = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  /** Set at close: the error every held request and every later hold is refused with. */
  private closedWith: unknown = null;

  constructor(private readonly sendAlone: AloneSender) {}

  /** Requests held, and the timers held for them: for tests of close. */
  holding(): { readonly requests: number; readonly timers: number } {
    let requests = 0;
    for (const queue of this.byJournal.values()) requests += queue.length;
    return { requests, timers: this.timers.size };
  }

  /**
   * The member is closing: every held request is refused with `err` (nothing of it was
   * proposed, so its sender may send it again elsewhere), the timers go, and no request is held
   * after.
   */
  close(err: unknown): void {
    this.closedWith ??= err;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    const queues = [...this.byJournal.values()];
    this.byJournal.clear();
    this.itemCounts.clear();
    for (const queue of queues) for (const h of queue) h.reject(this.closedWith);
  }

  /** Whether `count` more items of `name` may be held. */
  hasRoom(name: string, count: number): boolean {
    return (this.itemCounts.get(name) ?? 0) + count <= MAX_HELD_ITEMS;
  }

  /** Holds `items` for `name` up to `holdMs`; resolves with their part of the result of the entry that carries them. */
  hold(name: string, items: ReadonlyArray<readonly [string, number]>, holdMs: number): Promise<AckResult> {
    if (this.closedWith !== null) return Promise.reject(this.closedWith);
    return new Promise((resolve, reject) => {
      const queue = this.byJournal.get(name) ?? [];
      this.byJournal.set(name, queue);
      queue.push({ items, keys: new Set(items.map(([key]) => key)), until: performance.now() + holdMs, resolve, reject });
      this.itemCounts.set(name, (this.itemCounts.get(name) ?? 0) + items.length);
      this.armTimer(name);
    });
  }

  /**
   * The held requests of `name` that fit one entry beside a claim, oldest first, no key
   * twice (a result is split by key), and no more items than one doneMany carries; the
   * rest stay held.
   */
  take(name: string): HeldAck[] {
    const queue = this.byJournal.get(name);
    if (queue === undefined) return [];
    const taken: Held[] = [];
    const kept: Held[] = [];
    const keys = new Set<string>();
    let count = 0;
    for (const h of queue) {
      if (count + h.items.length > MAX_CLAIM_ITEMS || sharesKey(h.keys, keys)) {
        kept.push(h);
        continue;
      }
      taken.push(h);
      count += h.items.length;
      for (const k of h.keys) keys.add(k);
    }
    if (kept.length === 0) {
      this.byJournal.delete(name);
      this.itemCounts.delete(name);
    } else {
      this.byJournal.set(name, kept);
      this.itemCounts.set(name, this.itemCounts.get(name)! - count);
    }
    this.armTimer(name);
    return taken;
  }

  private flush(name: string): void {
    for (;;) {
      const taken = this.take(name);
      if (taken.length === 0) return;
      this.sendAlone(name, taken);
    }
  }

  /** One timer per journal, at the earliest end of a hold there. */
  private armTimer(name: string): void {
    const old = this.timers.get(name);
    if (old !== undefined) clearTimeout(old);
    this.timers.delete(name);
    const queue = this.byJournal.get(name);
    if (queue === undefined) return;
    let until = Infinity;
    for (const h of queue) until = Math.min(until, h.until);
    this.timers.set(
      name,
      setTimeout(() => {
        this.timers.delete(name);
        this.flush(name);
      }, Math.max(0, until - performance.now())).unref(),
    );
  }
}

function sharesKey(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  for (const k of a) if (b.has(k)) return true;
  return false;
}

/**
 * Each request's part of a combined result: the entries of `lost` for its keys (a key
 * sent twice in one request may be done once and lost once), and the rest done. A
 * combined entry never holds one key for two requests (take), so every lost entry is
 * one request's.
 */
export function splitResult(requests: readonly HeldAck[], lost: readonly string[]): AckResult[] {
  const owner = new Map<string, number>();
  requests.forEach((r, i) => {
    for (const [key] of r.items) owner.set(key, i);
  });
  const parts = requests.map(() => [] as string[]);
  for (const key of lost) {
    const i = owner.get(key);
    if (i !== undefined) parts[i]!.push(key);
  }
  return requests.map((r, i) => ({ done: r.items.length - parts[i]!.length, lost: parts[i]! }));
}
