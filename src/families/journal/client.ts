// The journal in the client library: typed calls over VeraClient's family ops,
// and a worker helper that listens (long-polling claims), keeps its leases alive
// while the handler runs, and finishes each item with done or release.
import type { VeraClient } from '../../client/client.js';
import { familyCaller, type FamilyCall } from '../../client/family-caller.js';
import { VeraError } from '../../protocol/index.js';
import { JOURNAL_OPS } from './wire.js';

export interface JournalSettingsInput {
  readonly timeoutMs?: number;
  readonly maxTimeouts?: number;
  readonly priority?: number;
  readonly expiresInMs?: number;
  readonly maxItems?: number;
}

export interface JournalInfo {
  readonly name: string;
  readonly settings: Required<JournalSettingsInput>;
  readonly counts: { readonly waiting: number; readonly processing: number; readonly flagged: number; readonly byPriority: Readonly<Record<string, number>> };
}

export interface NewItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority?: number;
  /** When it may be processed (ms since the epoch); default now. */
  readonly processAt?: number;
  /** When it is no longer wanted (ms since the epoch); default the journal's expiresInMs from now, or never. */
  readonly expiresAt?: number;
}

export interface ClaimedItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority: number;
  readonly processAt: number;
  readonly insertedAt: number;
  readonly timeouts: number;
}

export interface Claim {
  /** Present to extend, done and release; stale once the claim timed out or ended. */
  readonly lease: number;
  readonly items: readonly ClaimedItem[];
}

export interface FlaggedItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority: number;
  readonly insertedAt: number;
  readonly timeouts: number;
  readonly flaggedAt: number;
}

/** One item flagged: `index` is the entry that flagged it, and the cursor to watch on from. */
export interface FlagEvent {
  readonly index: number;
  readonly key: string;
}

export interface FlagPage {
  readonly events: readonly FlagEvent[];
  /** Ask from here next time. */
  readonly next: number;
  /** Flags after the cursor may have been missed (the member restarted or kept no older ones): re-read `flagged()`. */
  readonly missed: boolean;
}

export interface FlagWatchOptions {
  /** The cursor to start after (a `next` or an event's `index`); default: flags from now on. */
  readonly after?: number;
  /** Called when flags may have been missed, before watching on; re-read `flagged()` here. */
  readonly onMissed?: () => void | Promise<void>;
  /** How long each request waits for a flag (ms). Default 30 s. */
  readonly waitMs?: number;
}

export interface ProcessOptions {
  /** Items handled at once. Default 1. */
  readonly concurrency?: number;
  /** How long one claim waits for work before asking again (ms). Default 10 s. */
  readonly waitMs?: number;
  /** The delay before a failed item is offered again: attempt -> ms. Default 1 s doubling to 1 min. */
  readonly retryDelayMs?: (timeouts: number) => number;
  /** Called when the handler throws (the item is released for a retry). */
  readonly onError?: (err: unknown, item: ClaimedItem) => void;
}

export interface Worker {
  /** Stops claiming; resolves once the items in hand are finished. */
  stop(): Promise<void>;
}

export class JournalClient {
  private readonly call: FamilyCall;

  constructor(private readonly client: VeraClient) {
    this.call = familyCaller(client, JOURNAL_OPS);
  }

  /** The client is closed or its session expired: asking again would fail at once, forever. */
  private get closed(): boolean {
    return this.client.state === 'closed' || this.client.state === 'expired';
  }

  async create(name: string, settings: JournalSettingsInput = {}): Promise<void> {
    await this.call('journal.create', { name, ...settings });
  }

  async configure(name: string, settings: JournalSettingsInput): Promise<void> {
    await this.call('journal.configure', { name, ...settings });
  }

  async drop(name: string): Promise<void> {
    await this.call('journal.drop', { name });
  }

  async list(): Promise<JournalInfo[]> {
    return (await this.call('journal.list', {})).journals as JournalInfo[];
  }

  async show(name: string): Promise<JournalInfo> {
    return (await this.call('journal.show', { name })) as unknown as JournalInfo;
  }

  async add(name: string, items: readonly NewItem[]): Promise<{ inserted: number; merged: number; deferred: number }> {
    return (await this.call('journal.add', { name, items })) as { inserted: number; merged: number; deferred: number };
  }

  /** Up to `max` due items, waiting up to `waitMs` for one. */
  async claim(name: string, options: { max?: number; waitMs?: number } = {}): Promise<Claim> {
    return (await this.call('journal.claim', { name, ...options })) as unknown as Claim;
  }

  async extend(name: string, key: string, lease: number): Promise<void> {
    await this.call('journal.extend', { name, key, lease });
  }

  async done(name: string, key: string, lease: number): Promise<void> {
    await this.call('journal.done', { name, key, lease });
  }

  /**
   * Done, and in the same entry a claim of up to `max` due items (a worker's next job,
   * one round trip and one Raft entry instead of two). It never waits: with nothing
   * due the claim is empty.
   */
  async doneAndClaim(name: string, key: string, lease: number, max = 1): Promise<Claim> {
    return (await this.call('journal.done', { name, key, lease, claim: max })) as unknown as Claim;
  }

  async release(name: string, key: string, lease: number, processAt?: number): Promise<void> {
    await this.call('journal.release', { name, key, lease, ...(processAt === undefined ? {} : { processAt }) });
  }

