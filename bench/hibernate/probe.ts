// A focused probe of H1's stall measurements (issue 34), for finding where unrelated
// writes wait while a unit freezes and thaws: one 3-member cluster, the active set
// (as H1 has it) writing throughout, one large unit frozen and thawed by hand a few
// rounds, and idle 100-item units frozen at the idle detector's pace. Each run is
// judged against the active set's writes just before it, in the same cluster.
// Optionally takes a CPU profile of the leader during one large freeze and thaw.
//   tsx bench/hibernate/probe.ts [--large N] [--rounds R] [--paced S] [--profile DIR]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { profileWhile, summarizeProfile } from '../lib/cpu-profile.js';
import { ActiveSet, leaderClient, pushItems } from './probe-tools.js';
import { type LatencySummary } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';

const { values: args } = parseArgs({
  options: {
    large: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '2' },
    paced: { type: 'string', default: '2' },
    profile: { type: 'string' },
    active: { type: 'string', default: '100' },
  },
});
const LARGE_ITEMS = Number(args.large);
const ROUNDS = Number(args.rounds);
const PACED_ROUNDS = Number(args.paced);
const ACTIVE = Number(args.active);
const PACE = 8;
const PACED_MS = 4_000;
const BEFORE_MS = 2_500;

const log = (m: string): void => console.log(`[probe ${new Date().toISOString().slice(11, 19)}] ${m}`);
const fmt = (s: LatencySummary): string => `p50 ${s.p50.toFixed(2)} p99 ${s.p99.toFixed(2)} max ${s.max.toFixed(1)} n ${s.count}`;

