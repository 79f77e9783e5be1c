// Where unrelated writes wait while a large unit freezes and thaws (issue 34), traced
// rather than profiled: one 3-member cluster, H1's active set writing throughout, a
// large unit frozen and thawed by hand; every write stamped (epoch ms, start and
// latency). Members started with VERA_TRACE_READY set (a build that has the trace
// lines) write each Raft Ready and each applied run to their logs; trace-report.mjs
// lines the two up.
//   VERA_TRACE_READY=1 tsx bench/hibernate/trace-probe.ts --out DIR [--large N] [--rounds R]
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { ActiveSet, leaderClient, pushItems } from './probe-tools.js';
import { type LatencySummary } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';

const { values: args } = parseArgs({
  options: {
    large: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '1' },
    active: { type: 'string', default: '100' },
    checkout: { type: 'string' },
    out: { type: 'string' },
  },
});
const LARGE_ITEMS = Number(args.large);
const ROUNDS = Number(args.rounds);
const ACTIVE = Number(args.active);
const OUT = args.out ?? mkdtempSync(join(tmpdir(), 'hib-trace-'));
mkdirSync(OUT, { recursive: true });
const BEFORE_MS = 3_000;

const log = (m: string): void => console.log(`[trace ${new Date().toISOString().slice(11, 19)}] ${m}`);
const fmt = (s: LatencySummary): string => `p50 ${s.p50.toFixed(2)} p99 ${s.p99.toFixed(2)} max ${s.max.toFixed(1)} n ${s.count}`;
const epoch = (): number => performance.timeOrigin + performance.now();

async function main(): Promise<void> {
  const cluster = new VeraCluster({ logDir: OUT, inspector: false, ...(args.checkout === undefined ? {} : { checkout: args.checkout }) });
  const opened: VeraClient[] = [];
  try {
    await cluster.start();
    const set = await ActiveSet.open(cluster, opened, ACTIVE, { persistent: false, stamp: epoch, log });
    await pushItems(set.clients, ACTIVE * 100, (n) => `/users/u${n % ACTIVE}/items`);
    await pushItems(set.clients, LARGE_ITEMS, (n) => (n % 2 === 0 ? '/large/unit/a' : '/large/unit/b'));
    log(`loaded; outputs in ${OUT}`);
    const hib = new HibernateClient(await leaderClient(cluster, opened));
    await set.write(() => true);
    const phases: Array<{ round: number; phase: string; from: number; to: number; writes: Array<[number, number]> }> = [];
    const timed = async (round: number, phase: string, work: () => Promise<void>): Promise<LatencySummary> => {
      const writes: Array<[number, number]> = [];
      const from = epoch();
      const r = await set.whileDoing(work, writes);
      phases.push({ round, phase, from, to: epoch(), writes });
      log(`round ${round} ${phase} ${r.seconds.toFixed(2)} s: ${fmt(r.writes)}`);
      return r.writes;
    };
    for (let round = 0; round < ROUNDS; round++) {
      const b1 = await timed(round, 'before-freeze', () => new Promise((res) => setTimeout(res, BEFORE_MS)));
      const f = await timed(round, 'freeze', async () => {
        const v = await hib.freeze('/large/unit');
        if (!v.frozen) log(`large not frozen: ${v.why}`);
      });
      const b2 = await timed(round, 'before-thaw', () => new Promise((res) => setTimeout(res, BEFORE_MS)));
      const t = await timed(round, 'thaw', async () => {
        const v = await hib.thaw('/large/unit');
        if (v.items !== LARGE_ITEMS) log(`large thawed ${v.items}`);
      });
      log(`round ${round}: freeze ratio ${(f.p99 / b1.p99).toFixed(2)}, thaw ratio ${(t.p99 / b2.p99).toFixed(2)}`);
    }
    writeFileSync(join(OUT, 'writes.json'), JSON.stringify({ leader: await cluster.leader(), phases }));
  } finally {
    for (const c of opened) await c.close().catch(() => undefined);
    await cluster.stop();
  }
}

await main();
