// A journal workload for fault trials: one producer adding unique keys in small
// batches and a few workers claiming and completing them (one done at a time, or
// every item of a claim in one doneMany that claims the next), every outcome recorded
// for checkJournal (journal-checker.ts). After the faults, `drain` lets the
// workers finish what is left (claims lost in a failover time out and come
// back), then `final` reads every member's counts and the flagged list.
import type { VeraClient } from '../../src/client/index.js';
import { afterFailure, openClient } from './pace.js';
import { JournalClient, type Claim } from '../../src/families/journal/client.js';
import { VeraError } from '../../src/protocol/index.js';
import { pollUntil } from '../support/poll.js';
import type { ChaosCluster } from './harness.js';
import type { JournalFinal, JournalHistory, Outcome } from './journal-checker.js';

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
  private readonly dones: Array<JournalHistory['dones'][number]> = [];
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
    w.producer = w.produce();
    w.workers = Array.from({ length: options.workers ?? 3 }, (_, i) => w.work(i % 2 === 1));
    return w;
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
      const keys = Array.from({ length: batch }, (_, i) => `job-${n}-${i}`);
      try {
        await journals.add(this.name, keys.map((key) => ({ key, data: { key } })));
        this.adds.push({ keys, outcome: 'ok' });
      } catch (err) {
        this.adds.push({ keys, outcome: err instanceof VeraError && (err.code === 'BAD_REQUEST' || err.code === 'QUOTA_EXCEEDED') ? 'refused' : 'unknown' });
      }
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
        for (const item of claim.items) this.claims.push({ key: item.key, lease: claim.lease, sentAt, ackedAt });
        if (claim.items.length === 0 && this.draining && (await this.drained(journals))) return;
      }
      next = null;
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
      if (r.next !== null) for (const item of r.next.items) this.claims.push({ key: item.key, lease: r.next.lease, sentAt, ackedAt });
      return r.next;
    } catch (err) {
      const ackedAt = performance.now();
      // Unknown: the entry may have been applied (items done, and more claimed under its index, which time out).
      for (const item of claim.items) this.dones.push({ key: item.key, lease: claim.lease, sentAt, ackedAt, outcome: outcomeOf(err) });
      return null;
    }
  }

  private async drained(journals: JournalClient): Promise<boolean> {
    const info = await journals.show(this.name).catch(() => null);
    return info !== null && info.counts.waiting === 0 && info.counts.processing === 0;
  }

  /** Stops producing and lets the workers finish everything left; bounded. */
  async drain(timeoutMs = 60_000): Promise<void> {
    this.producing = false;
    await this.producer;
    this.draining = true;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the journal did not drain within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([Promise.all(this.workers), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  history(): JournalHistory {
    return { adds: [...this.adds], claims: [...this.claims], dones: [...this.dones] };
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
    return { counts: counts.map(({ member, waiting, processing, flagged: f }) => ({ member, waiting, processing, flagged: f })), flagged };
  }

  async close(): Promise<void> {
    this.producing = false;
    this.draining = true;
    this.closed = true;
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
  }
}
