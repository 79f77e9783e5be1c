// A1's two further scenarios, run on the same system after the client levels:
// - events: account events (a password change each, as process_account_events applies
//   them) from 16 clients over users of their own, so the get-or-create users keep
//   their generation;
// - drain: a node holding many users drained gradually (a batch per step, paced)
//   while 16 clients keep up the get-or-create load; the load's latency is measured
//   without the drain, then during it.
import { Samples, type LatencySummary } from '../lib/samples.js';
import { drive, SERVICE } from './a1.js';
import type { AssignSystem, LoginValues } from './system.js';

export interface ExtraScale {
  readonly events: number;
  /** Users the events go to (each gets events / eventUsers of them). */
  readonly eventUsers: number;
  readonly drainUsers: number;
  readonly drainBatch: number;
  /** Users replaced per second, at most. */
  readonly drainRate: number;
  /** How long the load runs without the drain (the baseline), and at least with it. */
  readonly loadMs: number;
  readonly loadClients: number;
}

// The drain's batch is the client's and CLI's default (100), the most a step takes: one entry
// holds the apply for its whole batch, so a batch of 500 made the load wait behind each (3.3x
// p99 in the first run). Each system drains its own way (AssignSystem.drain): Vera with the
// client's paced drain (client-drain-pacing.ts: batches from 25, larger while steps stay quick,
// the log left free between them), PostgreSQL with steps at the rate. The rate is a ceiling, 50 times the
// default's.
export const EXTRA_FULL: ExtraScale = { events: 10_000, eventUsers: 2_000, drainUsers: 100_000, drainBatch: 100, drainRate: 5_000, loadMs: 10_000, loadClients: 16 };
export const EXTRA_QUICK: ExtraScale = { events: 2_000, eventUsers: 400, drainUsers: 10_000, drainBatch: 100, drainRate: 5_000, loadMs: 3_000, loadClients: 16 };

export interface EventsResult {
  readonly events: number;
  readonly clients: number;
  readonly perSec: number;
  readonly latencyMs: LatencySummary;
  readonly errors: number;
}

export interface DrainResult {
  readonly users: number;
  readonly replaced: number;
  readonly drainSeconds: number;
  /** Steps the drain took, and their times (propose to answer). */
  readonly steps?: number;
  readonly stepMs?: LatencySummary;
  readonly clients: number;
  readonly baseline: { readonly perSec: number; readonly latencyMs: LatencySummary; readonly errors: number };
  readonly during: { readonly perSec: number; readonly latencyMs: LatencySummary; readonly errors: number };
  /** p99 during the drain over p99 without it. */
  readonly p99Ratio: number;
}

const EVENT_CLIENTS = 16;
const BASE_GENERATION = 1_700_000_000_000;
const FIRST_BULK_UID = 50_000_000;
export const DRAIN_NODE = 'https://sync-drain.example.com';

