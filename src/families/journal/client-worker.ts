// The journal's worker helper (JournalClient.process): runs a handler on items
// as they become due, `concurrency` at a time, and talks to the server through
// two channels so that neither waits on the other:
// - acks: the handlers' completions go together in one doneMany entry, sent
//   whenever none is in flight (so the first goes at once and the rest gather
//   behind it, as a group commit does), and the same entry claims the next items;
// - polls: when the worker has free handlers and the acks do not claim for it
//   (one is in flight, or the journal ran short), one claim that waits on the
//   server until work is due (no polling, no herd). While the journal runs short
//   (but is not idle), up to three: some wait while another's entry is in flight,
//   so a job falling due within a Raft round of the one before is claimed at its
//   date, not after that claim's reply and a second round.
// It claims ahead of its free handlers (prefetch) only as many items as it
// expects to start within a third of the journal's timeout and within a second,
// judged by how long handlers have taken, so a slow handler never leaves claimed
// items to time out in the buffer, nor a worker sits on work others could do.
// Every held item's lease is extended every third of the timeout while its
// handler runs.
import { VeraError } from '../../protocol/index.js';
import type { Claim, ClaimedItem } from './client.js';

/** The calls the worker needs (JournalClient's). */
export interface WorkerCalls {
  claim(max: number, waitMs: number): Promise<Claim>;
  doneMany(items: ReadonlyArray<{ key: string; lease: number; result?: unknown }>, claim: number | undefined): Promise<{ lost: readonly string[]; next: Claim | null }>;
  /** Completions the server may hold up to `holdMs` to finish them in the entry of the waiting claim. */
  doneManyHeld(items: ReadonlyArray<{ key: string; lease: number }>, holdMs: number): Promise<{ lost: readonly string[] }>;
  extend(key: string, lease: number): Promise<void>;
  /** `failure: false`: handing back an item not started (stopping), which is no failed processing. */
  release(key: string, lease: number, processAt: number | undefined, failure: boolean, why?: { error?: string; unrecoverable?: boolean }): Promise<void>;
  /** Calls off this worker's claim that waits on the server (it answers at once, empty); how many it called off. */
  cancelWait(): Promise<number>;
  /** The client is closed or its session expired: asking again would fail forever. */
  readonly closed: boolean;
}

export interface WorkerOptions {
  readonly concurrency: number;
  /** The most items claimed ahead of free handlers. */
  readonly prefetch: number;
  readonly waitMs: number;
  readonly timeoutMs: number;
  /** The journal has a retry policy: the server chooses when a failed item runs again. */
  readonly serverRetries?: boolean;
  /** From the item's failures before this one. */
  readonly retryDelayMs: (failures: number) => number;
  readonly onError?: (err: unknown, item: ClaimedItem) => void;
}

/** Completions one doneMany carries, at most (the protocol's bound). */
const ACK_BATCH = 1000;
/** Claims one request asks for, at most. */
const CLAIM_BATCH = 1000;
/** A worker claims ahead only what its handlers start within this long. */
const PREFETCH_HORIZON_MS = 1000;
/** Handlers that finish before a worker claims ahead: its estimate of their pace needs a few, failures among them. */
const PREFETCH_SAMPLES = 4;
/**
 * How long the server may hold completions sent while the worker's claim waits there, for
 * the claim's entry to carry them once work falls due: short, since a held completion is
 * not yet done (a crash meanwhile leaves the item to time out and run again).
 */
const ACK_HOLD_MS = 20;
/**
 * Polls out at once while the journal runs short (not idle): while one's entry is in flight
 * the others wait on the server for the next dates. Measured on a loaded machine
 * (bench/results/2026-11-28c-journal-lateness), jobs due 3 ms apart were claimed late (no
 * poll waiting when they fell due) 55-75% of the time with one poll, about 50% with two, about 33% with three.
 */
const MAX_POLLS_SHORT = 3;
/** Attempts to call off a waiting claim when stopping, this far apart: about a second in all. */
const CALL_OFF_TRIES = 20;
const CALL_OFF_RETRY_MS = 50;

interface Held {
  readonly item: ClaimedItem;
  readonly lease: number;
  /** When the lease began, by this process's clock: when the claim was sent (no later than the server's start). */
  readonly renewedAt: number;
}

