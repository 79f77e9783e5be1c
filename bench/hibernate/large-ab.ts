// H1's large-unit scenario alone (issue 34): a 100,000-item unit frozen and thawed by
// hand while the active set writes, each judged against the active set's writes over
// the same length of time just before, in the same cluster. With `--compare DIR`, two
// 3-member clusters run side by side, one on this checkout's build and one on DIR's,
// and the rounds alternate between them (base, this, base, this, ...), so the load of
// a shared machine falls on both alike: only ratios measured that way mean anything
// there. Only the cluster whose turn it is takes writes; the other sits idle.
//   tsx bench/hibernate/large-ab.ts [--compare DIR] [--large N] [--rounds R] [--out FILE]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect, type VeraClient } from '../../src/client/index.js';
import { HibernateClient } from '../../src/families/hibernate/client.js';
import { LOOPBACK } from '../lib/net.js';
import { pushItems } from './probe-tools.js';
import { Samples, type LatencySummary } from '../lib/samples.js';
import { VeraCluster } from '../systems/vera.js';

const { values: args } = parseArgs({
  options: {
    compare: { type: 'string' },
    large: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
    active: { type: 'string', default: '100' },
    out: { type: 'string' },
  },
});
const LARGE_ITEMS = Number(args.large);
const ROUNDS = Number(args.rounds);
const ACTIVE = Number(args.active);
const LARGE = '/large/unit';

const log = (m: string): void => console.log(`[large-ab ${new Date().toISOString().slice(11, 19)}] ${m}`);
const fmt = (s: LatencySummary): string => `p50 ${s.p50.toFixed(1)} p99 ${s.p99.toFixed(1)} max ${s.max.toFixed(0)} n ${s.count}`;

/** One side: a cluster on one build, its active set, and the large unit. */
interface Side {
  readonly name: string;
  readonly cluster: VeraCluster;
  /** The active set's writes (H1's: 16 in flight to the active units) while `work` runs, for at least `minMs`; and how long `work` took. */
  whileDoing(work: () => Promise<void>, minMs: number): Promise<{ seconds: number; writes: LatencySummary }>;
  readonly hib: HibernateClient;
  close(): Promise<void>;
}

async function startSide(name: string, checkout: string | undefined): Promise<Side> {
  const logDir = mkdtempSync(join(tmpdir(), `hib-ab-${name}-`));
  log(`${name}: logs in ${logDir}`);
  const cluster = new VeraCluster({ logDir, inspector: false, ...(checkout === undefined ? {} : { checkout }) });
  await cluster.start();
  const opened: VeraClient[] = [];
  const open = async (): Promise<VeraClient> => {
    const leader = await cluster.leader();
    const c = await connect(`ws://${LOOPBACK}:${cluster.members().find((m) => m.id === leader)!.clientPort}`, { connectTimeoutMs: 20_000, requestTimeoutMs: 120_000 });
    c.on('failed', () => undefined);
    opened.push(c);
    return c;
  };
  const pushers = await Promise.all(Array.from({ length: 8 }, () => open()));
  await pushItems(pushers, ACTIVE * 100, (n) => `/users/u${n % ACTIVE}/items`);
  await pushItems(pushers, LARGE_ITEMS, (n) => (n % 2 === 0 ? `${LARGE}/a` : `${LARGE}/b`));
  log(`${name}: loaded ${ACTIVE} active units and a ${LARGE_ITEMS}-item unit`);
  const whileDoing = async (work: () => Promise<void>, minMs: number): Promise<{ seconds: number; writes: LatencySummary }> => {
    const samples = new Samples();
    let running = true;
    const started = performance.now();
    const writers = Promise.all(
      Array.from({ length: 16 }, async (_, w) => {
        for (let n = 0; running || performance.now() - started < minMs; n++) {
          const t = performance.now();
          await pushers[w % pushers.length]!.push(`/users/u${(w * 7919 + n) % ACTIVE}/items`, { n }, { persistent: false, watch: false });
          samples.add(performance.now() - t);
        }
      }),
    );
    await work();
    const seconds = (performance.now() - started) / 1000;
    running = false;
    await writers;
    return { seconds, writes: samples.summary() };
  };
  return {
    name,
    cluster,
    whileDoing,
    hib: new HibernateClient(await open()),
    close: async () => {
      for (const c of opened) await c.close().catch(() => undefined);
      await cluster.stop();
    },
  };
}

