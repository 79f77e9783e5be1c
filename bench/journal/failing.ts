// J1's failing-handler scenario, on Vera alone: a share of the jobs (10% by default)
// have a handler that always throws, on a journal with a retry policy (3 attempts,
// exponential from 100 ms). What it shows is that retry traffic stays bounded: no
// job is run more often than its attempts, the failing ones end flagged (none lost,
// none done), and the handler calls per job stay near 1 + share x (attempts - 1).
// The other systems are not run here: their retry settings differ too much for the
// counts to compare, and J1's throughput levels already compare the happy path.
//
// Alone (after `npm run build`):  nice -n 10 npx tsx bench/journal/failing.ts [--jobs N] [--workers N]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect } from '../../src/client/index.js';
import { JournalClient } from '../../src/families/journal/client.js';
import { LOOPBACK } from '../lib/net.js';
import { VeraCluster } from '../systems/vera.js';

export interface FailingScale {
  readonly jobs: number;
  readonly workers: number;
  /** Percent of jobs whose handler always throws. */
  readonly failPct: number;
  readonly attempts: number;
}

export const FAILING_FULL: FailingScale = { jobs: 20_000, workers: 16, failPct: 10, attempts: 3 };
export const FAILING_QUICK: FailingScale = { jobs: 1000, workers: 16, failPct: 10, attempts: 3 };

export interface FailingResult {
  readonly scale: FailingScale;
  readonly failing: number;
  /** Handler calls in all, and per job (what retries cost over one call a job). */
  readonly calls: number;
  readonly callsPerJob: number;
  /** The most calls any failing job and any succeeding job had. */
  readonly maxCallsFailing: number;
  readonly maxCallsSucceeding: number;
  /** What the member applied (its /metrics): items claimed, claims that timed out, releases. Claims per job is the retry traffic. */
  readonly claims: number;
  readonly claimsPerJob: number;
  readonly timeouts: number;
  readonly releases: number;
  readonly done: number;
  readonly flagged: number;
  /** Jobs neither done nor flagged when the journal was empty (lost), and failing jobs done (never). */
  readonly lost: number;
  readonly failingDone: number;
  readonly seconds: number;
  readonly errors: readonly string[];
}

const RETRY = { backoff: 'exponential' as const, delayMs: 100, maxDelayMs: 1000 };
const CAP_MS = 120_000;