export class JournalWorker {
  private readonly buffer: Held[] = [];
  private running = 0;
  private readonly acks: Array<{ key: string; lease: number; result?: unknown }> = [];
  private acking = false;
  /** Items asked for by the request in flight (an ack that claims, or a poll). */
  private asked = 0;
  /** Claims out waiting for work (polls): one, or up to MAX_POLLS_SHORT while the journal runs short. */
  private polls = 0;
  /** The last claim came back with fewer items than asked: nothing more is due now. */
  private starved = false;
  /** It came back with none: the journal is idle, and one poll is enough (an idle worker costs one entry per waitMs). */
  private idleJournal = false;
  private stopping = false;
  /** While stopping, completions that cannot be acknowledged are given up after this (their leases are gone by then). */
  private stopDeadline = Infinity;
  private fatal: unknown = null;
  /** Mean handler time (ms), once one has run. */
  private handlerMs: number | null = null;
  /** Handlers finished so far (a failed one once its release is answered), up to PREFETCH_SAMPLES. */
  private samples = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private idle: (() => void) | null = null;

  constructor(
    private readonly calls: WorkerCalls,
    private readonly options: WorkerOptions,
    private readonly handler: (item: ClaimedItem) => Promise<unknown>,
  ) {}

  start(): void {
    this.pump();
  }

  /** Stops claiming, hands back items not started, finishes those in hand and acknowledges them. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopDeadline = performance.now() + this.options.timeoutMs;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    // An idle worker's claim may wait on the server for many seconds: call it off (it answers
    // at once, empty; whatever it claimed meanwhile is handed back when it answers).
    void this.callOffPoll();
    const unstarted = this.buffer.splice(0);
    await Promise.allSettled(unstarted.map((h) => this.calls.release(h.item.key, h.lease, undefined, false)));
    this.pump();
    await new Promise<void>((resolve) => {
      this.idle = resolve;
      this.checkIdle();
    });
    if (this.fatal !== null) throw this.fatal;
  }

  /**
   * Calls off the waiting claims. A claim sent a moment ago may not be waiting on the server yet
   * (the call off would find nothing): asked again a few times while any poll is out, since
   * one call may find some of them waiting and not the others. An older server does not know
   * the op: the claims then run out their wait.
   */
  private async callOffPoll(): Promise<void> {
    for (let tries = 0; tries < CALL_OFF_TRIES && this.polls > 0; tries++) {
      if (tries > 0) await new Promise((r) => setTimeout(r, CALL_OFF_RETRY_MS));
      try {
        await this.calls.cancelWait();
      } catch {
        return;
      }
    }
  }

  private checkIdle(): void {
    // A poll still out is waited for (stop() calls it off): what it claims is handed back when it answers.
    if (this.idle !== null && this.running === 0 && !this.acking && this.polls === 0 && this.acks.length === 0) this.idle();
  }

  /**
   * How many items to hold beyond the handlers: what they start within a third of the
   * timeout (none times out waiting here), and within a second (a worker holds at most
   * a second of work that others could be doing).
   */
  private prefetch(): number {
    // No prefetch until a few handlers have finished: the first ones may all be fast successes
    // while failures to come hold their handlers for a release's round trip.
    if (this.handlerMs === null || this.samples < PREFETCH_SAMPLES || this.options.prefetch === 0) return 0;
    const horizonMs = Math.min(this.options.timeoutMs / 3, PREFETCH_HORIZON_MS);
    const startsInTime = Math.floor((horizonMs * this.options.concurrency) / Math.max(this.handlerMs, 0.01));
    return Math.min(this.options.prefetch, startsInTime);
  }

  /** How long a handler was held by one item: its handler, and for a failed one the release's answer. */
  private sample(ms: number): void {
    this.handlerMs = this.handlerMs === null ? ms : this.handlerMs * 0.9 + ms * 0.1;
    if (this.samples < PREFETCH_SAMPLES) this.samples++;
  }

  private wanted(): number {
    if (this.stopping) return 0;
    const held = this.running + this.buffer.length + this.asked;
    return Math.min(CLAIM_BATCH, this.options.concurrency + this.prefetch() - held);
  }

  private pump(): void {
    while (!this.stopping && this.running < this.options.concurrency && this.buffer.length > 0) this.run(this.buffer.shift()!);
    if (this.retryTimer !== null) return;
    if (!this.acking && this.acks.length > 0) this.ack();
    // While claims come back full the acks carry them; once the journal runs short, polls
    // wait on the server beside the acks, so an item that falls due is taken at once: more
    // than one, so that one still waits there while another's entry is in flight.
    const polls = this.starved && !this.idleJournal ? MAX_POLLS_SHORT : 1;
    while (this.polls < polls && (this.starved || !this.acking) && this.running < this.options.concurrency && this.wanted() > 0) this.poll(polls);
    this.checkIdle();
  }

