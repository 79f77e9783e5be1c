// Where a delayed job's lateness comes from: J1's lateness scenario (1000 jobs due one
// every 3 ms from 200 ms on, one worker helper of 16 handlers on the leader), with the
// worker's calls timed. Each job is put in one of two cases by the claim that brought it:
// - woken: the claim was sent before the job was due and waited on the server: its
//   lateness is the server's wake (the due timer) plus one Raft round plus the reply;
// - asked late: the job fell due while no claim of the worker waited (its one claim was in
//   flight): its lateness is the wait for the worker to ask again plus one round.
// Also the leader's mean propose time and log sync (its /metrics) over the scenario.
// Builds are taken in turn, round after round (only ratios within one run mean anything);
// with `--paired 1` or `--paired clusters`, side by side at once (see paired):
//
//   nice -n 10 tsx bench/journal/lateness-parts.ts --checkouts /tmp/base,. --rounds 3 [--paired 1|clusters] [--count 300]
import { mkdtempSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { VeraClient } from '../../src/client/index.js';
import type { Claim, JournalClient } from '../../src/families/journal/client.js';
import type { JournalWorker as Worker, WorkerCalls } from '../../src/families/journal/client-worker.js';
import { LOOPBACK } from '../lib/net.js';
import { Samples } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';
import { CompletionTally } from './tally.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const checkouts = (args.get('checkouts') ?? '.').split(',').map((c) => resolve(c));
const rounds = Number(args.get('rounds') ?? '3');
/** J1's: 1000 jobs over 3 s (3 ms apart); `--count 300` spaces them 10 ms apart, so that claims wait for them even on a loaded machine. */
const COUNT = Number(args.get('count') ?? '1000');
const SPAN_MS = 3000;

interface Lib {
  readonly connect: typeof import('../../src/client/index.js').connect;
  readonly JournalClient: typeof JournalClient;
  readonly JournalWorker: typeof Worker;
}

async function metricSums(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://${LOOPBACK}:${port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^(vera_(?:propose|disk_log_sync|apply)_seconds_(?:sum|count)) ([0-9.e+-]+)$/gm)) out.set(m[1]!, Number(m[2]));
  // GC by kind, summed; the event loop's lag since the scrape before (prom-client resets its monitor at each scrape).
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"[^}]*\} ([0-9.e+-]+)$/gm)) {
    const all = `nodejs_gc_duration_seconds_${m[1]!}`;
    out.set(all, (out.get(all) ?? 0) + Number(m[3]));
    out.set(`nodejs_gc_duration_seconds ${m[2]!}_${m[1]!}`, Number(m[3]));
  }
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_bucket\{le="(0\.01|\+Inf)"[^}]*\} ([0-9.e+-]+)$/gm)) out.set(`gc<=${m[1]!}`, (out.get(`gc<=${m[1]!}`) ?? 0) + Number(m[2]));
  for (const m of text.matchAll(/^nodejs_eventloop_lag_(max|p99)_seconds ([0-9.e+-]+)$/gm)) out.set(`lag ${m[1]!}`, Number(m[2]));
  // The histograms' buckets past 5 ms: how many proposals and syncs were slow, not only the mean.
  for (const m of text.matchAll(/^(vera_(?:propose|disk_log_sync)_seconds)_bucket\{le="(0\.005|0\.01|0\.02|\+Inf)"\} ([0-9.e+-]+)$/gm)) out.set(`${m[1]!}<=${m[2]!}`, Number(m[3]));
  return out;
}

const fmt = (s: Samples): string => {
  if (s.count === 0) return 'none';
  const x = s.summary();
  return `n ${x.count} p50 ${x.p50.toFixed(1)} p90 ${x.p90.toFixed(1)} p99 ${x.p99.toFixed(1)} max ${x.max.toFixed(1)}`;
};

