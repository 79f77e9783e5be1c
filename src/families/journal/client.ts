// The journal in the client library: typed calls over VeraClient's family ops,
// and a worker helper that listens (long-polling claims), keeps its leases alive
// while the handler runs, and finishes each item with done or release.
import type { VeraClient } from '../../client/client.js';
import { inputCaller, type InputCall } from '../../client/typed-ops.js';
import { VeraError } from '../../protocol/index.js';
import { JOURNAL_SCHEMAS, type Claim, type ClaimedItem, type FlaggedItem, type FlagEvent, type FlagPage, type JobInfo, type JobPage, type JournalInfo, type KeptResult, type LifecycleEventInfo, type LifecyclePage, type LifecycleType, type ScheduleInfo, type SettingsRequest } from './wire.js';
import { JournalWorker, type WorkerCalls } from './client-worker.js';

// The answers of the journal's ops: the server's handlers give them typed by the same schemas (wire.ts).
export type { Claim, ClaimedItem, FlaggedItem, FlagEvent, FlagPage, JobInfo, JobPage, JournalInfo, KeptResult, LifecycleEventInfo, LifecyclePage, LifecycleType, ScheduleInfo } from './wire.js';

/** The ops whose fields a caller writes in another shape than their parse gives (data not yet encoded, policies' defaults left out). */
interface Inputs {
  readonly create: { readonly name: string } & JournalSettingsInput;
  readonly configure: { readonly name: string } & JournalSettingsInput;
  readonly add: { readonly name: string; readonly items: readonly NewItem[] };
  readonly schedule: { readonly name: string; readonly schedule: string } & ScheduleInput;
}

/** How a failed processing is retried (docs/journal.md, "Retries"); defaults: exponential, 1 s to 1 h, no jitter. */
export interface RetryPolicy {
  /** Processings in all; the failure that ends the last one flags the item. */
  readonly attempts: number;
  readonly backoff?: 'fixed' | 'exponential';
  readonly delayMs?: number;
  readonly maxDelayMs?: number;
  /** Up to this percent of each delay is taken off (from a hash of the key and attempt). */
  readonly jitterPct?: number;
}

/** A journal's settings as a caller writes them: the wire's, with a retry policy whose fields may be left to their defaults. */
export interface JournalSettingsInput extends Omit<SettingsRequest, 'retry'> {
  /** Command version 9. null clears it (configure). */
  readonly retry?: RetryPolicy | null;
}

/** A schedule (repeatable jobs): every `everyMs` (on multiples of it) or a 5-field cron in `tz` (default UTC). */
export interface ScheduleInput {
  readonly everyMs?: number;
  readonly cron?: string;
  readonly tz?: string;
  /** After ticks were missed (no leader, or a long stall): `one` job for them all (default), or `none`. */
  readonly catchUp?: 'one' | 'none';
  /** Each job's data (default null; up to 64 KiB as MessagePack), priority (default the journal's) and retry policy. */
  readonly data?: unknown;
  readonly priority?: number;
  readonly retry?: RetryPolicy;
}

export interface NewItem {
  readonly key: string;
  readonly data: unknown;
  readonly priority?: number;
  /** When it may be processed (ms since the epoch); default now. */
  readonly processAt?: number;
  /** When it is no longer wanted (ms since the epoch); default the journal's expiresInMs from now, or never. */
  readonly expiresAt?: number;
  /** Its own retry policy, over the journal's (command version 9). */
  readonly retry?: RetryPolicy;
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
  /**
   * Items claimed ahead of free handlers, at most; default 1000 (what one claim
   * takes). Fewer are: only as many as should start within a third of the journal's
   * timeout and within a second, judged by how long handlers have taken (none before
   * the first has finished). 0 turns it off.
   */
  readonly prefetch?: number;
  /** How long one claim waits for work before asking again (ms). Default 10 s. */
  readonly waitMs?: number;
  /**
   * The delay before a failed item is offered again, from the item's failures before this one
   * (its `failures`; its `timeouts` from a server that does not count failures). Default 1 s
   * doubling to 1 min: 1 s, 2 s, 4 s, ... 60 s.
   */
  readonly retryDelayMs?: (failures: number) => number;
  /**
   * The delay is chosen by the server when the journal or the item has a retry policy
   * (retryDelayMs is then not used). A handler that throws an error with `unrecoverable: true`
   * (see UnrecoverableError) has its item flagged at once; the error's message is kept as the
   * item's last error. What the handler returns (other than undefined) is kept as its result.
   */
  /** Called when the handler throws (the item is released for a retry). */
  readonly onError?: (err: unknown, item: ClaimedItem) => void;
}

