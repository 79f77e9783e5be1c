// What applying J1's entries costs one member, in this process, without a cluster: a
// state machine on a fresh LevelDB (with the store's checked values) applies the adds of
// `--jobs` jobs, then the entries a busy worker sends (a doneMany of the last claim's
// jobs that claims as many again), several to an applyMany as a member applies them when
// they commit together, and each outcome's lifecycle events derived as the server does.
// CPU time and GC time per job of that second phase, per build, builds taken in turn round
// after round (A B A B ...): on a loaded machine the ratio within a run is what counts.
//
//   nice -n 10 npx tsx bench/journal/apply-ab.ts --checkouts /tmp/before,. --rounds 6
//
// Each checkout needs dist/ built (npm run build); `.` is this one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { ClassicLevel } from 'classic-level';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1] ?? '');
const checkouts = (args.get('checkouts') ?? '.').split(',').map((c) => resolve(c));
const rounds = Number(args.get('rounds') ?? '4');
const jobs = Number(args.get('jobs') ?? '40000');
/** Jobs per doneMany (and per claim): what J1's worker sends once its prefetch is full. */
const batch = Number(args.get('batch') ?? '1000');
/** Entries per applyMany: entries that commit together are applied together. */
const perApply = Number(args.get('per-apply') ?? '2');

interface Build {
  readonly StateMachine: typeof import('../../src/statemachine/state-machine.js').StateMachine;
  readonly REGISTRY: typeof import('../../src/families/registry.js').REGISTRY;
  readonly encodeCommand: typeof import('../../src/families/commands.js').encodeCommand;
  readonly checkedValueEncoding: typeof import('../../src/raft/checked-values.js').checkedValueEncoding;
  readonly lifecycleEvents: typeof import('../../src/families/journal/lifecycle.js').lifecycleEvents;
}

async function load(checkout: string): Promise<Build> {
  const dist = join(checkout, 'dist');
  const at = async <T>(path: string): Promise<T> => (await import(join(dist, path))) as T;
  return {
    ...(await at<Pick<Build, 'StateMachine'>>('statemachine/state-machine.js')),
    ...(await at<Pick<Build, 'REGISTRY'>>('families/registry.js')),
    ...(await at<Pick<Build, 'encodeCommand'>>('families/commands.js')),
    ...(await at<Pick<Build, 'checkedValueEncoding'>>('raft/checked-values.js')),
    ...(await at<Pick<Build, 'lifecycleEvents'>>('families/journal/lifecycle.js')),
  };
}

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ['gc'] });

async function measure(b: Build): Promise<{ cpuUs: number; gcUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'vera-apply-ab-'));
  const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: b.checkedValueEncoding as never });
  await db.open();
  try {
    const sm = await b.StateMachine.open(db as never, b.REGISTRY);
    let index = 0;
    let now = 1_000_000;
    const entry = (command: Record<string, unknown>) => ({ index: ++index, term: 1, kind: 'command' as const, data: b.encodeCommand({ family: 'journal', ...command } as never, now) });
    const one = async (command: Record<string, unknown>): Promise<unknown> => {
      const [outcome] = await sm.applyMany([entry(command)]);
      if (!outcome!.result.ok) throw new Error(`${String(command.op)}: ${JSON.stringify(outcome!.result)}`);
      return (outcome!.result as { value: unknown }).value;
    };
    await one({ op: 'create', name: 'j', settings: { timeoutMs: 30_000, maxTimeouts: 100, priority: 100, expiresInMs: 0, maxItems: 1_000_000 } });
    const data = 'x'.repeat(64);
    for (let i = 0; i < jobs; i += 1000) await one({ op: 'add', name: 'j', items: Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({ key: `tp-${i + k}`, data })) });
    now += 10;
    // The first claim, then doneMany-and-claim entries until everything is done.
    let held = ((await one({ op: 'claim', name: 'j', max: batch })) as { lease: number; items: Array<{ key: string }> });
    let pending: Array<[string, number]> = held.items.map((it) => [it.key, held.lease]);
    const cpu = process.cpuUsage();
    const gcBefore = gcMs;
    let done = 0;
    while (pending.length > 0) {
      // Split what is held into perApply entries applied together.
      const size = Math.ceil(pending.length / perApply);
      const entries = [];
      for (let i = 0; i < pending.length; i += size) entries.push(entry({ op: 'doneMany', name: 'j', items: pending.slice(i, i + size), claim: size }));
      now += 1;
      const outcomes = await sm.applyMany(entries);
      pending = [];
      for (const o of outcomes) {
        if (!o.result.ok) throw new Error(JSON.stringify(o.result));
        const v = (o.result as { value: { done: number; next?: { lease: number; items: Array<{ key: string }> } } }).value;
        b.lifecycleEvents(v as never, o.index);
        done += v.done;
        for (const it of v.next?.items ?? []) pending.push([it.key, v.next!.lease]);
      }
    }
    const used = process.cpuUsage(cpu);
    if (done !== jobs) throw new Error(`${done} of ${jobs} done`);
    return { cpuUs: (used.user + used.system) / jobs, gcUs: ((gcMs - gcBefore) * 1000) / jobs };
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const builds = await Promise.all(checkouts.map(load));
  const results = checkouts.map(() => [] as Array<{ cpuUs: number; gcUs: number }>);
  for (let round = 0; round < rounds; round++) {
    for (const [i, b] of builds.entries()) {
      const r = await measure(b);
      results[i]!.push(r);
      console.log(`round ${round} ${i}:${checkouts[i]}: cpu ${r.cpuUs.toFixed(2)} us/job, gc ${r.gcUs.toFixed(2)} us/job`);
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [i, rs] of results.entries()) {
    console.log(`median ${i}:${checkouts[i]}: cpu ${median(rs.map((r) => r.cpuUs)).toFixed(2)} us/job, gc ${median(rs.map((r) => r.gcUs)).toFixed(2)} us/job (${rs.length} rounds)`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
