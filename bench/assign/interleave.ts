// A1 interleaved: this checkout, other built checkouts and PostgreSQL, one after the
// other, round after round (every other round in the reverse order), so a shared machine's load falls on each alike; only the
// ratios within one run count. Each round starts each system afresh and runs A1's
// client levels (and with --drain, the drain under load) on it.
//
//   tsx bench/assign/interleave.ts --ref DIR [--ref DIR] [--rounds 3] [--level-ms 4000]
//       [--clients 1,16] [--drain] [--drain-users 20000] [--unpaced] [--no-postgres] --out DIR
//
// --unpaced adds this checkout with the drain unpaced (every step the full batch, at the rate).
//
// A ref is a directory holding a built checkout (bench/compare/targets.ts makes one
// from a commit: `git worktree add`, the shared node_modules, `npm run build`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { describeCheckout } from '../compare/targets.js';
import { runA1, type A1Result, type A1Scale } from './a1.js';
import { postgresAssign, UNPACED, veraAssign } from './adapters.js';
import type { AssignSystem } from './system.js';

interface Target {
  readonly label: string;
  open(logDir: string): Promise<AssignSystem>;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function parse(argv: readonly string[]): { refs: string[]; rounds: number; levelMs: number; clients: number[]; drain: boolean; drainUsers: number; unpaced: boolean; postgres: boolean; out: string } {
  const refs: string[] = [];
  let rounds = 3;
  let levelMs = 4000;
  let clients = [1, 16];
  let drain = false;
  let unpaced = false;
  let drainUsers = 20_000;
  let postgres = true;
  let out = '';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--ref') refs.push(resolve(value()));
    else if (a === '--rounds') rounds = Number(value());
    else if (a === '--level-ms') levelMs = Number(value());
    else if (a === '--clients') clients = value().split(',').map(Number);
    else if (a === '--drain') drain = true;
    else if (a === '--unpaced') unpaced = true;
    else if (a === '--drain-users') drainUsers = Number(value());
    else if (a === '--no-postgres') postgres = false;
    else if (a === '--out') out = resolve(value());
    else throw new Error(`unknown argument ${a}`);
  }
  if (out === '') throw new Error('--out DIR is required');
  return { refs, rounds, levelMs, clients, drain, drainUsers, unpaced, postgres, out };
}

const o = parse(process.argv.slice(2));
const root = resolve(import.meta.dirname, '../..');
const logDir = join(o.out, 'logs');
mkdirSync(logDir, { recursive: true });
const targets: Target[] = [
  { label: `this (${describeCheckout(root)})`, open: (d) => veraAssign(d) },
  ...(o.unpaced ? [{ label: `this, drain unpaced`, open: (d: string) => veraAssign(d, undefined, UNPACED) }] : []),
  ...o.refs.map((dir) => ({ label: `${describeCheckout(dir)} (${dir})`, open: (d: string) => veraAssign(d, dir) })),
  ...(o.postgres ? [{ label: 'PostgreSQL', open: (d: string) => postgresAssign(d) }] : []),
];
const scale: A1Scale = {
  clients: o.clients,
  levelMs: o.levelMs,
  warmupMs: 500,
  seedUsers: 300,
  ...(o.drain ? { extra: { events: 0, eventUsers: 0, drainUsers: o.drainUsers, drainBatch: 100, drainRate: 5_000, loadMs: o.levelMs, loadClients: 16 } } : {}),
};
const log = (m: string): void => console.log(`${new Date().toISOString().slice(11, 19)} ${m}`);
log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${o.rounds} rounds of ${targets.map((t) => t.label).join(', ')}`);
const results: Array<{ round: number; target: string; result: A1Result }> = [];
for (let round = 1; round <= o.rounds; round++) {
  // Every other round in the reverse order, so a load that rises or falls through the run favours none.
  for (const t of round % 2 === 1 ? targets : [...targets].reverse()) {
    const system = await t.open(logDir);
    try {
      const result = await runA1(system, scale, (m) => log(`round ${round} ${t.label}: ${m}`));
      results.push({ round, target: t.label, result });
    } finally {
      await system.stop().catch(() => undefined);
    }
  }
}
// Per level: each target's median requests/s, and its ratio to PostgreSQL and to the first target.
const lines = ['| target | ' + o.clients.map((c) => `${c} clients (req/s)`).join(' | ') + (o.drain ? ' | drain p99 ratio |' : ' |'), `|---|${o.clients.map(() => '---:|').join('')}${o.drain ? '---:|' : ''}`];
const rate = (label: string, c: number): number => median(results.filter((r) => r.target === label).map((r) => r.result.levels.find((l) => l.clients === c)?.perSec ?? Number.NaN));
for (const t of targets) {
  const cells = o.clients.map((c) => {
    const mine = rate(t.label, c);
    const vsPg = o.postgres ? ` (${(mine / rate('PostgreSQL', c)).toFixed(2)}x PG)` : '';
    const vsFirst = t === targets[0] ? '' : ` (${(mine / rate(targets[0]!.label, c)).toFixed(2)}x this)`;
    return `${Math.round(mine)}${vsPg}${vsFirst}`;
  });
  const drain = o.drain ? ` ${results.filter((r) => r.target === t.label).map((r) => r.result.drain?.p99Ratio.toFixed(2) ?? '-').join(' / ')} |` : '';
  lines.push(`| ${t.label} | ${cells.join(' | ')} |${drain}`);
}
const table = lines.join('\n');
log(`medians over ${o.rounds} rounds:\n${table}`);
writeFileSync(join(o.out, 'interleave.json'), JSON.stringify({ argv: process.argv.slice(2), loadavg: loadavg(), results }, null, 2));
writeFileSync(join(o.out, 'interleave.md'), `${table}\n`);
