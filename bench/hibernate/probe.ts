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
import { connect, type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { profileWhile, summarizeProfile } from '../lib/cpu-profile.js';
import { LOOPBACK } from '../lib/net.js';
import { pushItems } from './probe-tools.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
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
    const open = async (): Promise<VeraClient> => {
      const leader = await cluster.leader();
      const c = await connect(`ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`, { connectTimeoutMs: 20_000, requestTimeoutMs: 60_000 });
      c.on('failed', () => undefined);
      opened.push(c);
      return c;
    };
    let pushers = await Promise.all(Array.from({ length: 8 }, () => open()));
    /** H1's active set: 16 in flight, ephemeral pushes to the active units, sessions ended after each run. */
    const activeWrites = async (done: () => boolean, slow?: Array<[number, number]>): Promise<LatencySummary> => {
      const samples = new Samples();
      await Promise.all(
        Array.from({ length: 16 }, async (_, w) => {
          for (let n = 0; !done(); n++) {
            const t = performance.now();
            try {
              await pushers[w % pushers.length]!.push(`/users/u${(w * 7919 + n) % ACTIVE}/items`, { n }, { persistent: true, watch: false });
            } catch (err) {
              log(`push failed: ${(err as Error).message}`);
              if (pushers[w % pushers.length]!.state !== 'open') pushers[w % pushers.length] = await open();
              continue;
            }
            const ms = performance.now() - t;
            samples.add(ms);
            slow?.push([t, ms]);
          }
        }),
      );
      for (const c of pushers) await c.close().catch(() => undefined);
      pushers = await Promise.all(Array.from({ length: 8 }, () => open()));
      // As H1: a linearizable read, so the sessions' ends are applied before the next run.
      await new HibernateClient(pushers[0]!).units();
      return samples.summary();
    };
    const forMs = (ms: number): (() => boolean) => {
      const until = performance.now() + ms;
      return () => performance.now() >= until;
    };
    await pushItems(pushers, ACTIVE * 100, (n) => `/users/u${n % ACTIVE}/items`);
    const idleUnits = PACE * (PACED_MS / 1000) * PACED_ROUNDS;
    await pushItems(pushers, idleUnits * 100, (n) => `/idle/u${n % idleUnits}/items`);
    log(`loaded ${ACTIVE} active and ${idleUnits} idle units`);
    await activeWrites(forMs(2_000)); // warm up

    const hib = new HibernateClient(await open());
    const whileDoing = async (work: () => Promise<void>, slow?: Array<[number, number]>): Promise<{ seconds: number; writes: LatencySummary }> => {
      let running = true;
      const started = performance.now();
      const writes = activeWrites(() => !running && performance.now() - started >= 1000, slow);
      await work();
      const seconds = (performance.now() - started) / 1000;
      running = false;
      return { seconds, writes: await writes };
    };
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
      await pushItems(pushers, LARGE_ITEMS, (n) => (n % 2 === 0 ? '/large/unit/a' : '/large/unit/b'));
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