export interface Worker {
  /**
   * Stops claiming, hands back claimed items not started (as no failure), and resolves
   * once the items in hand are finished and acknowledged. A claim waiting on the server
   * for work is called off, so an idle worker stops at once.
   * Rejects when the worker had stopped by itself (client closed, journal dropped).
   */
  stop(): Promise<void>;
}

export class JournalClient {
  private readonly call: InputCall<typeof JOURNAL_SCHEMAS, Inputs>;

  constructor(private readonly client: VeraClient) {
    this.call = inputCaller<typeof JOURNAL_SCHEMAS, Inputs>(client, JOURNAL_SCHEMAS);
  }

  /** The client is closed or its session expired: asking again would fail at once, forever. */
  private get closed(): boolean {
    return this.client.state === 'closed' || this.client.state === 'expired';
  }

  async create(name: string, settings: JournalSettingsInput = {}): Promise<void> {
    await this.call('create', { name, ...settings });
  }

  async configure(name: string, settings: JournalSettingsInput): Promise<void> {
    await this.call('configure', { name, ...settings });
  }

  async drop(name: string): Promise<void> {
    await this.call('drop', { name });
  }

  async list(): Promise<JournalInfo[]> {
    return (await this.call('list', {})).journals;
  }

  async show(name: string): Promise<JournalInfo> {
    return this.call('show', { name });
  }

  async add(name: string, items: readonly NewItem[]): Promise<{ inserted: number; merged: number; deferred: number }> {
    return this.call('add', { name, items });
  }

  /** Up to `max` due items, waiting up to `waitMs` for one. */
  async claim(name: string, options: { max?: number; waitMs?: number } = {}): Promise<Claim> {
    return this.call('claim', { name, ...options });
  }

  async extend(name: string, key: string, lease: number): Promise<void> {
    await this.call('extend', { name, key, lease });
  }

  /** `result` (any JSON value up to 64 KiB as MessagePack): kept for the journal's keepResultsMs, read with `result()`. */
  async done(name: string, key: string, lease: number, result?: unknown): Promise<void> {
    await this.call('done', { name, key, lease, ...(result === undefined ? {} : { result }) });
  }

  /**
   * Removes one job: a Waiting one is deleted (`removed`); a Processing one is cancelled
   * (`cancelled`): its holder's next extend, progress, done or release is refused with
   * CONFLICT, reason `cancelled`, and the item goes when its claim ends.
   */
  async remove(name: string, key: string): Promise<{ status: 'removed' | 'cancelled' }> {
    return this.call('remove', { name, key });
  }

  /** One job by key: Waiting, Processing (or cancelled), else its flagged copy; NOT_FOUND when none. */
  async get(name: string, key: string): Promise<JobInfo> {
    return this.call('get', { name, key });
  }

  /** A page of the jobs of one status (default up to 100, at most 1000); pass `after: page.next` for the next. */
  async items(name: string, status: 'waiting' | 'processing' | 'flagged', options: { after?: string; limit?: number } = {}): Promise<JobPage> {
    return this.call('items', { name, status, ...options });
  }

  /** The result a done left for `key`, while kept; NOT_FOUND otherwise. */
  async result(name: string, key: string): Promise<KeptResult> {
    return this.call('result', { name, key });
  }

  /** Claims take nothing until resume (waiting claims wait on); adds go on. */
  async pause(name: string): Promise<void> {
    await this.call('pause', { name });
  }

  async resume(name: string): Promise<void> {
    await this.call('resume', { name });
  }

  /** Deletes every Waiting job (Processing and flagged ones stay); how many went. */
  async drain(name: string): Promise<{ removed: number }> {
    return this.call('drain', { name });
  }

  /**
   * Adds (or replaces) schedule `id`: at each tick the leader adds one job keyed `id@ISO-date`
   * of the tick, exactly once across leader changes. Answers whether it replaced one, and the next tick.
   */
  async schedule(name: string, id: string, schedule: ScheduleInput): Promise<{ replaced: boolean; nextTick: number }> {
    return this.call('schedule', { name, schedule: id, ...schedule });
  }

  async schedules(name: string): Promise<ScheduleInfo[]> {
    return (await this.call('schedules', { name })).schedules;
  }

  /** Removes a schedule; jobs it made stay. */
  async unschedule(name: string, id: string): Promise<void> {
    await this.call('unschedule', { name, schedule: id });
  }

  /** The holder's progress report (any JSON value up to 4 KiB), shown by get(); it also extends the claim. */
  async progress(name: string, key: string, lease: number, progress: unknown): Promise<void> {
    await this.call('progress', { name, key, lease, progress });
  }

