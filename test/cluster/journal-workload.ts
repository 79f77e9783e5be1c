// A journal workload for fault trials: one producer adding unique keys in small
// batches and a few workers claiming and completing them (one done at a time, or
// every item of a claim in one doneMany that claims the next), every outcome recorded
// for checkJournal (journal-checker.ts). After the faults, `drain` lets the
// workers finish what is left (claims lost in a failover time out and come
// back), then `final` reads every member's counts and the flagged list.
// With command version 9 it also exercises the failure path and the newer
// features: some jobs always fail (released until their retry policy flags
// them), some are removed after they are added, a schedule makes a job per tick,
// and a second, rate-limited journal is claimed from by two workers.
import type { VeraClient } from '../../src/client/index.js';
import { afterFailure, openClient } from './pace.js';
import { JournalClient, type Claim } from '../../src/families/journal/client.js';
import { VeraError } from '../../src/protocol/index.js';
import { pollUntil } from '../support/poll.js';
import type { ChaosCluster } from './harness.js';
import type { JournalFinal, JournalHistory, Outcome, ScheduleFinal } from './journal-checker.js';
import { untilCommandVersion } from '../server/fixture.js';

/** A job whose handler always fails is one in POISON_EVERY batches; it has its own policy of POISON_ATTEMPTS. */
const POISON_EVERY = 7;
const POISON_ATTEMPTS = 3;
/** One batch in REMOVE_EVERY has its first key removed once added. */
const REMOVE_EVERY = 5;
/** Every so many batches, one job is delayed (due 20 to 100 ms after its add is sent): the checker holds that no claim brings it early. */
const DELAY_EVERY = 3;
const TICK_EVERY_MS = 500;
const TICK_ID = 'tick';
/** The rate-limited journal's limit: RATE_MAX items per RATE_WINDOW_MS. */
const RATE_MAX = 4;
const RATE_WINDOW_MS = 200;

export interface JournalWorkloadOptions {
  readonly name?: string;
  readonly workers?: number;
  readonly batch?: number;
  /** The journal's claim timeout: lost claims come back after it. */
  readonly timeoutMs?: number;
  /** Items added and not yet done past which the producer waits (default 300). */
  readonly maxBacklog?: number;
}

function outcomeOf(err: unknown): Outcome {
  return err instanceof VeraError && err.code === 'CONFLICT' ? 'refused' : 'unknown';
}

export class JournalWorkload {
  readonly name: string;
  private readonly adds: Array<JournalHistory['adds'][number]> = [];
  private readonly claims: Array<JournalHistory['claims'][number]> = [];
  /** Delayed jobs' process dates, and when (wall clock) a claim of one was answered. */
  private readonly due: Record<string, number> = {};
  private readonly answered: Array<{ key: string; lease: number; at: number }> = [];
  private readonly dones: Array<JournalHistory['dones'][number]> = [];
  private readonly releases: Array<NonNullable<JournalHistory['releases']>[number]> = [];
  private readonly removes: Array<NonNullable<JournalHistory['removes']>[number]> = [];
  private readonly ratedClaims: Array<NonNullable<JournalHistory['rated']>['claims'][number]> = [];
  private scheduleFinal: ScheduleFinal | undefined;
  private ratedWork: Array<Promise<void>> = [];
  private ratedProducing = true;
  private readonly clients: VeraClient[] = [];
  private producing = true;
  private draining = false;
  private closed = false;
  private producer: Promise<void> = Promise.resolve();
  private workers: Array<Promise<void>> = [];

  private constructor(
    private readonly urls: readonly string[],
    private readonly options: JournalWorkloadOptions,
  ) {
    this.name = options.name ?? 'chaos-jobs';
  }

  /** Creates the journal (once the cluster runs the journal's command version) and starts producing and working. */
  static async start(urls: readonly string[], options: JournalWorkloadOptions = {}): Promise<JournalWorkload> {
    const w = new JournalWorkload(urls, options);
    const admin = await w.open();
    await pollUntil('the cluster to accept journal commands', async () => {
      try {
        await admin.create(w.name, { timeoutMs: options.timeoutMs ?? 2000, maxTimeouts: 255 });
        return true;
      } catch (err) {
        if (err instanceof VeraError && err.code === 'CONFLICT') return true; // an earlier try was applied
        if (err instanceof VeraError && err.code === 'UNAVAILABLE') return undefined;
        throw err;
      }
    }, 30_000);
    await w.startNewer(admin);
    w.producer = w.produce();
    w.workers = Array.from({ length: options.workers ?? 3 }, (_, i) => w.work(i % 2 === 1));
    return w;
  }

