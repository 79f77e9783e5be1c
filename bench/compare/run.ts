// `npm run bench -- --compare REF[,REF...]`: the regression gate. Starts a 3-member
// cluster of this checkout and of every REF (all up at once), warms each up, then
// runs the write workloads (S1 and S2, new keys and few lists) on each in turn,
// interleaved (A B, then B A, ...), so the machine's drift falls on all alike.
// Prints and writes the medians, CPU ms per put, and each REF's figure as
// this ÷ REF: on a shared machine only ratios within one run mean anything.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { roundTo } from '../lib/samples.js';
import { closeAll, connectMany } from '../scenarios/context.js';
import { VeraCluster } from '../systems/vera.js';
import { cleanupTargets, prepareTargets, type CompareTarget } from './targets.js';
import { runWrites, writeWorkloads, type WriteOutcome, type WriteWorkload } from './workloads.js';
import { compareMarkdown, summarize, type CompareSummary } from './report.js';

export interface CompareOptions {
  readonly root: string;
  readonly refs: readonly string[];
  readonly quick: boolean;
  /** Each workload runs this many times on each target. */
  readonly rounds: number;
  /** Workload ids to run; null: all. */
  readonly workloads: readonly string[] | null;
  readonly outDir: string;
  readonly logDir: string;
  readonly command: string;
  readonly log: (message: string) => void;
}

export interface CompareRun {
  readonly target: string;
  readonly workload: string;
  readonly round: number;
  readonly leader: string;
  readonly outcome: WriteOutcome;
}

export async function runCompare(options: CompareOptions): Promise<CompareSummary> {
  const { log } = options;
  const targets = prepareTargets(options.root, options.refs, log);
  const clusters = new Map<string, VeraCluster>();
  const runs: CompareRun[] = [];
  const workloads = writeWorkloads(options.quick).filter((w) => options.workloads === null || options.workloads.includes(w.id));
  const startedAt = new Date().toISOString();
  // Made before measuring: a missing --out folder used to fail the run only at its last write.
  mkdirSync(options.outDir, { recursive: true });
  try {
    for (const t of targets) {
      const logDir = join(options.logDir, `${clusters.size}-${t.commit}`);
      mkdirSync(logDir, { recursive: true });
      const cluster = new VeraCluster({ logDir, inspector: false, checkout: t.checkout });
      clusters.set(t.label, cluster);
      log(`starting ${t.label} (${t.commit})`);
      await cluster.start();
    }
    for (const t of targets) {
      log(`warming up ${t.label}`);
      await measure(clusters.get(t.label)!, { id: 'warmup', clients: 16, inFlight: 64, puts: options.quick ? 1_000 : 4_000, keys: 'few' }, `warm`);
    }
    for (let round = 0; round < options.rounds; round++) {
      for (const [w, workload] of workloads.entries()) {
        // A B for one, B A for the next: no target always runs first or right after the other.
        const order = (round + w) % 2 === 0 ? targets : [...targets].reverse();
        for (const t of order) {
          const cluster = clusters.get(t.label)!;
          const leader = await cluster.leader();
          const outcome = await measure(cluster, workload, `cmp/${workload.id}/r${round}`);
          runs.push({ target: t.label, workload: workload.id, round, leader, outcome });
          log(`${t.label} ${workload.id} round ${round + 1}: ${outcome.opsPerSec.toFixed(0)} puts/s, ${outcome.cpuMsPerOp.toFixed(3)} CPU ms/put, p50 ${outcome.latencyMs.p50.toFixed(2)} ms, p99 ${outcome.latencyMs.p99.toFixed(2)} ms${outcome.failed > 0 ? `, ${outcome.failed} failed (${outcome.firstError})` : ''}`);
        }
      }
    }
  } finally {
    await Promise.allSettled([...clusters.values()].map((c) => c.stop()));
    cleanupTargets(options.root, targets);
  }
  const summary = summarize(targets, workloads, runs, { startedAt, command: options.command, rounds: options.rounds, quick: options.quick });
  const base = `${startedAt.slice(0, 10)}-compare-${targets.map((t) => t.commit.replace(/\W/g, '')).join('-')}`;
  writeFileSync(join(options.outDir, `${base}.json`), `${JSON.stringify({ summary, runs: runs.map(roundRun) }, null, 1)}\n`);
  const markdown = compareMarkdown(summary);
  writeFileSync(join(options.outDir, `${base}.md`), markdown);
  process.stdout.write(`\n${markdown}\n`);
  log(`wrote ${join(options.outDir, base)}.json and .md`);
  return summary;
}

async function measure(cluster: VeraCluster, workload: WriteWorkload, runTag: string): Promise<WriteOutcome> {
  const clients = await connectMany(cluster, workload.clients);
  try {
    return await runWrites(clients, cluster.members(), workload, runTag);
  } finally {
    await closeAll(clients);
  }
}

function roundRun(run: CompareRun): unknown {
  const o = run.outcome;
  return { ...run, outcome: { ...o, opsPerSec: roundTo(o.opsPerSec, 1), cpuMsPerOp: roundTo(o.cpuMsPerOp, 4), seconds: roundTo(o.seconds, 3) } };
}

export type { CompareTarget };