  private run(held: Held): void {
    this.running++;
    const every = Math.max(10, this.options.timeoutMs / 3);
    const extend = (): void => {
      void this.calls.extend(held.item.key, held.lease).catch(() => undefined); // lost (CONFLICT) or unreachable: the done says which
      keepAlive = setTimeout(extend, every);
    };
    // The first extension a third of the timeout after the lease began (a prefetched item's began before its handler).
    let keepAlive = setTimeout(extend, Math.max(0, held.renewedAt + every - performance.now()));
    const started = performance.now();
    void this.handler(held.item).then(
      (result: unknown) => {
        clearTimeout(keepAlive);
        this.sample(performance.now() - started);
        this.running--;
        // What the handler returned is kept as the item's result (readable by key for a while).
        this.acks.push(result === undefined ? { key: held.item.key, lease: held.lease } : { key: held.item.key, lease: held.lease, result });
        this.pump();
      },
      (err: unknown) => {
        clearTimeout(keepAlive);
        this.options.onError?.(err, held.item);
        // Backoff from the failures so far (each release below is one more); a server that does
        // not count them offers the timeouts.
        const failures = held.item.failures ?? held.item.timeouts;
        // A retry policy (the journal's or the item's) has the server choose the date.
        const processAt = this.options.serverRetries === true || held.item.retry !== undefined ? undefined : Date.now() + this.options.retryDelayMs(failures);
        const why = { error: err instanceof Error ? err.message : String(err), ...(isUnrecoverable(err) ? { unrecoverable: true } : {}) };
        void this.calls
          .release(held.item.key, held.lease, processAt, true, why)
          .catch(() => undefined) // lost, or unreachable: it times out and is offered again
          .finally(() => {
            // A failed item holds its handler until its release is answered: that time counts
            // towards how fast handlers start the items held here (the prefetch).
            this.sample(performance.now() - started);
            this.running--;
            this.pump();
          });
      },
    );
  }

  private ack(): void {
    const batch = this.acks.splice(0, ACK_BATCH);
    const claim = this.polls > 0 || this.starved ? 0 : Math.max(0, this.wanted());
    this.acking = true;
    this.asked += claim;
    const sent = performance.now();
    // Short of work with a claim waiting on the server: that claim's entry may carry these.
    const acknowledged = this.polls > 0 && this.starved && !this.stopping && batch.every((a) => a.result === undefined)
      ? this.calls.doneManyHeld(batch, ACK_HOLD_MS).then(() => ({ next: null }))
      : this.calls.doneMany(batch, claim > 0 ? claim : undefined);
    acknowledged.then(
      ({ next }) => {
        this.acking = false;
        this.asked -= claim;
        if (next !== null) this.take(next, claim, sent);
        this.pump();
      },
      (err: unknown) => {
        this.acking = false;
        this.asked -= claim;
        // The leases outlive the connection: acknowledge again once the client is back
        // (items done twice in a retried entry come back as lost, harmlessly).
        this.acks.unshift(...batch);
        this.failed(err);
      },
    );
  }

  /** One of `outOf` polls to have out: it asks for its share of the free handlers, the last for what is left. */
  private poll(outOf: number): void {
    const max = Math.ceil(this.wanted() / Math.max(1, outOf - this.polls));
    this.polls++;
    this.asked += max;
    const sent = performance.now();
    this.calls.claim(max, this.options.waitMs).then(
      (claim) => {
        this.polls--;
        this.asked -= max;
        this.take(claim, max, sent);
        this.pump();
      },
      (err: unknown) => {
        this.polls--;
        this.asked -= max;
        this.failed(err);
      },
    );
  }

  private take(claim: Claim, asked: number, sentAt: number): void {
    this.starved = claim.items.length < asked;
    this.idleJournal = claim.items.length === 0;
    for (const item of claim.items) {
      const held: Held = { item, lease: claim.lease, renewedAt: sentAt };
      // Claimed while stopping: hand it back rather than let it time out.
      if (this.stopping) void this.calls.release(item.key, claim.lease, undefined, false).catch(() => undefined);
      else this.buffer.push(held);
    }
  }

  /** A request failed: give up when it never will succeed, else try again shortly. */
  private failed(err: unknown): void {
    const never = this.calls.closed || (err instanceof VeraError && err.code === 'NOT_FOUND');
    if (never || (this.stopping && performance.now() >= this.stopDeadline)) {
      if (never) this.fatal = err;
      this.stopping = true;
      this.acks.length = 0; // not acknowledged: the items time out and are offered again
      this.checkIdle();
      return;
    }
    // One retry for however many requests failed together (three polls out when a connection drops).
    if (this.retryTimer === null) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.pump();
      }, 100);
    }
    this.checkIdle();
  }
}

/** An error a handler throws to say no retry can mend it (UnrecoverableError, or any error marked `unrecoverable: true`). */
function isUnrecoverable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { unrecoverable?: unknown }).unrecoverable === true;
}