  async flagged(name: string, limit?: number): Promise<FlaggedItem[]> {
    return (await this.call('journal.flagged', { name, ...(limit === undefined ? {} : { limit }) })).items as FlaggedItem[];
  }

  /** Flag events after `after` (default: from now), waiting up to `waitMs` for one. */
  async flags(name: string, options: { after?: number; waitMs?: number; limit?: number } = {}): Promise<FlagPage> {
    return (await this.call('journal.flags', { name, ...options })) as unknown as FlagPage;
  }

  /**
   * Calls `onFlag` once for each item flagged in the journal from now (or after
   * `options.after`), in order, across reconnects: the cursor is the flagging
   * entry's index, which every member agrees on. `stop()` ends it at once (a
   * request still waiting is left to run out; its answer is ignored); a dropped
   * journal ends it with NOT_FOUND in `done`.
   */
  watchFlags(name: string, onFlag: (event: FlagEvent) => void | Promise<void>, options: FlagWatchOptions = {}): { stop(): void; readonly done: Promise<void> } {
    let stopping = false;
    let stopped!: () => void;
    const stopSignal = new Promise<void>((resolve) => (stopped = resolve));
    const waitMs = options.waitMs ?? 30_000;
    const loop = (async () => {
      let after = options.after;
      while (!stopping) {
        let page: FlagPage;
        try {
          page = await this.flags(name, { ...(after === undefined ? {} : { after }), waitMs });
        } catch (err) {
          if (stopping || this.closed || (err instanceof VeraError && (err.code === 'NOT_FOUND' || err.code === 'BAD_REQUEST'))) throw err;
          continue; // the client reconnects; ask again from the same cursor
        }
        if (page.missed) await options.onMissed?.();
        for (const event of page.events) if (!stopping) await onFlag(event);
        after = page.next;
      }
    })().catch((err: unknown) => {
      if (!stopping) throw err;
    });
    return {
      stop: () => {
        stopping = true;
        stopped();
      },
      done: Promise.race([loop, stopSignal]),
    };
  }

  /** The cluster-wide journal limits (and how many journals there are); sets `maxJournals` when given. */
  async limits(set: { maxJournals?: number } = {}): Promise<{ maxJournals: number; journals: number }> {
    return (await this.call('journal.limits', set)) as { maxJournals: number; journals: number };
  }

  async requeue(name: string, key: string): Promise<void> {
    await this.call('journal.requeue', { name, key });
  }

  async forget(name: string, key: string): Promise<void> {
    await this.call('journal.forget', { name, key });
  }

  /**
   * Runs `handler` on the journal's items as they become due, `concurrency` at a
   * time: each claim's lease is extended while the handler runs (every third of
   * the journal's timeout), done when it resolves, released for a later retry
   * (with backoff) when it throws. A lost lease (CONFLICT) means the item timed
   * out and belongs to someone else now: the result is dropped.
   */
  process(name: string, handler: (item: ClaimedItem) => Promise<void>, options: ProcessOptions = {}): Worker {
    const concurrency = options.concurrency ?? 1;
    const waitMs = options.waitMs ?? 10_000;
    const retryDelayMs = options.retryDelayMs ?? ((n: number) => Math.min(60_000, 1000 * 2 ** n));
    let stopping = false;
    const loops: Array<Promise<void>> = [];
    const runOne = async (timeoutMs: number): Promise<void> => {
      // The next job, when the last done claimed it in the same entry.
      let next: Claim | null = null;
      while (!stopping) {
        let claim: Claim;
        if (next !== null && next.items.length > 0) {
          claim = next;
        } else {
          try {
            claim = await this.claim(name, { max: 1, waitMs });
          } catch (err) {
            if (stopping) return;
            if (this.closed || (err instanceof VeraError && err.code === 'NOT_FOUND')) throw err;
            continue; // the client retries its connection; ask again
          }
        }
        next = null;
        for (const item of claim.items) {
          const keepAlive = setInterval(() => void this.extend(name, item.key, claim.lease).catch(() => undefined), Math.max(50, timeoutMs / 3));
          try {
            await handler(item);
            clearInterval(keepAlive);
            if (stopping) await this.done(name, item.key, claim.lease).catch(ignoreLostLease);
            else next = await this.doneAndClaim(name, item.key, claim.lease).catch((err: unknown) => (ignoreLostLease(err), null));
          } catch (err) {
            clearInterval(keepAlive);
            options.onError?.(err, item);
            await this.release(name, item.key, claim.lease, Date.now() + retryDelayMs(item.timeouts)).catch(ignoreLostLease);
          }
        }
      }
      // Stopped with a job already claimed for it: hand it back rather than let it time out.
      const held: Claim | null = next;
      if (held !== null) for (const item of held.items) await this.release(name, item.key, held.lease).catch(() => undefined);
    };
    const started = this.show(name).then((info) => {
      for (let i = 0; i < concurrency; i++) loops.push(runOne(info.settings.timeoutMs));
    });
    return {
      stop: async () => {
        stopping = true;
        await started;
        await Promise.allSettled(loops);
      },
    };
  }
}

function ignoreLostLease(err: unknown): void {
  if (err instanceof VeraError && err.code === 'CONFLICT') return;
  throw err;
}
