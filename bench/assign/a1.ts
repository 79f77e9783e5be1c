// A1: Tokenserver's get-or-create request at 1, 16 and 256 concurrent clients.
// Each request is, with even odds, a new user (an email never seen: a node is
// allocated and a record created) or a returning one (a known email with the
// values it registered: answered from what is stored). Every client sends its
// next request when the last is answered; a level runs for a fixed time after
// a short unmeasured warm-up. At the end the node load counters are compared
// with the records they count (drift).
import { Samples, type LatencySummary } from '../lib/samples.js';
import type { AssignSystem, Counters, LoginValues } from './system.js';
import { EXTRA_FULL, EXTRA_QUICK, runDrain, runEvents, type DrainResult, type EventsResult, type ExtraScale } from './a1-extra.js';

export interface A1Scale {
  readonly clients: readonly number[];
  /** The events and drain scenarios after the levels; absent: not run. */
  readonly extra?: ExtraScale;
  readonly levelMs: number;
  readonly warmupMs: number;
  /** Users created before the first level, so returning users exist from the start. */
  readonly seedUsers: number;
}

export const A1_FULL: A1Scale = { clients: [1, 16, 256], levelMs: 10_000, warmupMs: 1_500, seedUsers: 2_000, extra: EXTRA_FULL };
export const A1_QUICK: A1Scale = { clients: [1, 16, 256], levelMs: 3_000, warmupMs: 500, seedUsers: 300, extra: EXTRA_QUICK };

export const SERVICE = 'sync-1.5';
export const RELEASE_RATE = 0.1;
/** Ten nodes with room for everyone, a few slots open: capacity is released as they fill. */
export const NODES = Array.from({ length: 10 }, (_, k) => ({ node: `https://sync-${k}.example.com`, capacity: 1_000_000, available: 200 }));
export const VALUES: LoginValues = { generation: 1_700_000_000_000, keysChangedAt: 1_700_000_000_000, clientState: '616263' };

export interface A1Level {
  readonly clients: number;
  readonly requests: number;
  readonly created: number;
  readonly perSec: number;
  readonly latencyMs: LatencySummary;
  readonly errors: number;
}

export interface A1Result {
  readonly system: string;
  readonly settings: string;
  readonly levels: readonly A1Level[];
  readonly counters: Counters | null;
  /** |sum of loads - current records| + nodes off + duplicate emails; null if not measured. */
  readonly drift: number | null;
  readonly errors: readonly string[];
  readonly events?: EventsResult;
  readonly drain?: DrainResult;
}

export async function runA1(system: AssignSystem, scale: A1Scale, log: (m: string) => void): Promise<A1Result> {
  const errors: string[] = [];
  const known: string[] = [];
  await system.setup(SERVICE, RELEASE_RATE, NODES);
  // Seed returning users, 16 at a time.
  const seeders = await system.clients(16);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async (_, i) => {
      for (let n = next++; n < scale.seedUsers; n = next++) {
        const email = `seed-${n}@example.com`;
        await seeders.login(i, SERVICE, email, VALUES);
        known.push(email);
      }
    }),
  );
  await seeders.close();
  log(`${system.name}: ${known.length} users seeded`);

  const levels: A1Level[] = [];
  for (const count of scale.clients) {
    const clients = await system.clients(count);
    await drive(clients, count, scale.warmupMs, `w${count}`, known, null);
    const samples = new Samples();
    const t0 = performance.now();
    const tally = await drive(clients, count, scale.levelMs, `c${count}`, known, samples);
    const seconds = (performance.now() - t0) / 1000;
    await clients.close();
    if (tally.firstError !== null) errors.push(`${count} clients: ${tally.errors} errors, the first: ${tally.firstError}`);
    const level: A1Level = { clients: count, requests: samples.count, created: tally.created, perSec: samples.count / seconds, latencyMs: samples.summary(), errors: tally.errors };
    log(`${system.name} ${count} clients: ${Math.round(level.perSec)} requests/s, p50 ${level.latencyMs.p50.toFixed(2)} ms, p99 ${level.latencyMs.p99.toFixed(2)} ms, ${tally.created} created, ${tally.errors} errors`);
    levels.push(level);
  }
  let events: EventsResult | undefined;
  let drain: DrainResult | undefined;
  let others = 0;
  if (scale.extra !== undefined) {
    try {
      events = await runEvents(system, scale.extra, VALUES, log);
      others += scale.extra.eventUsers;
      drain = await runDrain(system, scale.extra, VALUES, known, log);
    } catch (err) {
      errors.push(`events/drain: ${(err as Error).message}`);
    }
  }
  let counters: Counters | null = null;
  try {
    counters = await system.counters(SERVICE);
  } catch (err) {
    errors.push(`counters: ${(err as Error).message}`);
  }
  const drift = counters === null ? null : Math.abs(counters.load - counters.currentRecords) + (counters.nodesOff ?? 0) + (counters.duplicates ?? 0);
  if (counters !== null && counters.currentRecords !== known.length + others) errors.push(`${known.length + others} users acknowledged but ${counters.currentRecords} current records`);
  return { system: system.name, settings: system.settings, levels, counters, drift, errors, ...(events === undefined ? {} : { events }), ...(drain === undefined ? {} : { drain }) };
}

export async function drive(
  clients: Awaited<ReturnType<AssignSystem['clients']>>,
  count: number,
  ms: number,
  tag: string,
  known: string[],
  samples: Samples | null,
): Promise<{ created: number; errors: number; firstError: string | null }> {
  const until = performance.now() + ms;
  let created = 0;
  let errors = 0;
  let firstError: string | null = null;
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      for (let n = 0; performance.now() < until; n++) {
        const fresh = Math.random() < 0.5;
        const email = fresh ? `${tag}-${i}-${n}@example.com` : known[Math.floor(Math.random() * known.length)]!;
        const t = performance.now();
        try {
          await clients.login(i, SERVICE, email, VALUES);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          continue;
        }
        samples?.add(performance.now() - t);
        if (fresh) {
          created++;
          known.push(email);
        }
      }
    }),
  );
  return { created, errors, firstError };
}