/** 10,000 password changes over users of their own, 16 clients; the users are left current (counted by the caller). */
export async function runEvents(system: AssignSystem, scale: ExtraScale, values: LoginValues, log: (m: string) => void): Promise<EventsResult> {
  const emails = Array.from({ length: scale.eventUsers }, (_, k) => `event-${k}@example.com`);
  const seed = await system.clients(16);
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async (_, i) => {
    for (let n = next++; n < emails.length; n = next++) await seed.login(i, SERVICE, emails[n]!, values);
  }));
  await seed.close();
  const clients = await system.clients(EVENT_CLIENTS);
  const samples = new Samples();
  let errors = 0;
  let first: string | null = null;
  next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: EVENT_CLIENTS }, async (_, i) => {
    for (let n = next++; n < scale.events; n = next++) {
      // Each user's events in increasing generation, as FxA sends them.
      const email = emails[n % emails.length]!;
      const generation = BASE_GENERATION + 10 + Math.floor(n / emails.length);
      const t = performance.now();
      try {
        await clients.event(i, email, generation, `bench-${n}`);
        samples.add(performance.now() - t);
      } catch (err) {
        errors++;
        first ??= (err as Error).message;
      }
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  await clients.close();
  const result = { events: samples.count, clients: EVENT_CLIENTS, perSec: samples.count / seconds, latencyMs: samples.summary(), errors };
  log(`${system.name} events: ${Math.round(result.perSec)}/s, p50 ${result.latencyMs.p50.toFixed(2)} ms, p99 ${result.latencyMs.p99.toFixed(2)} ms, ${errors} errors${first === null ? '' : ` (the first: ${first})`}`);
  return result;
}

/**
 * A node of `drainUsers` users (made in bulk, ranked last by its load so the load puts no
 * one there), then the get-or-create load without the drain, then with it: the drain
 * replaces a batch per step at most `drainRate` users a second, and the load runs until
 * the node is empty (at least `loadMs`).
 */
export async function runDrain(system: AssignSystem, scale: ExtraScale, values: LoginValues, known: string[], log: (m: string) => void): Promise<DrainResult> {
  const emails = Array.from({ length: scale.drainUsers }, (_, k) => `drained-${k}@example.com`);
  // No slot open to new users: allocation passes it over (and its load ranks it last anyway).
  await system.addNode(SERVICE, { node: DRAIN_NODE, capacity: 1_000_000, available: 0 });
  await system.bulkUsers(SERVICE, DRAIN_NODE, emails, values, FIRST_BULK_UID);
  log(`${system.name}: ${emails.length} users on ${DRAIN_NODE}`);
  const clients = await system.clients(scale.loadClients);
  await drive(clients, scale.loadClients, 1000, 'dw', known, null);
  const baseSamples = new Samples();
  let t0 = performance.now();
  const base = await drive(clients, scale.loadClients, scale.loadMs, 'db', known, baseSamples);
  const baseSeconds = (performance.now() - t0) / 1000;
  // With the drain: the load runs until the drain is over.
  const duringSamples = new Samples();
  let draining = true;
  let replaced = 0;
  const drainStart = performance.now();
  const steps = new Samples();
  let stepCount = 0;
  const drain = (async () => {
    try {
      const r = await system.drain(SERVICE, DRAIN_NODE, {
        batch: scale.drainBatch,
        ratePerSecond: scale.drainRate,
        onStep: (n, ms) => {
          replaced += n;
          stepCount++;
          steps.add(ms);
        },
      });
      replaced = r.replaced;
    } finally {
      draining = false;
    }
  })();
  t0 = performance.now();
  let during = { created: 0, errors: 0, firstError: null as string | null };
  while (draining || performance.now() - t0 < scale.loadMs) {
    const round = await drive(clients, scale.loadClients, 1000, `dd${Math.round(performance.now())}`, known, duringSamples);
    during = { created: during.created + round.created, errors: during.errors + round.errors, firstError: during.firstError ?? round.firstError };
  }
  await drain;
  const drainSeconds = (performance.now() - drainStart) / 1000;
  const duringSeconds = (performance.now() - t0) / 1000;
  await clients.close();
  const baseline = { perSec: baseSamples.count / baseSeconds, latencyMs: baseSamples.summary(), errors: base.errors };
  const withDrain = { perSec: duringSamples.count / duringSeconds, latencyMs: duringSamples.summary(), errors: during.errors };
  const stepMs = steps.summary();
  const result = { users: emails.length, replaced, drainSeconds, steps: stepCount, stepMs, clients: scale.loadClients, baseline, during: withDrain, p99Ratio: withDrain.latencyMs.p99 / baseline.latencyMs.p99 };
  log(`${system.name} drain of ${replaced} users in ${drainSeconds.toFixed(1)} s (${stepCount} steps, p50 ${stepMs.p50.toFixed(1)} ms, p99 ${stepMs.p99.toFixed(1)} ms): load p99 ${baseline.latencyMs.p99.toFixed(2)} ms without, ${withDrain.latencyMs.p99.toFixed(2)} ms with (${result.p99Ratio.toFixed(2)}x)${during.firstError === null ? '' : `; first error ${during.firstError}`}`);
  return result;
}