  /**
   * Done, and in the same entry a claim of up to `max` due items (a worker's next job,
   * one round trip and one Raft entry instead of two). It never waits: with nothing
   * due the claim is empty.
   */
  async doneAndClaim(name: string, key: string, lease: number, max = 1): Promise<Claim> {
    const r = await this.call('done', { name, key, lease, claim: max });
    // With a claim the server always answers with one (lease 0 and no items: nothing was due).
    return { lease: r.lease ?? 0, items: r.items ?? [] };
  }

  /**
   * Many items done in one entry, each under its own lease; with `claim`, the same
   * entry claims up to that many due items (never waiting). A stale lease does not
   * fail the others: its key comes back in `lost`, unchanged.
   */
  async doneMany(name: string, items: ReadonlyArray<{ key: string; lease: number; result?: unknown }>, claim?: number): Promise<{ done: number; lost: string[]; next: Claim | null }> {
    const r = await this.call('doneMany', { name, items, ...(claim === undefined ? {} : { claim }) });
    return { done: r.done, lost: r.lost, next: r.lease === undefined ? null : { lease: r.lease, items: r.items ?? [] } };
  }

  /**
   * doneMany without a claim, which the server may hold up to `holdMs` (1-1000) while a
   * claim of this journal waits there, to finish these items in the entry of that claim
   * once work falls due: a worker short of work then costs one entry per item instead
   * of two. Answered as doneMany is, once the items are done.
   */
  async doneManyHeld(name: string, items: ReadonlyArray<{ key: string; lease: number }>, holdMs: number): Promise<{ done: number; lost: string[] }> {
    const r = await this.call('doneMany', { name, items, holdMs });
    return { done: r.done, lost: r.lost };
  }

  /**
   * Gives a claimed item back, Waiting again (due at `processAt`, default now). It counts as a
   * failed processing (raising its counters; past the journal's maximum it is flagged, and
   * `flagged` says so) unless `failure: false` says the work was not tried (e.g. a worker
   * shutting down).
   */
  async release(name: string, key: string, lease: number, processAt?: number, options: { failure?: boolean; error?: string; unrecoverable?: boolean } = {}): Promise<{ flagged: boolean }> {
    // `error` (kept as the item's last error, cut to 1 KiB) and `unrecoverable` (flagged at once): command version 9.
    const plain = { name, key, lease, ...(processAt === undefined ? {} : { processAt }) };
    const fields = { ...plain, ...(options.error === undefined ? {} : { error: options.error }), ...(options.unrecoverable === true ? { unrecoverable: true as const } : {}) };
    if (options.failure !== false) {
      try {
        return { flagged: (await this.call('release', fields)).flagged === true };
      } catch (err) {
        // A server before command version 9 knows neither field: the failure still counts there.
        const extras = options.error !== undefined || options.unrecoverable === true;
        if (!extras || !(err instanceof VeraError && err.code === 'BAD_REQUEST' && /error|unrecoverable/.test(err.message))) throw err;
        return { flagged: (await this.call('release', plain)).flagged === true };
      }
    }
    try {
      return { flagged: (await this.call('release', { ...fields, failure: false })).flagged === true };
    } catch (err) {
      // A server before command version 9 knows no such field, and counts no release as a failure anyway.
      if (err instanceof VeraError && err.code === 'BAD_REQUEST' && /failure/.test(err.message)) return { flagged: (await this.call('release', fields)).flagged === true };
      throw err;
    }
  }

  /** Calls off this connection's claims of the journal that wait on the server: each answers at once with no items. */
  async cancelWait(name: string): Promise<number> {
    return (await this.call('cancelWait', { name })).cancelled;
  }

  async flagged(name: string, limit?: number): Promise<FlaggedItem[]> {
    return (await this.call('flagged', { name, ...(limit === undefined ? {} : { limit }) })).items;
  }

  /** Flag events after `after` (default: from now), waiting up to `waitMs` for one. */
  async flags(name: string, options: { after?: number; waitMs?: number; limit?: number } = {}): Promise<FlagPage> {
    return this.call('flags', { name, ...options });
  }

  /**
   * Calls `onFlag` once for each item flagged in the journal from now (or after
   * `options.after`), in order, across reconnects: the cursor is the flagging
   * entry's index, which every member agrees on. `stop()` ends it at once (a
   * request still waiting is left to run out; its answer is ignored); a dropped
   * journal ends it with NOT_FOUND in `done`.
   */
  watchFlags(name: string, onFlag: (event: FlagEvent) => void | Promise<void>, options: FlagWatchOptions = {}): { stop(): void; readonly done: Promise<void> } {
    return this.watchFeed((after, waitMs) => this.flags(name, { ...(after === undefined ? {} : { after }), waitMs }), onFlag, options);
  }

  /**
   * Lifecycle events after `after` (default: from now), waiting up to `waitMs` for one;
   * `key` and `types` keep only those (command version 9). Same cursor and `missed` as flags().
   */
  async events(name: string, options: { after?: number; waitMs?: number; limit?: number; key?: string; types?: readonly LifecycleType[] } = {}): Promise<LifecyclePage> {
    return this.call('events', { name, ...options });
  }

