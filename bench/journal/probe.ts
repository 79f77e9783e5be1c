// A quick A/B probe of the journal alone (no BullMQ, no pg-boss): J1's delayed-job
// lateness and its throughput at a given worker count, on builds (checkouts with
// bin/ and dist/) taken in turn, round after round, so that a shared machine's load
// falls on each alike. Only the ratios within one run mean anything.
//
//   tsx bench/journal/probe.ts --checkouts /tmp/before,. --rounds 3 --scenarios lateness,tp256
//
// Scenarios: `lateness` (1000 jobs due one every 3 ms from 200 ms on, 16 idle
// workers, as J1), `tpN` (J1's throughput level with N workers), `tpN+` (the same with
// the features on: a retry policy on the journal and a client watching its lifecycle
// events, so that their cost shows against `tpN` in the same run). A `--profile DIR`
// takes a CPU profile of the leader (or with `--profile-member follower`, of a follower) during
// each tp scenario (DIR/<label>-<scenario>-<round>-<n>.cpuprofile). Each tp line gives CPU time
// per job of the leader, a follower and the workers' client, steadier than jobs/s under load.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { VeraClient } from '../../src/client/index.js';
import type { JournalClient } from '../../src/families/journal/client.js';
import { readProcCpuSeconds } from '../lib/cpu.js';
import { profileWhile } from '../lib/cpu-profile.js';
import WebSocket from 'ws';
import { LOOPBACK } from '../lib/net.js';
import { Samples } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';
import { CompletionTally } from './tally.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const checkouts = (args.get('checkouts') ?? '.').split(',').map((c) => resolve(c));
const rounds = Number(args.get('rounds') ?? '3');
const scenarios = (args.get('scenarios') ?? 'lateness').split(',');
const profileDir = args.get('profile');
/** Whose CPU the profile samples: the leader (default) or a follower. */
const profiled = args.get('profile-member') ?? 'leader';
const JOBS: Record<number, number> = { 1: 2000, 16: 20000, 256: 40000 };

interface Open {
  /** The checkout's own client (its dist/): the worker helper is part of what is compared. */
  readonly lib: { connect: typeof import('../../src/client/index.js').connect; JournalClient: typeof JournalClient };
  readonly cluster: VeraCluster;
  readonly url: string;
  readonly clients: VeraClient[];
}

async function open(checkout: string, logDir: string): Promise<Open> {
  const here = resolve(import.meta.dirname, '../..');
  const cluster = new VeraCluster({ logDir, inspector: profileDir !== undefined, ...(checkout === here ? {} : { checkout }) });
  await cluster.start();
  const leader = await cluster.leader();
  const url = `ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`;
  const { connect } = (await import(join(checkout, 'dist/client/index.js'))) as typeof import('../../src/client/index.js');
  const { JournalClient } = (await import(join(checkout, 'dist/families/journal/client.js'))) as typeof import('../../src/families/journal/client.js');
  return { lib: { connect, JournalClient }, cluster, url, clients: [] };
}

async function journalClient(o: Open): Promise<JournalClient> {
  const c = await o.lib.connect(o.url, { connectTimeoutMs: 20_000, requestTimeoutMs: 30_000 });
  c.on('failed', () => undefined);
  o.clients.push(c);
  return new o.lib.JournalClient(c);
}

async function lateness(o: Open, queue: string): Promise<string> {
  const admin = await journalClient(o);
  await admin.create(queue, { timeoutMs: 30_000, maxTimeouts: 100 });
  const count = 1000;
  const spanMs = 3000;
  const late = new Samples();
  const tally = new CompletionTally(Array.from({ length: count }, (_, i) => `d-${i}`));
  let early = 0;
  const worker = (await journalClient(o)).process(
    queue,
    async (item) => {
      const l = Date.now() - item.processAt;
      if (l < 0) early++;
      late.add(l);
      tally.handled(item.key);
    },
    { concurrency: 16, waitMs: 1_000 },
  );
  const now = Date.now();
  const jobs = Array.from({ length: count }, (_, i) => ({ key: `d-${i}`, data: 'x'.repeat(64), processAt: now + 200 + Math.round((spanMs * i) / count) }));
  await admin.add(queue, jobs);
  await tally.allHandled();
  await worker.stop();
  const s = late.summary();
  return `lateness p50 ${s.p50.toFixed(1)} p90 ${s.p90.toFixed(1)} p99 ${s.p99.toFixed(1)} max ${s.max.toFixed(1)} ms (early ${early})`;
}

