// Where unrelated writes wait while a large unit freezes and thaws (issue 34): one
// 3-member cluster, H1's active set writing throughout, a large unit frozen and
// thawed by hand; every member's CPU profile taken through its inspector over each,
// and the slowest writes stamped on the monotonic clock the profiles use, so a long
// task on some member can be lined up with the writes it held.
//   tsx bench/hibernate/stall-probe.ts --out DIR [--large N] [--rounds R]
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { profileWhile, type CpuProfile } from '../lib/cpu-profile.js';
import { ActiveSet, leaderClient, pushItems } from './probe-tools.js';
import { type LatencySummary } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';

const { values: args } = parseArgs({
  options: {
    large: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '1' },
    active: { type: 'string', default: '100' },
    out: { type: 'string' },
  },
});
const LARGE_ITEMS = Number(args.large);
const ROUNDS = Number(args.rounds);
const ACTIVE = Number(args.active);
const OUT = args.out ?? mkdtempSync(join(tmpdir(), 'hib-stall-'));
mkdirSync(OUT, { recursive: true });
const BEFORE_MS = 3_000;

const log = (m: string): void => console.log(`[stall ${new Date().toISOString().slice(11, 19)}] ${m}`);
const fmt = (s: LatencySummary): string => `p50 ${s.p50.toFixed(2)} p99 ${s.p99.toFixed(2)} max ${s.max.toFixed(1)} n ${s.count}`;
/** Microseconds on the monotonic clock V8's profiles stamp samples with. */
const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

async function main(): Promise<void> {
  const cluster = new VeraCluster({ logDir: OUT, inspector: true });
  const opened: VeraClient[] = [];
  try {
    await cluster.start();
    const open = (): Promise<VeraClient> => leaderClient(cluster, opened);
    const set = await ActiveSet.open(cluster, opened, ACTIVE, { persistent: false, stamp: monoUs, log });
    const activeWrites = (done: () => boolean, slow?: Array<[number, number]>): Promise<LatencySummary> => set.write(done, slow);
    await pushItems(set.clients, ACTIVE * 100, (n) => `/users/u${n % ACTIVE}/items`);
    await pushItems(set.clients, LARGE_ITEMS, (n) => (n % 2 === 0 ? '/large/unit/a' : '/large/unit/b'));
    log(`loaded; outputs in ${OUT}`);
    const hib = new HibernateClient(await open());
    const whileDoing = (work: () => Promise<void>, slow?: Array<[number, number]>): Promise<{ seconds: number; writes: LatencySummary }> => set.whileDoing(work, slow);
    /** `work` with every member's CPU profiled meanwhile, each profile written as NAME-ID.cpuprofile. */
    const profiled = async (name: string, work: () => Promise<void>): Promise<void> => {
      const members = cluster.members();
      const run = async (i: number): Promise<void> => {
        if (i === members.length) return work();
        const m = members[i]!;
        const prof: CpuProfile = await profileWhile(cluster.inspectorUrl(m.id)!, () => run(i + 1), 1000);
        writeFileSync(join(OUT, `${name}-${m.id}.cpuprofile`), JSON.stringify(prof));
      };
      await run(0);
    };
    await activeWrites(() => true); // warm the connections
    for (let round = 0; round < ROUNDS; round++) {
      const before = await whileDoing(() => new Promise((res) => setTimeout(res, BEFORE_MS)));
      const slowF: Array<[number, number]> = [];
      let f!: { seconds: number; writes: LatencySummary };
      await profiled(`freeze${round}`, async () => {
        f = await whileDoing(async () => {
          const v = await hib.freeze('/large/unit');
          if (!v.frozen) log(`large not frozen: ${v.why}`);
        }, slowF);
      });
      const before2 = await whileDoing(() => new Promise((res) => setTimeout(res, BEFORE_MS)));
      const slowT: Array<[number, number]> = [];
      let t!: { seconds: number; writes: LatencySummary };
      await profiled(`thaw${round}`, async () => {
        t = await whileDoing(async () => {
          const v = await hib.thaw('/large/unit');
          if (v.items !== LARGE_ITEMS) log(`large thawed ${v.items}`);
        }, slowT);
      });
      writeFileSync(join(OUT, `writes${round}.json`), JSON.stringify({ freeze: slowF, thaw: slowT, leader: await cluster.leader() }));
      log(`round ${round} leader ${await cluster.leader()}: freeze ${f.seconds.toFixed(2)} s: before ${fmt(before.writes)} | during ${fmt(f.writes)} | ratio ${(f.writes.p99 / before.writes.p99).toFixed(2)}`);
      log(`round ${round}: thaw ${t.seconds.toFixed(2)} s: before ${fmt(before2.writes)} | during ${fmt(t.writes)} | ratio ${(t.writes.p99 / before2.writes.p99).toFixed(2)}`);
    }
  } finally {
    for (const c of opened) await c.close().catch(() => undefined);
    await cluster.stop();
  }
}

await main();