  /**
   * Calls `onEvent` once for each lifecycle event of the journal from now (or after
   * `options.after`), in order, across reconnects, as watchFlags does for flags. With `key`,
   * one job's: a producer can wait for its job's `completed` and then read its result.
   */
  watchEvents(
    name: string,
    onEvent: (event: LifecycleEventInfo) => void | Promise<void>,
    options: FlagWatchOptions & { readonly key?: string; readonly types?: readonly LifecycleType[] } = {},
  ): { stop(): void; readonly done: Promise<void> } {
    const filter = { ...(options.key === undefined ? {} : { key: options.key }), ...(options.types === undefined ? {} : { types: options.types }) };
    return this.watchFeed((after, waitMs) => this.events(name, { ...(after === undefined ? {} : { after }), waitMs, ...filter }), onEvent, options);
  }

  private watchFeed<E>(
    page: (after: number | undefined, waitMs: number) => Promise<{ events: readonly E[]; next: number; missed: boolean }>,
    onEvent: (event: E) => void | Promise<void>,
    options: FlagWatchOptions,
  ): { stop(): void; readonly done: Promise<void> } {
    let stopping = false;
    let stopped!: () => void;
    const stopSignal = new Promise<void>((resolve) => (stopped = resolve));
    const waitMs = options.waitMs ?? 30_000;
    const loop = (async () => {
      let after = options.after;
      while (!stopping) {
        let got: { events: readonly E[]; next: number; missed: boolean };
        try {
          got = await page(after, waitMs);
        } catch (err) {
          if (stopping || this.closed || (err instanceof VeraError && (err.code === 'NOT_FOUND' || err.code === 'BAD_REQUEST'))) throw err;
          continue; // the client reconnects; ask again from the same cursor
        }
        if (got.missed) await options.onMissed?.();
        for (const event of got.events) if (!stopping) await onEvent(event);
        after = got.next;
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
    return this.call('limits', set);
  }

  async requeue(name: string, key: string): Promise<void> {
    await this.call('requeue', { name, key });
  }

  async forget(name: string, key: string): Promise<void> {
    await this.call('forget', { name, key });
  }

  /**
   * Runs `handler` on the journal's items as they become due, `concurrency` at a
   * time (worker.ts): completions are acknowledged together in one entry that also
   * claims the next items, an idle worker waits on the server for due work, and
   * each held item's lease is extended while its handler runs. A handler that
   * throws has its item released for a retry later (with backoff). A lost lease
   * means the item timed out and belongs to someone else now: its result is
   * dropped. The worker stops by itself when the client closes or the journal is
   * dropped; `stop()` then rejects with why.
   */
  process(name: string, handler: (item: ClaimedItem) => Promise<unknown>, options: ProcessOptions = {}): Worker {
    const calls: WorkerCalls = {
      claim: (max, waitMs) => this.claim(name, { max, waitMs }),
      doneMany: (items, claim) => this.doneMany(name, items, claim),
      doneManyHeld: (items, holdMs) => this.doneManyHeld(name, items, holdMs),
      extend: (key, lease) => this.extend(name, key, lease),
      release: async (key, lease, processAt, failure, why) => void (await this.release(name, key, lease, processAt, { failure, ...why })),
      cancelWait: () => this.cancelWait(name),
      get closed() {
        return closed();
      },
    };
    const closed = (): boolean => this.closed;
    const worker = this.show(name).then((info) => {
      const w = new JournalWorker(calls, {
        concurrency: options.concurrency ?? 1,
        prefetch: options.prefetch ?? DEFAULT_PREFETCH,
        waitMs: options.waitMs ?? 10_000,
        timeoutMs: info.settings.timeoutMs,
        serverRetries: info.settings.retry !== undefined,
        retryDelayMs: options.retryDelayMs ?? ((n: number) => Math.min(60_000, 1000 * 2 ** n)),
        ...(options.onError === undefined ? {} : { onError: options.onError }),
      }, handler);
      w.start();
      return w;
    });
    // A journal that is not there (or a client already closed) ends the worker before it starts:
    // stop() rejects with why, and nothing is left unhandled meanwhile.
    worker.catch(() => undefined);
    return { stop: async () => (await worker).stop() };
  }
}

/** Items a worker claims ahead of its free handlers, at most (fewer when handlers are slow): as many as one claim takes. */
const DEFAULT_PREFETCH = 1000;

/** Thrown by a handler, a failure no retry can mend: the worker helper has the item flagged at once. */
export class UnrecoverableError extends Error {
  override readonly name = 'UnrecoverableError';
  readonly unrecoverable = true;
}
