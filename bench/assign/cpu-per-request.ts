// Node assignment: CPU per get-or-create request on each member, interleaved between
// checkouts. On a shared machine wall-clock rates swing with the others' load; the CPU
// a member spends on a fixed number of requests swings far less, so it shows what a
// change to the request path saves. Per round and checkout: a fresh 3-member cluster,
// 300 users, then `--requests` returning unchanged users (reads) and as many new users
// (writes) from `--clients` clients; per phase each member's CPU time (user + system,
// from /proc) divided by the requests.
//
//   tsx bench/assign/cpu-per-request.ts --ref DIR [--ref DIR] [--rounds 3] [--requests 4000] [--clients 16] --out DIR
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { describeCheckout } from '../compare/targets.js';
import { readProcCpuSeconds } from '../lib/cpu.js';
import { VeraCluster } from '../systems/vera.js';
import { NODES, RELEASE_RATE, SERVICE, VALUES } from './a1.js';
import { veraAssign } from './adapters.js';

const argv = process.argv.slice(2);
const refs: string[] = [];
let rounds = 3;
let requests = 4000;
let clients = 16;
let out = '';
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  const v = (): string => argv[++i] ?? '';
  if (a === '--ref') refs.push(resolve(v()));
  else if (a === '--rounds') rounds = Number(v());
  else if (a === '--requests') requests = Number(v());
  else if (a === '--clients') clients = Number(v());
  else if (a === '--out') out = resolve(v());
  else throw new Error(`unknown argument ${a}`);
}
if (out === '') throw new Error('--out DIR is required');
mkdirSync(join(out, 'logs'), { recursive: true });
const root = resolve(import.meta.dirname, '../..');
const targets = [{ label: `this (${describeCheckout(root)})`, checkout: undefined as string | undefined }, ...refs.map((d) => ({ label: `${describeCheckout(d)} (${d})`, checkout: d as string | undefined }))];

// The cluster veraAssign starts, for its members' pids.
let started: VeraCluster | null = null;
const start = VeraCluster.prototype.start;
VeraCluster.prototype.start = function (this: VeraCluster) {
  started = this;
  return start.call(this);
};

interface Phase {
  readonly requests: number;
  readonly seconds: number;
  /** CPU µs per request: the leader, the two followers together, all three. */
  readonly leaderUs: number;
  readonly followersUs: number;
  readonly totalUs: number;
}

async function phase(run: () => Promise<number>, pids: { leader: number; followers: number[] }): Promise<Phase> {
  const cpu = (): { leader: number; followers: number } => ({ leader: readProcCpuSeconds(pids.leader)!, followers: pids.followers.reduce((s, p) => s + readProcCpuSeconds(p)!, 0) });
  const before = cpu();
  const t0 = performance.now();
  const n = await run();
  const seconds = (performance.now() - t0) / 1000;
  const after = cpu();
  const leaderUs = ((after.leader - before.leader) / n) * 1e6;
  const followersUs = ((after.followers - before.followers) / n) * 1e6;
  return { requests: n, seconds, leaderUs, followersUs, totalUs: leaderUs + followersUs };
}

const log = (m: string): void => console.log(`${new Date().toISOString().slice(11, 19)} ${m}`);
log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${rounds} rounds of ${targets.map((t) => t.label).join(', ')}`);
const results: Array<{ round: number; target: string; reads: Phase; writes: Phase }> = [];
for (let round = 1; round <= rounds; round++) {
  for (const t of round % 2 === 1 ? targets : [...targets].reverse()) {
    const system = await veraAssign(join(out, 'logs'), t.checkout);
    try {
      const cluster = started!;
      const leader = await cluster.leader();
      const members = cluster.members();
      const pids = { leader: members.find((m) => m.id === leader)!.pid!, followers: members.filter((m) => m.id !== leader).map((m) => m.pid!) };
      await system.setup(SERVICE, RELEASE_RATE, NODES);
      const c = await system.clients(clients);
      const known = Array.from({ length: 300 }, (_, k) => `seed-${k}@example.com`);
      let next = 0;
      await Promise.all(Array.from({ length: clients }, async (_, i) => {
        for (let n = next++; n < known.length; n = next++) await c.login(i, SERVICE, known[n]!, VALUES);
      }));
      const many = (email: (n: number) => string) => async (): Promise<number> => {
        let k = 0;
        await Promise.all(Array.from({ length: clients }, async (_, i) => {
          for (let n = k++; n < requests; n = k++) await c.login(i, SERVICE, email(n), VALUES);
        }));
        return requests;
      };
      await many((n) => known[n % known.length]!)(); // warm-up
      const reads = await phase(many((n) => known[n % known.length]!), pids);
      const writes = await phase(many((n) => `r${round}-${n}@example.com`), pids);
      results.push({ round, target: t.label, reads, writes });
      const f = (p: Phase): string => `leader ${p.leaderUs.toFixed(0)} us, followers ${p.followersUs.toFixed(0)} us, ${(p.requests / p.seconds).toFixed(0)}/s`;
      log(`round ${round} ${t.label}: returning ${f(reads)}; new ${f(writes)}`);
    } finally {
      await system.stop().catch(() => undefined);
    }
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const lines = ['| target | returning: leader CPU µs/request | new: leader | new: both followers | new: all three |', '|---|---:|---:|---:|---:|'];
for (const t of targets) {
  const mine = results.filter((r) => r.target === t.label);
  lines.push(`| ${t.label} | ${median(mine.map((r) => r.reads.leaderUs)).toFixed(0)} | ${median(mine.map((r) => r.writes.leaderUs)).toFixed(0)} | ${median(mine.map((r) => r.writes.followersUs)).toFixed(0)} | ${median(mine.map((r) => r.writes.totalUs)).toFixed(0)} |`);
}
log(`medians over ${rounds} rounds:\n${lines.join('\n')}`);
writeFileSync(join(out, 'cpu-per-request.json'), JSON.stringify({ argv, loadavg: loadavg(), results }, null, 2));
writeFileSync(join(out, 'cpu-per-request.md'), `${lines.join('\n')}\n`);