interface RoundResult {
  readonly side: string;
  readonly round: number;
  readonly freezeSeconds: number;
  readonly freezeRatio: number;
  readonly thawSeconds: number;
  readonly thawRatio: number;
  readonly beforeFreeze: LatencySummary;
  readonly freezing: LatencySummary;
  readonly beforeThaw: LatencySummary;
  readonly thawing: LatencySummary;
}

/** One freeze and one thaw of the large unit, each judged against a window of the same length just before it (the side's last time for it, at least 3 s). */
async function round(side: Side, n: number, last: { freeze: number; thaw: number }): Promise<RoundResult> {
  const idle = (ms: number) => () => new Promise<void>((go) => setTimeout(go, ms));
  const beforeFreeze = await side.whileDoing(idle(Math.max(3_000, last.freeze * 1000)), 0);
  const f = await side.whileDoing(async () => {
    const v = await side.hib.freeze(LARGE);
    if (!v.frozen) throw new Error(`${side.name}: the large unit was not frozen: ${v.why}`);
  }, 1_000);
  const beforeThaw = await side.whileDoing(idle(Math.max(3_000, last.thaw * 1000)), 0);
  const t = await side.whileDoing(async () => {
    const v = await side.hib.thaw(LARGE);
    if (v.items !== LARGE_ITEMS) throw new Error(`${side.name}: the large unit thawed ${v.items} items`);
  }, 1_000);
  last.freeze = f.seconds;
  last.thaw = t.seconds;
  const r: RoundResult = {
    side: side.name,
    round: n,
    freezeSeconds: f.seconds,
    freezeRatio: f.writes.p99 / beforeFreeze.writes.p99,
    thawSeconds: t.seconds,
    thawRatio: t.writes.p99 / beforeThaw.writes.p99,
    beforeFreeze: beforeFreeze.writes,
    freezing: f.writes,
    beforeThaw: beforeThaw.writes,
    thawing: t.writes,
  };
  log(`${side.name} round ${n}: freeze ${f.seconds.toFixed(1)} s, before ${fmt(beforeFreeze.writes)} | during ${fmt(f.writes)} | ${r.freezeRatio.toFixed(2)}x`);
  log(`${side.name} round ${n}: thaw ${t.seconds.toFixed(1)} s, before ${fmt(beforeThaw.writes)} | during ${fmt(t.writes)} | ${r.thawRatio.toFixed(2)}x`);
  return r;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main(): Promise<void> {
  const sides: Side[] = [];
  try {
    if (args.compare !== undefined) sides.push(await startSide('base', args.compare));
    sides.push(await startSide('this', undefined));
    const lasts = sides.map(() => ({ freeze: 0, thaw: 0 }));
    const results: RoundResult[] = [];
    for (let n = 0; n < ROUNDS; n++) for (const [k, side] of sides.entries()) results.push(await round(side, n, lasts[k]!));
    const summary = Object.fromEntries(
      sides.map((s) => {
        const mine = results.filter((r) => r.side === s.name);
        return [s.name, { freezeRatios: mine.map((r) => Number(r.freezeRatio.toFixed(2))), thawRatios: mine.map((r) => Number(r.thawRatio.toFixed(2))), freezeMedian: median(mine.map((r) => r.freezeRatio)), thawMedian: median(mine.map((r) => r.thawRatio)), freezeSeconds: median(mine.map((r) => r.freezeSeconds)), thawSeconds: median(mine.map((r) => r.thawSeconds)) }];
      }),
    );
    log(`summary ${JSON.stringify(summary)}`);
    if (args.out !== undefined) writeFileSync(args.out, `${JSON.stringify({ args, summary, results }, null, 2)}\n`);
  } finally {
    for (const s of sides) await s.close().catch(() => undefined);
  }
}

await main();