async function main(): Promise<void> {
  const logDir = mkdtempSync(join(tmpdir(), 'hib-probe-'));
  console.log(`logs in ${logDir}`);
  const cluster = new VeraCluster({ logDir, inspector: args.profile !== undefined });
  const opened: VeraClient[] = [];
  try {
    await cluster.start();
    const open = (): Promise<VeraClient> => leaderClient(cluster, opened);
    const set = await ActiveSet.open(cluster, opened, ACTIVE, { persistent: true, stamp: () => performance.now(), log });
    const activeWrites = (done: () => boolean, slow?: Array<[number, number]>): Promise<LatencySummary> => set.write(done, slow);
    const forMs = (ms: number): (() => boolean) => {
      const until = performance.now() + ms;
      return () => performance.now() >= until;
    };
    await pushItems(set.clients, ACTIVE * 100, (n) => `/users/u${n % ACTIVE}/items`);
    const idleUnits = PACE * (PACED_MS / 1000) * PACED_ROUNDS;
    await pushItems(set.clients, idleUnits * 100, (n) => `/idle/u${n % idleUnits}/items`);
    log(`loaded ${ACTIVE} active and ${idleUnits} idle units`);
    await activeWrites(forMs(2_000)); // warm up

    const hib = new HibernateClient(await open());
    const whileDoing = (work: () => Promise<void>, slow?: Array<[number, number]>): Promise<{ seconds: number; writes: LatencySummary }> => set.whileDoing(work, slow);
    const ratios: Record<string, number[]> = { paced: [], freeze: [], thaw: [] };

    let k = 0;
    for (let round = 0; round < PACED_ROUNDS; round++) {
      const before = await activeWrites(forMs(PACED_MS));
      const r = await whileDoing(async () => {
        const p0 = performance.now();
        for (let tick = 0; tick < PACED_MS / 1000; tick++) {
          const due = p0 + tick * 1000;
          if (performance.now() < due) await new Promise((res) => setTimeout(res, due - performance.now()));
          const batch = Array.from({ length: PACE }, () => `/idle/u${k++}`);
          for (const v of await hib.freezeMany(batch)) if (!v.frozen) log(`${v.unit} not frozen: ${v.why}`);
        }
        // As H1: the writes go on for the rest of the period.
        const end = p0 + PACED_MS;
        if (performance.now() < end) await new Promise((res) => setTimeout(res, end - performance.now()));
      });
      ratios.paced!.push(r.writes.p99 / before.p99);
      log(`paced ${PACE}/s: before ${fmt(before)} | during ${fmt(r.writes)} | ratio ${(r.writes.p99 / before.p99).toFixed(2)}`);
    }

    if (LARGE_ITEMS > 0) {
      await pushItems(set.clients, LARGE_ITEMS, (n) => (n % 2 === 0 ? '/large/unit/a' : '/large/unit/b'));
      log(`loaded a ${LARGE_ITEMS}-item unit`);
      for (let round = 0; round < ROUNDS; round++) {
        const before = await whileDoing(() => new Promise((res) => setTimeout(res, BEFORE_MS)));
        const slowF: Array<[number, number]> = [];
        const doFreeze = async (): Promise<void> => {
          const v = await hib.freeze('/large/unit');
          if (!v.frozen) log(`large not frozen: ${v.why}`);
        };
        const leader = await cluster.leader();
        const url = cluster.inspectorUrl(leader);
        let f: { seconds: number; writes: LatencySummary };
        if (args.profile !== undefined && url !== null && round === 0) {
          let out!: { seconds: number; writes: LatencySummary };
          const prof = await profileWhile(url, async () => {
            out = await whileDoing(doFreeze, slowF);
          });
          writeFileSync(join(args.profile, 'freeze.cpuprofile'), JSON.stringify(prof));
          const s = summarizeProfile(prof, 25);
          log(`freeze profile busy ${s.busyMs.toFixed(0)} of ${s.totalMs.toFixed(0)} ms: ${s.topFunctions.map((e) => `${e.name} ${e.selfMs.toFixed(0)}`).join(', ')}`);
          f = out;
        } else f = await whileDoing(doFreeze, slowF);
        const before2 = await whileDoing(() => new Promise((res) => setTimeout(res, BEFORE_MS)));
        const slowT: Array<[number, number]> = [];
        const doThaw = async (): Promise<void> => {
          const v = await hib.thaw('/large/unit');
          if (v.items !== LARGE_ITEMS) log(`large thawed ${v.items}`);
        };
        let t: { seconds: number; writes: LatencySummary };
        if (args.profile !== undefined && url !== null && round === 0) {
          let out!: { seconds: number; writes: LatencySummary };
          const prof = await profileWhile(url, async () => {
            out = await whileDoing(doThaw, slowT);
          });
          writeFileSync(join(args.profile, 'thaw.cpuprofile'), JSON.stringify(prof));
          const s = summarizeProfile(prof, 25);
          log(`thaw profile busy ${s.busyMs.toFixed(0)} of ${s.totalMs.toFixed(0)} ms: ${s.topFunctions.map((e) => `${e.name} ${e.selfMs.toFixed(0)}`).join(', ')}`);
          t = out;
        } else t = await whileDoing(doThaw, slowT);
        ratios.freeze!.push(f.writes.p99 / before.writes.p99);
        ratios.thaw!.push(t.writes.p99 / before2.writes.p99);
        const slowest = (s: Array<[number, number]>): string => {
          if (s.length === 0) return '';
          const t0 = s[0]![0];
          return [...s].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([at, ms]) => `${((at - t0) / 1000).toFixed(2)}s@${Math.round(performance.timeOrigin + at)}:${ms.toFixed(0)}`).join(' ');
        };
        log(`large freeze ${f.seconds.toFixed(2)} s: before ${fmt(before.writes)} | during ${fmt(f.writes)} | ratio ${(f.writes.p99 / before.writes.p99).toFixed(2)} | slowest ${slowest(slowF)}`);
        log(`large thaw ${t.seconds.toFixed(2)} s: before ${fmt(before2.writes)} | during ${fmt(t.writes)} | ratio ${(t.writes.p99 / before2.writes.p99).toFixed(2)} | slowest ${slowest(slowT)}`);
      }
    }
    log(`ratios ${JSON.stringify(Object.fromEntries(Object.entries(ratios).map(([k2, v]) => [k2, v.map((x) => Number(x.toFixed(2)))])))}`);
  } finally {
    for (const c of opened) await c.close().catch(() => undefined);
    await cluster.stop();
  }
}

await main();
