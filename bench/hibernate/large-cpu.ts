// What a large unit's freeze and thaw cost the members in CPU, and how that CPU is spread
// over time (issue 34): the others' write latency depends on the machine, but the CPU the
// work takes, and its peaks, hardly do, so builds can be compared on a shared machine.
// For each build (a checkout with dist/ built; `.` is this one), one 3-member cluster, a
// 100,000-item unit loaded, then rounds of freeze and thaw with no other load, the members'
// CPU (utime + stime, all threads) sampled every 100 ms. Builds are taken in turn, round
// after round.
// With `--profile DIR`, a CPU profile of one follower of the first build is taken during its
// first freeze and thaw (DIR/freeze.cpuprofile, DIR/thaw.cpuprofile). With `--load`, H1's
// active set writes throughout (16 pushes in flight), and each freeze and thaw is printed as
// a timeline of 500 ms slots: the members' cores and the p99 of the writes begun in the slot,
// after the same for a window of the same length just before.
//   tsx bench/hibernate/large-cpu.ts --checkouts /tmp/base,. [--rounds 3] [--large 100000] [--profile DIR]
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { readProcCpuSeconds } from '../lib/cpu.js';
import { profileWhile, summarizeProfile } from '../lib/cpu-profile.js';
import { VeraCluster } from '../systems/vera.js';
import { ActiveSet, leaderClient, pushItems } from './probe-tools.js';
import { Samples } from '../lib/samples.js';

const { values: args } = parseArgs({
  options: {
    checkouts: { type: 'string', default: '.' },
    rounds: { type: 'string', default: '3' },
    large: { type: 'string', default: '100000' },
    profile: { type: 'string' },
    load: { type: 'boolean', default: false },
  },
});
const LARGE = '/large/unit';
const ITEMS = Number(args.large);
const SAMPLE_MS = 100;

const log = (m: string): void => console.log(`[large-cpu ${new Date().toISOString().slice(11, 19)}] ${m}`);

interface Spread {
  readonly seconds: number;
  /** CPU seconds of the three members over the work. */
  readonly cpu: number;
  /** The members' cores in use, per 100 ms window: mean, p90, max. */
  readonly mean: number;
  readonly p90: number;
  readonly max: number;
  /** [ms since the start, cores] per sample. */
  readonly windows: ReadonlyArray<readonly [number, number]>;
}

/** Runs `work` while sampling the members' CPU every SAMPLE_MS. */
async function sampled(pids: readonly number[], work: () => Promise<void>): Promise<Spread> {
  const total = (): number => pids.reduce((s, pid) => s + (readProcCpuSeconds(pid) ?? 0), 0);
  const started = performance.now();
  const first = total();
  const windows: Array<readonly [number, number]> = [];
  let last = first;
  let lastAt = started;
  const timer = setInterval(() => {
    const now = performance.now();
    const cpu = total();
    windows.push([now - started, (cpu - last) / ((now - lastAt) / 1000)]);
    last = cpu;
    lastAt = now;
  }, SAMPLE_MS);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = total() - first;
  const sorted = windows.map(([, c]) => c).sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { seconds, cpu, mean: cpu / seconds, p90: at(0.9), max: at(1), windows };
}

const fmt = (s: Spread): string => `${s.seconds.toFixed(1)} s, cpu ${s.cpu.toFixed(2)} s, cores mean ${s.mean.toFixed(2)} p90 ${s.p90.toFixed(2)} max ${s.max.toFixed(2)}`;

/** Per 500 ms slot from `started`: the mean cores and the p99 of the writes begun in it. */
function timeline(spread: Spread, writes: ReadonlyArray<readonly [number, number]>, started: number): string {
  const SLOT = 500;
  const slots = Math.ceil((spread.seconds * 1000) / SLOT);
  const out: string[] = [];
  for (let k = 0; k < slots; k++) {
    const cores = spread.windows.filter(([t]) => t > k * SLOT && t <= (k + 1) * SLOT).map(([, c]) => c);
    const mean = cores.length === 0 ? 0 : cores.reduce((a, b) => a + b, 0) / cores.length;
    const s = new Samples();
    for (const [at, ms] of writes) if (at - started >= k * SLOT && at - started < (k + 1) * SLOT) s.add(ms);
    const w = s.summary();
    out.push(`${(k * SLOT / 1000).toFixed(1)}s ${mean.toFixed(2)}c ${w.count > 0 ? w.p99.toFixed(0) : '-'}`);
  }
  return out.join(' | ');
}

interface Side {
  readonly name: string;
  readonly active: ActiveSet | null;
  readonly cluster: VeraCluster;
  readonly hib: HibernateClient;
  readonly opened: VeraClient[];
}

/** The inspector URL of a member that does not lead. */
async function followerInspector(cluster: VeraCluster): Promise<string> {
  const leader = await cluster.leader();
  const follower = cluster.members().find((m) => m.id !== leader);
  const url = follower === undefined ? null : cluster.inspectorUrl(follower.id);
  if (url === null) throw new Error('no follower with an inspector');
  return url;
}