  private get ratedName(): string {
    return `${this.name}-rated`;
  }

  /** Once the cluster runs command version 9: the schedule, and the rate-limited journal with its producer and two workers. */
  private async startNewer(admin: JournalClient): Promise<void> {
    const tolerate = (err: unknown): void => {
      if (!(err instanceof VeraError && err.code === 'CONFLICT')) throw err; // an earlier try was applied
    };
    await untilCommandVersion(() => admin.schedule(this.name, TICK_ID, { everyMs: TICK_EVERY_MS, data: { tick: true } }).catch(tolerate));
    await admin.create(this.ratedName, { timeoutMs: this.options.timeoutMs ?? 2000, maxTimeouts: 255, rateLimit: { max: RATE_MAX, windowMs: RATE_WINDOW_MS } }).catch(tolerate);
    this.ratedWork = [this.produceRated(), this.workRated(), this.workRated()];
  }

  private async produceRated(): Promise<void> {
    const journals = await this.open();
    for (let n = 0; this.ratedProducing; n++) {
      // Pacing, not synchronisation: a small backlog, as the limit lets 20 a second through.
      const shown = await journals.show(this.ratedName).catch(() => null);
      if (shown !== null && shown.counts.waiting > 40) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      await journals.add(this.ratedName, Array.from({ length: 5 }, (_, i) => ({ key: `rated-${n}-${i}`, data: i }))).catch(() => new Promise((r) => setTimeout(r, 20)));
    }
  }

  private async workRated(): Promise<void> {
    let client = await this.connectOne();
    while (!this.closed) {
      const journals = new JournalClient(client);
      const sentAt = Date.now();
      try {
        const claim = await journals.claim(this.ratedName, { max: 10, waitMs: 300 });
        this.ratedClaims.push({ items: claim.items.length, sentAt, ackedAt: Date.now() });
        if (claim.items.length > 0) await journals.doneMany(this.ratedName, claim.items.map((i) => ({ key: i.key, lease: claim.lease })));
        if (claim.items.length === 0 && !this.ratedProducing && (await this.drainedJournal(journals, this.ratedName))) return;
      } catch {
        client = await afterFailure(client, this.closed ? null : () => this.connectOne());
      }
    }
  }

  /** Items acknowledged done so far. */
  private completed = 0;

  get completedCount(): number {
    return this.completed;
  }

  private connectOne(): Promise<VeraClient> {
    return openClient(this.urls, { timeoutMs: 10_000, requestTimeoutMs: 15_000 }, this.clients);
  }

  private async open(): Promise<JournalClient> {
    return new JournalClient(await this.connectOne());
  }

  private async produce(): Promise<void> {
    const journals = await this.open();
    const batch = this.options.batch ?? 5;
    const maxBacklog = this.options.maxBacklog ?? 300;
    for (let n = 0; this.producing; n++) {
      // Pacing, not synchronisation: keep the backlog small enough to drain quickly after the faults.
      while (this.producing && this.adds.length * batch - this.completed > maxBacklog) await new Promise((r) => setTimeout(r, 20));
      const keys = Array.from({ length: batch }, (_, i) => (n % POISON_EVERY === 3 && i === batch - 1 ? `poison-${n}` : `job-${n}-${i}`));
      const retry = { attempts: POISON_ATTEMPTS, backoff: 'fixed' as const, delayMs: 100 };
      try {
        // The first key of every DELAY_EVERY-th batch (its second when that one is removed) is delayed.
        const candidate = n % DELAY_EVERY === 1 ? keys[n % REMOVE_EVERY === 2 ? 1 : 0] : undefined;
        const delayed = candidate !== undefined && !candidate.startsWith('poison-') ? candidate : null;
        if (delayed !== null) this.due[delayed] = Date.now() + 20 + (n % 5) * 20;
        await journals.add(
          this.name,
          keys.map((key) => ({ key, data: { key }, ...(key.startsWith('poison-') ? { retry } : {}), ...(key === delayed ? { processAt: this.due[key] } : {}) })),
        );
        this.adds.push({ keys, outcome: 'ok' });
      } catch (err) {
        this.adds.push({ keys, outcome: err instanceof VeraError && (err.code === 'BAD_REQUEST' || err.code === 'QUOTA_EXCEEDED') ? 'refused' : 'unknown' });
        continue;
      }
      if (n % REMOVE_EVERY === 2) await this.remove(journals, keys[0]!);
    }
  }