async function throughput(o: Open, queue: string, workers: number, profileTo: string | null, features = false): Promise<string> {
  const admin = await journalClient(o);
  // With the features on: a retry policy on the journal, and a client following its lifecycle events.
  await admin.create(queue, { timeoutMs: 30_000, maxTimeouts: 100, ...(features ? { retry: { attempts: 3, backoff: 'exponential', delayMs: 100, maxDelayMs: 1000 } } : {}) });
  const jobs = JOBS[workers] ?? 20000;
  const keys = Array.from({ length: jobs }, (_, i) => `${queue}-${i}`);
  for (let i = 0; i < jobs; i += 1000) await admin.add(queue, keys.slice(i, i + 1000).map((key) => ({ key, data: 'x'.repeat(64) })));
  const tally = new CompletionTally(keys);
  let first = 0;
  let end = 0;
  const run = async (): Promise<void> => {
    const worker = (await journalClient(o)).process(
      queue,
      async (item) => {
        if (first === 0) first = performance.now();
        tally.handled(item.key);
      },
      { concurrency: workers, waitMs: 1_000 },
    );
    await tally.allHandled();
    end = performance.now();
    await worker.stop();
  };
  let events = 0;
  const watcher = features ? (await journalClient(o)).watchEvents(queue, () => void events++, { waitMs: 1_000 }) : null;
  const leader = await o.cluster.leader();
  const cpu = startCpuPerJob(o, leader);
  if (profileTo === null) await run();
  else {
    const member = profiled === 'leader' ? leader : o.cluster.members().find((m) => m.id !== leader)!.id;
    const url = o.cluster.inspectorUrl(member)!;
    const profile = args.get('profile-kind') === 'heap' ? await sampleAllocations(url, run) : await profileWhile(url, run);
    writeFileSync(profileTo, JSON.stringify(profile));
  }
  const spent = cpu(jobs);
  watcher?.stop();
  return `${workers} workers${features ? ' (retry policy, events watched)' : ''}: ${Math.round(jobs / ((end - first) / 1000))} jobs/s, ${spent}${features ? `, ${events} events seen` : ''}`;
}

/**
 * What the member allocates while `during` runs (every allocation sampled, kept or collected since):
 * a heap profile (.heapprofile, as Chrome's devtools read it) with `--profile-kind heap`.
 */
async function sampleAllocations(inspectorUrl: string, during: () => Promise<void>): Promise<unknown> {
  const ws = new WebSocket(inspectorUrl, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
  let nextId = 1;
  const answers = new Map<number, (result: unknown) => void>();
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) answers.get(msg.id)?.(msg.result);
  });
  const send = (method: string, params: Record<string, unknown> = {}): Promise<unknown> =>
    new Promise((resolve) => {
      const id = nextId++;
      answers.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  try {
    await send('HeapProfiler.enable');
    await send('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    await during();
    return ((await send('HeapProfiler.stopSampling')) as { profile: unknown }).profile;
  } finally {
    ws.close();
  }
}

/**
 * CPU time per job (microseconds) of the leader, the followers (mean) and this process (the
 * workers' client): on a loaded machine it moves far less than jobs/s does, so a change's
 * cost shows in fewer rounds. It covers the claims and dones (the jobs are added before).
 */
function startCpuPerJob(o: Open, leader: string): (jobs: number) => string {
  const members = o.cluster.members().filter((m) => m.pid !== null);
  const before = new Map(members.map((m) => [m.id, readProcCpuSeconds(m.pid!) ?? 0]));
  const self = process.cpuUsage();
  return (jobs) => {
    const us = (seconds: number): number => Math.round((seconds * 1e6) / jobs);
    let followers = 0;
    let leaderUs = 0;
    for (const m of members) {
      const spent = us((readProcCpuSeconds(m.pid!) ?? 0) - before.get(m.id)!);
      if (m.id === leader) leaderUs = spent;
      else followers += spent / (members.length - 1);
    }
    const client = process.cpuUsage(self);
    return `cpu/job leader ${leaderUs} us, follower ${Math.round(followers)} us, client ${us((client.user + client.system) / 1e6)} us`;
  };
}

async function main(): Promise<void> {
  const logDir = mkdtempSync(join(tmpdir(), 'vera-journal-probe-'));
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  console.log(`logs in ${logDir}`);
  for (let round = 0; round < rounds; round++) {
    for (const [ci, checkout] of checkouts.entries()) {
      const label = `${ci}:${checkout.split('/').pop()}`;
      const o = await open(checkout, join(logDir));
      try {
        // One unmeasured level first, as J1 does: measured compiled and settled.
        await throughput(o, `warm-${round}`, 16, null);
        for (const [si, s] of scenarios.entries()) {
          const features = s.endsWith('+');
          const profileTo = profileDir === undefined ? null : join(profileDir, `${ci}-${s}-${round}-${si}.cpuprofile`);
          const line = s === 'lateness' ? await lateness(o, `late-${round}-${si}`) : await throughput(o, `tp-${round}-${si}`, Number(s.slice(2).replace('+', '')), profileTo, features);
          console.log(`round ${round} ${label} ${s}: ${line}`);
        }
      } finally {
        for (const c of o.clients) await c.close().catch(() => undefined);
        await o.cluster.stop();
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