export async function runFailingHandler(logDir: string, scale: FailingScale, log: (m: string) => void): Promise<FailingResult> {
  const cluster = new VeraCluster({ logDir, inspector: false });
  await cluster.start();
  const errors: string[] = [];
  try {
    const leader = await cluster.leader();
    const port = cluster.members().find((m) => m.id === leader)!.clientPort;
    const client = await connect(`ws://${LOOPBACK}:${port}`, { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
    const journals = new JournalClient(client);
    try {
      await journals.create('failing', { timeoutMs: 2000, retry: { attempts: scale.attempts, ...RETRY } });
      const keys = Array.from({ length: scale.jobs }, (_, i) => `f-${i}`);
      const fails = (key: string): boolean => Number(key.slice(2)) % Math.round(100 / scale.failPct) === 0;
      for (let i = 0; i < keys.length; i += 1000) await journals.add('failing', keys.slice(i, i + 1000).map((key) => ({ key, data: 'x'.repeat(64) })));
      const calls = new Map<string, number>();
      const done = new Set<string>();
      const started = performance.now();
      const worker = journals.process(
        'failing',
        async (item) => {
          calls.set(item.key, (calls.get(item.key) ?? 0) + 1);
          if (fails(item.key)) throw new Error('this job always fails');
          done.add(item.key);
        },
        { concurrency: scale.workers, waitMs: 1000 },
      );
      // Polled, not awaited on an event: the journal is empty once every job is done or flagged.
      for (;;) {
        const { counts } = await journals.show('failing');
        if (counts.waiting + counts.processing === 0) break;
        if (performance.now() - started > CAP_MS) {
          errors.push(`not finished within ${CAP_MS / 1000} s: ${counts.waiting} waiting, ${counts.processing} processing`);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      const seconds = (performance.now() - started) / 1000;
      await worker.stop();
      const flagged = new Set((await journals.flagged('failing', 10_000)).map((f) => f.key));
      const failingKeys = keys.filter(fails);
      const total = [...calls.values()].reduce((a, b) => a + b, 0);
      const applied = await appliedCounts(port);
      const result: FailingResult = {
        scale,
        failing: failingKeys.length,
        calls: total,
        callsPerJob: total / scale.jobs,
        maxCallsFailing: Math.max(0, ...failingKeys.map((k) => calls.get(k) ?? 0)),
        maxCallsSucceeding: Math.max(0, ...keys.filter((k) => !fails(k)).map((k) => calls.get(k) ?? 0)),
        claims: applied.claimed,
        claimsPerJob: applied.claimed / scale.jobs,
        timeouts: applied.timeouts,
        releases: applied.released,
        done: done.size,
        flagged: flagged.size,
        lost: keys.filter((k) => !done.has(k) && !flagged.has(k)).length,
        failingDone: failingKeys.filter((k) => done.has(k)).length,
        seconds,
        errors,
      };
      log(describeFailing(result));
      return result;
    } finally {
      await client.close().catch(() => undefined);
    }
  } finally {
    await cluster.stop();
  }
}

/** The leader's counters of what it applied to the journal (vera_journal_*_total). */
async function appliedCounts(port: number): Promise<{ claimed: number; timeouts: number; released: number }> {
  const text = await fetch(`http://${LOOPBACK}:${port}/metrics`).then((r) => r.text());
  const counter = (name: string): number => Number(new RegExp(`^vera_journal_${name}_total\\{journal="failing"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { claimed: counter('claimed'), timeouts: counter('timeouts'), released: counter('released') };
}

export function describeFailing(r: FailingResult): string {
  const bound = 1 + (r.scale.failPct / 100) * (r.scale.attempts - 1);
  return (
    `failing handler: ${r.scale.jobs} jobs, ${r.failing} always throwing, ${r.scale.workers} workers, ${r.scale.attempts} attempts: ` +
    `${r.calls} handler calls (${r.callsPerJob.toFixed(3)} per job), ${r.claims} items claimed (${r.claimsPerJob.toFixed(3)} per job; ${bound.toFixed(2)} if every attempt is a run), ${r.releases} releases, ${r.timeouts} timeouts, ` +
    `at most ${r.maxCallsFailing} calls per failing job and ${r.maxCallsSucceeding} per succeeding one; ` +
    `${r.done} done, ${r.flagged} flagged, ${r.lost} lost, ${r.failingDone} failing jobs done; ${r.seconds.toFixed(1)} s` +
    (r.errors.length > 0 ? `; errors: ${r.errors.join('; ')}` : '')
  );
}

/** The scenario's lines for the J1 report. */
export function renderFailing(r: FailingResult): string[] {
  return [
    '## A failing handler (Vera)',
    '',
    `${r.scale.jobs.toLocaleString('en-US')} jobs at ${r.scale.workers} workers; ${r.scale.failPct}% of them (${r.failing}) have a handler that always throws, on a journal with a retry policy of ${r.scale.attempts} attempts (exponential from 100 ms).`,
    '',
    '| handler calls | per job | items claimed | per job | releases | timeouts | most calls, failing job | most calls, succeeding job | done | flagged | lost | seconds |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${r.calls} | ${r.callsPerJob.toFixed(3)} | ${r.claims} | ${r.claimsPerJob.toFixed(3)} | ${r.releases} | ${r.timeouts} | ${r.maxCallsFailing} | ${r.maxCallsSucceeding} | ${r.done} | ${r.flagged} | ${r.lost} | ${r.seconds.toFixed(1)} |`,
    '',
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (flag: string, dflt: number): number => {
    const i = process.argv.indexOf(flag);
    return i < 0 ? dflt : Number(process.argv[i + 1]);
  };
  const scale = { ...FAILING_QUICK, jobs: arg('--jobs', FAILING_QUICK.jobs), workers: arg('--workers', FAILING_QUICK.workers) };
  const r = await runFailingHandler(mkdtempSync(join(tmpdir(), 'vera-bench-failing-')), scale, (m) => console.log(m));
  process.exit(r.errors.length === 0 && r.lost === 0 && r.failingDone === 0 && r.maxCallsFailing <= scale.attempts ? 0 : 1);
}