  private async remove(journals: JournalClient, key: string): Promise<void> {
    const sentAt = performance.now();
    try {
      const { status } = await journals.remove(this.name, key);
      this.removes.push({ key, sentAt, ackedAt: performance.now(), outcome: 'ok', status });
    } catch (err) {
      // NOT_FOUND: done already, so nothing was removed.
      const outcome = err instanceof VeraError && (err.code === 'NOT_FOUND' || err.code === 'CONFLICT') ? 'refused' : 'unknown';
      this.removes.push({ key, sentAt, ackedAt: performance.now(), outcome });
    }
  }

  /** A job whose handler always fails: released as a failure (the retry policy flags it after its attempts). */
  private async fail(journals: JournalClient, key: string, lease: number): Promise<void> {
    const sentAt = performance.now();
    try {
      const { flagged } = await journals.release(this.name, key, lease, undefined, { error: 'always fails' });
      this.releases.push({ key, lease, sentAt, ackedAt: performance.now(), outcome: 'ok', flagged });
    } catch (err) {
      this.releases.push({ key, lease, sentAt, ackedAt: performance.now(), outcome: outcomeOf(err), flagged: false });
    }
  }

  /** `batched`: finish each claim's items in one doneMany that claims the next (the worker helper's way); else one done each. */
  private async work(batched: boolean): Promise<void> {
    let client = await this.connectOne();
    let journals = new JournalClient(client);
    let next: Claim | null = null;
    while (!this.closed) {
      let claim: Claim;
      if (next !== null && next.items.length > 0) {
        claim = next;
      } else {
        const sentAt = performance.now();
        try {
          claim = await journals.claim(this.name, { max: 3, waitMs: 300 });
        } catch {
          if (this.draining && (await this.drained(journals))) return;
          const again = await afterFailure(client, this.closed ? null : () => this.connectOne());
          if (again !== client) journals = new JournalClient((client = again));
          continue;
        }
        const ackedAt = performance.now();
        this.noteAnswered(claim);
        for (const item of claim.items) this.claims.push({ key: item.key, lease: claim.lease, sentAt, ackedAt });
        if (claim.items.length === 0 && this.draining && (await this.drained(journals))) return;
      }
      next = null;
      for (const item of claim.items) if (item.key.startsWith('poison-')) await this.fail(journals, item.key, claim.lease);
      claim = { ...claim, items: claim.items.filter((i) => !i.key.startsWith('poison-')) };
      if (batched && claim.items.length > 0) {
        next = await this.finishTogether(journals, claim);
        continue;
      }
      for (const item of claim.items) {
        const doneSent = performance.now();
        try {
          await journals.done(this.name, item.key, claim.lease);
          this.dones.push({ key: item.key, lease: claim.lease, sentAt: doneSent, ackedAt: performance.now(), outcome: 'ok' });
          this.completed++;
        } catch (err) {
          this.dones.push({ key: item.key, lease: claim.lease, sentAt: doneSent, ackedAt: performance.now(), outcome: outcomeOf(err) });
        }
      }
    }
  }