async function main(): Promise<void> {
  const sides: Side[] = [];
  try {
    for (const checkout of args.checkouts.split(',')) {
      const dir = resolve(checkout);
      const cluster = new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 'large-cpu-')), inspector: args.profile !== undefined && sides.length === 0, ...(dir === resolve('.') ? {} : { checkout: dir }) });
      await cluster.start();
      const opened: VeraClient[] = [];
      const pushers = await Promise.all(Array.from({ length: 8 }, () => leaderClient(cluster, opened)));
      await pushItems(pushers, ITEMS, (n) => (n % 2 === 0 ? `${LARGE}/a` : `${LARGE}/b`));
      const active = args.load ? await ActiveSet.open(cluster, opened, 100, { persistent: false, stamp: () => performance.now(), log }) : null;
      if (active !== null) await pushItems(active.clients, 100 * 100, (n) => `/users/u${n % 100}/items`);
      sides.push({ name: checkout, cluster, active, hib: new HibernateClient(await leaderClient(cluster, opened)), opened });
      log(`${checkout}: loaded a ${ITEMS}-item unit`);
    }
    const lastFreeze = new Map<string, number>();
    const lastThaw = new Map<string, number>();
    const results = new Map<string, { freeze: Spread[]; thaw: Spread[] }>(sides.map((s) => [s.name, { freeze: [], thaw: [] }]));
    for (let round = 0; round < Number(args.rounds); round++) {
      for (const side of sides) {
        const pids = side.cluster.members().map((m) => m.pid).filter((p): p is number => p !== null);
        const profiled = args.profile !== undefined && side === sides[0] && round === 0 ? await followerInspector(side.cluster) : null;
        const maybeProfiled = async (name: string, work: () => Promise<void>): Promise<void> => {
          if (profiled === null) return work();
          const prof = await profileWhile(profiled, work);
          mkdirSync(args.profile!, { recursive: true });
          writeFileSync(join(args.profile!, `${name}.cpuprofile`), JSON.stringify(prof));
          const s = summarizeProfile(prof, 20);
          log(`${name} profile of a follower: busy ${s.busyMs.toFixed(0)} of ${s.totalMs.toFixed(0)} ms: ${s.topFunctions.map((e) => `${e.name} ${e.selfMs.toFixed(0)}`).join(', ')}`);
        };
        const loaded = async (name: string, work: () => Promise<void>): Promise<Spread> => {
          if (side.active === null) return sampled(pids, () => maybeProfiled(name, work));
          const before: Array<[number, number]> = [];
          const b0 = performance.now();
          const lastSeconds = name === 'freeze' ? (lastFreeze.get(side.name) ?? 10) : (lastThaw.get(side.name) ?? 5);
          const beforeSpread = await sampled(pids, async () => void (await side.active!.whileDoing(() => new Promise((go) => setTimeout(go, lastSeconds * 1000)), before)));
          const during: Array<[number, number]> = [];
          const d0 = performance.now();
          let spread!: Spread;
          const w = await side.active.whileDoing(async () => {
            spread = await sampled(pids, () => maybeProfiled(name, work));
          }, during);
          (name === 'freeze' ? lastFreeze : lastThaw).set(side.name, spread.seconds);
          const p99 = (xs: ReadonlyArray<readonly [number, number]>): number => {
            const s = new Samples();
            for (const [, ms] of xs) s.add(ms);
            return s.summary().p99;
          };
          log(`${side.name} ${name}: writes p99 before ${p99(before).toFixed(1)} during ${w.writes.p99.toFixed(1)} ms (${(w.writes.p99 / p99(before)).toFixed(2)}x)`);
          log(`  before: ${timeline(beforeSpread, before, b0)}`);
          log(`  during: ${timeline(spread, during, d0)}`);
          return spread;
        };
        const freeze = await loaded('freeze', async () => {
          const v = await side.hib.freeze(LARGE);
          if (!v.frozen) throw new Error(`not frozen: ${v.why}`);
        });
        // The compaction after a freeze runs some seconds later: let it pass before the thaw's window.
        await new Promise((go) => setTimeout(go, 15_000));
        const thaw = await loaded('thaw', async () => {
          const v = await side.hib.thaw(LARGE);
          if (v.items !== ITEMS) throw new Error(`thawed ${v.items} items`);
        });
        await new Promise((go) => setTimeout(go, 2_000));
        results.get(side.name)!.freeze.push(freeze);
        results.get(side.name)!.thaw.push(thaw);
        log(`${side.name} round ${round}: freeze ${fmt(freeze)} | thaw ${fmt(thaw)}`);
      }
    }
  } finally {
    for (const s of sides) {
      for (const c of s.opened) await c.close().catch(() => undefined);
      await s.cluster.stop();
    }
  }
}

await main();