async function measure(lib: Lib, url: string, leaderPort: number, queue: string, offsetMs: number): Promise<string> {
  const clients: VeraClient[] = [];
  const journalClient = async (): Promise<JournalClient> => {
    const c = await lib.connect(url, { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
    c.on('failed', () => undefined);
    clients.push(c);
    return new lib.JournalClient(c);
  };
  try {
    const admin = await journalClient();
    await admin.create(queue, { timeoutMs: 30_000, maxTimeouts: 100 });
    const j = await journalClient();
    // Which claim brought each job: when it was sent and answered (Date.now(), as processAt).
    const via = new Map<string, { sent: number; replied: number; by: 'claim' | 'done'; items: number; acksOut: number }>();
    /** doneMany requests in flight now, and the most in flight during each claim (a done entry ahead of it in the leader's queue). */
    let acksOut = 0;
    const claimsOut = new Set<{ acks: number }>();
    const timed = (sent: number, claim: Claim | null, by: 'claim' | 'done', acks: number): void => {
      const replied = Date.now();
      for (const i of claim?.items ?? []) via.set(i.key, { sent, replied, by, items: claim!.items.length, acksOut: acks });
    };
    const calls: WorkerCalls = {
      claim: async (max, waitMs) => {
        const sent = Date.now();
        const out = { acks: acksOut };
        claimsOut.add(out);
        const c = await j.claim(queue, { max, waitMs }).finally(() => claimsOut.delete(out));
        timed(sent, c, 'claim', out.acks);
        return c;
      },
      doneMany: async (items, claim) => {
        const sent = Date.now();
        acksOut++;
        for (const c of claimsOut) c.acks = Math.max(c.acks, acksOut);
        const r = await j.doneMany(queue, items, claim).finally(() => acksOut--);
        timed(sent, r.next, 'done', 0);
        return r;
      },
      doneManyHeld: async (items, holdMs) => {
        acksOut++;
        for (const c of claimsOut) c.acks = Math.max(c.acks, acksOut);
        return j.doneManyHeld(queue, items, holdMs).finally(() => acksOut--);
      },
      extend: (key, lease) => j.extend(queue, key, lease),
      release: async (key, lease, processAt, failure) => void (await j.release(queue, key, lease, processAt, { failure })),
      cancelWait: () => j.cancelWait(queue),
      closed: false,
    };
    const late = new Samples();
    const woken = new Samples();
    const wokenRound = new Samples();
    const askedLate = new Samples();
    const askedLateWait = new Samples();
    const askedLateRound = new Samples();
    const tally = new CompletionTally(Array.from({ length: COUNT }, (_, i) => `d-${i}`));
    const jobs: JobParts[] = [];
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const worker = new lib.JournalWorker(
      calls,
      { concurrency: 16, prefetch: 1000, waitMs: 1000, timeoutMs: 30_000, retryDelayMs: () => 1000 },
      async (item) => {
        const now = Date.now();
        const l = now - item.processAt;
        late.add(l);
        const v = via.get(item.key);
        if (v !== undefined) jobs.push({ late: l, due: item.processAt, ...v, started: now });
        if (v !== undefined) {
          if (v.sent <= item.processAt) {
            woken.add(l);
            wokenRound.add(v.replied - item.processAt);
          } else {
            askedLate.add(l);
            askedLateWait.add(v.sent - item.processAt);
            askedLateRound.add(v.replied - v.sent);
          }
        }
        tally.handled(item.key);
      },
    );
    worker.start();
    const before = await metricSums(leaderPort);
    const now = Date.now();
    await admin.add(
      queue,
      Array.from({ length: COUNT }, (_, i) => ({ key: `d-${i}`, data: 'x'.repeat(64), processAt: now + 200 + Math.round(offsetMs + (SPAN_MS * i) / COUNT) })),
    );
    await tally.allHandled();
    const after = await metricSums(leaderPort);
    loop.disable();
    await worker.stop();
    const delta = (name: string): number => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    const slowOver = (name: string, le: string): number => delta(`${name}<=+Inf`) - delta(`${name}<=${le}`);
    const mean = (name: string): string => {
      const n = (after.get(`${name}_count`) ?? 0) - (before.get(`${name}_count`) ?? 0);
      const s = (after.get(`${name}_sum`) ?? 0) - (before.get(`${name}_sum`) ?? 0);
      return `${n} x ${n === 0 ? '-' : ((s / n) * 1000).toFixed(2)} ms`;
    };
    return [
      `late ${fmt(late)}`,
      `  woken (claim waited): late ${fmt(woken)}; due->reply ${fmt(wokenRound)}`,
      `  asked late (fell due with no claim waiting): late ${fmt(askedLate)}; due->sent ${fmt(askedLateWait)}; sent->reply ${fmt(askedLateRound)}`,
      `  leader: propose ${mean('vera_propose_seconds')}, log sync ${mean('vera_disk_log_sync_seconds')}, apply ${mean('vera_apply_seconds')}, gc ${mean('nodejs_gc_duration_seconds')}`,
      `  leader slow: propose >5/>10/>20 ms ${['0.005', '0.01', '0.02'].map((le) => slowOver('vera_propose_seconds', le)).join('/')}, log sync >5/>10/>20 ms ${['0.005', '0.01', '0.02'].map((le) => slowOver('vera_disk_log_sync_seconds', le)).join('/')}`,
      `  leader event loop lag over the scenario p99 ${((after.get('lag p99') ?? NaN) * 1000).toFixed(1)} max ${((after.get('lag max') ?? NaN) * 1000).toFixed(1)} ms; GC pauses over 10 ms ${delta('gc<=+Inf') - delta('gc<=0.01')}; by kind ${['minor', 'major', 'incremental', 'weakcb'].map((k) => `${k} ${mean(`nodejs_gc_duration_seconds ${k}`)}`).join(', ')}`,
      `  bench process event loop delay p99 ${(loop.percentile(99) / 1e6).toFixed(1)} max ${(loop.max / 1e6).toFixed(1)} ms`,
      tail(jobs),
    ].join('\n');
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
  }
}

interface JobParts {
  readonly late: number;
  readonly due: number;
  /** When the request that brought it was sent and answered, which it was, how many items it brought, doneMany requests in flight beside it. */
  readonly sent: number;
  readonly replied: number;
  readonly by: 'claim' | 'done';
  readonly items: number;
  readonly acksOut: number;
  /** When its handler started. */
  readonly started: number;
}

/**
 * The slowest 5% (p95 to p100) taken apart: the share woken / asked late / brought by a done,
 * and per part the median over them: wait before the request (due->sent, 0 when woken), the
 * request's own time from the due date or its sending (the round), the reply to the handler's
 * start; how many came in a claim that had a doneMany in flight beside it, and how many items
 * their requests brought. Set against the same for all jobs (p50 of each part).
 */
function tail(jobs: readonly JobParts[]): string {
  if (jobs.length < 20) return '  tail: too few jobs';
  const sorted = [...jobs].sort((a, b) => a.late - b.late);
  const slow = sorted.slice(Math.floor(sorted.length * 0.95));
  const med = (xs: number[]): string => {
    if (xs.length === 0) return '-';
    const s = [...xs].sort((a, b) => a - b);
    return String(s[Math.floor(s.length / 2)]);
  };
  const describe = (set: readonly JobParts[]): string => {
    const woken = set.filter((j) => j.sent <= j.due);
    const late = set.filter((j) => j.sent > j.due);
    return [
      `n ${set.length}: woken ${woken.length} (by done ${woken.filter((j) => j.by === 'done').length}), asked late ${late.length} (by done ${late.filter((j) => j.by === 'done').length})`,
      `late p50 ${med(set.map((j) => j.late))}`,
      `woken due->reply p50 ${med(woken.map((j) => j.replied - j.due))}`,
      `asked late due->sent p50 ${med(late.map((j) => j.sent - j.due))} sent->reply p50 ${med(late.map((j) => j.replied - j.sent))}`,
      `reply->start p50 ${med(set.map((j) => j.started - j.replied))} max ${Math.max(...set.map((j) => j.started - j.replied))}`,
      `claim with a done in flight ${set.filter((j) => j.by === 'claim' && j.acksOut > 0).length}`,
      `items per request p50 ${med(set.map((j) => j.items))}`,
    ].join('; ');
  };
  const list = slow
    .slice(-8)
    .map((j) => `${j.late}${j.sent <= j.due ? 'w' : 'l'}${j.by === 'done' ? 'd' : ''}(${j.sent - j.due}/${j.replied - j.sent}/${j.started - j.replied}${j.acksOut > 0 ? '+a' : ''})`)
    .join(' ');
  return `  all: ${describe(jobs)}\n  p95-p100: ${describe(slow)}\n  slowest (late, w|l, d=by done, (sent-due/reply-sent/start-reply)): ${list}`;
}

/**
 * `--paired 1`: the worker helpers of the checkouts side by side on one cluster (the first
 * checkout's), each on its own journal with the same dates (offset by a share of the gap, the
 * offset turning between rounds), so both meet the same load; the servers are the same.
 * `--paired clusters`: each checkout on its own cluster, all running at once with the same
 * dates, so that servers are compared under the same load too.
 */
async function paired(logDir: string, here: string): Promise<void> {
  const own = args.get('paired') === 'clusters';
  const clusters = (own ? checkouts : [checkouts[0]!]).map((c) => new VeraCluster({ logDir, inspector: false, ...(c === here ? {} : { checkout: c }) }));
  try {
    await Promise.all(clusters.map((c) => c.start()));
    const ports = await Promise.all(
      clusters.map(async (c) => {
        const leader = await c.leader();
        return c.members().find((m) => m.id === leader)!.clientPort;
      }),
    );
    const portOf = (i: number): number => ports[own ? i : 0]!;
    const urlOf = (i: number): string => `ws://${LOOPBACK}:${portOf(i)}`;
    const libs = await Promise.all(checkouts.map((c) => libOf(c)));
    await Promise.all(libs.map((lib, i) => measure(lib, urlOf(i), portOf(i), `warm-${i}`, 0)));
    for (let round = 0; round < rounds; round++) {
      const load = (await import('node:os')).loadavg()[0]!.toFixed(2);
      const gap = SPAN_MS / COUNT;
      const lines = await Promise.all(libs.map((lib, i) => measure(lib, urlOf(i), portOf(i), `late-${round}-${i}`, ((i + round) % libs.length) * (gap / libs.length))));
      lines.forEach((l, i) => console.log(`round ${round} ${i}:${checkouts[i]!.split('/').pop()} (load ${load}, paired${own ? ', own clusters' : ''})\n${l}`));
    }
  } finally {
    await Promise.all(clusters.map((c) => c.stop()));
  }
}

async function libOf(checkout: string): Promise<Lib> {
  return {
    ...((await import(join(checkout, 'dist/client/index.js'))) as { connect: Lib['connect'] }),
    ...((await import(join(checkout, 'dist/families/journal/client.js'))) as { JournalClient: Lib['JournalClient'] }),
    ...((await import(join(checkout, 'dist/families/journal/client-worker.js'))) as { JournalWorker: Lib['JournalWorker'] }),
  };
}

async function main(): Promise<void> {
  const logDir = mkdtempSync(join(tmpdir(), 'vera-lateness-parts-'));
  const here = resolve(import.meta.dirname, '../..');
  if (args.has('paired')) return paired(logDir, here);
  for (let round = 0; round < rounds; round++) {
    for (const [ci, checkout] of checkouts.entries()) {
      const cluster = new VeraCluster({ logDir, inspector: false, ...(checkout === here ? {} : { checkout }) });
      await cluster.start();
      try {
        const leader = await cluster.leader();
        const port = cluster.members().find((m) => m.id === leader)!.clientPort;
        const lib = await libOf(checkout);
        const url = `ws://${LOOPBACK}:${port}`;
        // Unmeasured first: compiled and settled.
        await measure(lib, url, port, `warm-${round}`, 0);
        const load = (await import('node:os')).loadavg()[0]!.toFixed(2);
        console.log(`round ${round} ${ci}:${checkout.split('/').pop()} (load ${load})\n${await measure(lib, url, port, `late-${round}`, 0)}`);
      } finally {
        await cluster.stop();
      }
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