  /** One doneMany for every item of `claim`, claiming up to 3 more in the same entry; returns those. */
  private async finishTogether(journals: JournalClient, claim: Claim): Promise<Claim | null> {
    const sentAt = performance.now();
    try {
      const r = await journals.doneMany(this.name, claim.items.map((i) => ({ key: i.key, lease: claim.lease })), 3);
      const ackedAt = performance.now();
      for (const item of claim.items) {
        const lost = r.lost.includes(item.key);
        this.dones.push({ key: item.key, lease: claim.lease, sentAt, ackedAt, outcome: lost ? 'refused' : 'ok' });
        if (!lost) this.completed++;
      }
      if (r.next !== null) this.noteAnswered(r.next);
      if (r.next !== null) for (const item of r.next.items) this.claims.push({ key: item.key, lease: r.next.lease, sentAt, ackedAt });
      return r.next;
    } catch (err) {
      const ackedAt = performance.now();
      // Unknown: the entry may have been applied (items done, and more claimed under its index, which time out).
      for (const item of claim.items) this.dones.push({ key: item.key, lease: claim.lease, sentAt, ackedAt, outcome: outcomeOf(err) });
      return null;
    }
  }

  private drained(journals: JournalClient): Promise<boolean> {
    return this.drainedJournal(journals, this.name);
  }

  private async drainedJournal(journals: JournalClient, name: string): Promise<boolean> {
    const info = await journals.show(name).catch(() => null);
    return info !== null && info.counts.waiting === 0 && info.counts.processing === 0;
  }

  /** The schedule's counts, read and then the schedule removed (retried through what is left of the faults). */
  private async endSchedule(): Promise<void> {
    const journals = await this.open();
    await pollUntil('the schedule read and removed', async () => {
      try {
        const s = (await journals.schedules(this.name)).find((x) => x.schedule === TICK_ID);
        if (s !== undefined) {
          this.scheduleFinal = { prefix: `${TICK_ID}@`, everyMs: TICK_EVERY_MS, produced: s.produced, skipped: s.skipped, lastTick: s.lastTick };
          await journals.unschedule(this.name, TICK_ID);
        }
        return this.scheduleFinal === undefined ? undefined : true;
      } catch (err) {
        if (err instanceof VeraError && err.code === 'NOT_FOUND' && this.scheduleFinal !== undefined) return true; // the unschedule was applied, its answer lost
        return undefined;
      }
    }, 30_000);
  }

  /** Stops producing and lets the workers finish everything left; bounded. */
  async drain(timeoutMs = 60_000): Promise<void> {
    this.producing = false;
    this.ratedProducing = false;
    await this.producer;
    await this.endSchedule();
    this.draining = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the journal did not drain within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([Promise.all([...this.workers, ...this.ratedWork]), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** When (wall clock) a claim bringing delayed jobs was answered. */
  private noteAnswered(claim: Claim): void {
    const at = Date.now();
    for (const item of claim.items) if (this.due[item.key] !== undefined) this.answered.push({ key: item.key, lease: claim.lease, at });
  }

  history(): JournalHistory {
    return {
      adds: [...this.adds],
      claims: [...this.claims],
      dones: [...this.dones],
      releases: [...this.releases],
      attempts: POISON_ATTEMPTS,
      removes: [...this.removes],
      rated: { max: RATE_MAX, windowMs: RATE_WINDOW_MS, claims: [...this.ratedClaims] },
      delayed: { due: { ...this.due }, answered: [...this.answered] },
    };
  }

  /** Every listed member's counts (over HTTP) and the flagged keys. */
  async final(cluster: ChaosCluster, among: readonly number[]): Promise<JournalFinal> {
    const counts = await Promise.all(
      among.map(async (i) => {
        const m = cluster.members.find((member) => member.index === i)!;
        const shown = (await fetch(`${m.httpUrl}/v1/journals/${this.name}`).then((r) => r.json())) as { counts: { waiting: number; processing: number; flagged: number } };
        return { member: m.id, ...shown.counts };
      }),
    );
    const journals = await this.open();
    const flagged = new Set((await journals.flagged(this.name, 10_000)).map((f) => f.key));
    return {
      counts: counts.map(({ member, waiting, processing, flagged: f }) => ({ member, waiting, processing, flagged: f })),
      flagged,
      ...(this.scheduleFinal === undefined ? {} : { schedule: this.scheduleFinal }),
    };
  }

  async close(): Promise<void> {
    this.producing = false;
    this.ratedProducing = false;
    this.draining = true;
    this.closed = true;
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
  }
}
