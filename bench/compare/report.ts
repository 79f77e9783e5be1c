// The medians of a `--compare` run and their ratios to this checkout, as data and as markdown.
import type { CompareRun, CompareTarget } from './run.js';
import type { WriteWorkload } from './workloads.js';

export interface CompareCell {
  readonly target: string;
  readonly workload: string;
  readonly runs: number;
  readonly opsPerSec: number;
  readonly cpuMsPerOp: number;
  /** Leader's CPU ms per put (the member that did the most). */
  readonly leaderCpuMsPerOp: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failed: number;
  readonly opsPerSecEach: readonly number[];
}

export interface CompareSummary {
  readonly startedAt: string;
  readonly command: string;
  readonly rounds: number;
  readonly quick: boolean;
  readonly targets: ReadonlyArray<{ readonly label: string; readonly commit: string }>;
  readonly workloads: readonly WriteWorkload[];
  readonly cells: readonly CompareCell[];
}

export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = Math.floor(finite.length / 2);
  return finite.length % 2 === 1 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}

export function summarize(targets: readonly CompareTarget[], workloads: readonly WriteWorkload[], runs: readonly CompareRun[], meta: { startedAt: string; command: string; rounds: number; quick: boolean }): CompareSummary {
  const cells: CompareCell[] = [];
  for (const w of workloads) {
    for (const t of targets) {
      const mine = runs.filter((r) => r.target === t.label && r.workload === w.id);
      cells.push({
        target: t.label,
        workload: w.id,
        runs: mine.length,
        opsPerSec: median(mine.map((r) => r.outcome.opsPerSec)),
        cpuMsPerOp: median(mine.map((r) => r.outcome.cpuMsPerOp)),
        leaderCpuMsPerOp: median(mine.map((r) => ((r.outcome.cpuSeconds[r.leader] ?? Number.NaN) * 1000) / r.outcome.ok)),
        p50Ms: median(mine.map((r) => r.outcome.latencyMs.p50)),
        p99Ms: median(mine.map((r) => r.outcome.latencyMs.p99)),
        failed: mine.reduce((n, r) => n + r.outcome.failed, 0),
        opsPerSecEach: mine.map((r) => Math.round(r.outcome.opsPerSec)),
      });
    }
  }
  return { ...meta, targets: targets.map((t) => ({ label: t.label, commit: t.commit })), workloads, cells };
}

function describe(w: WriteWorkload): string {
  const keys = w.keys === 'new' ? 'a new list per put' : w.clients === 1 ? 'one list' : `${w.clients} lists (one per client)`;
  return `${w.id}: ${w.clients} client${w.clients === 1 ? '' : 's'}, ${w.inFlight} in flight, ${w.puts.toLocaleString('en-US')} puts to ${keys}`;
}

export function compareMarkdown(s: CompareSummary): string {
  const [self, ...others] = s.targets;
  const lines = [
    `Interleaved A/B of Vera builds, ${s.rounds} round(s) (${s.startedAt}); \`${s.command}\``,
    '',
    `Targets: ${s.targets.map((t) => `${t.label} = ${t.commit}`).join(', ')}. Figures are medians over the rounds; CPU is utime + stime of the three members from /proc/<pid>/stat, per successful put; ratios are this ÷ REF (throughput: above 1 is faster; CPU: below 1 is cheaper).`,
    '',
    ...s.workloads.map((w) => `- ${describe(w)}`),
    '',
    `| workload | build | puts/s (each round) | CPU ms/put (all members) | leader CPU ms/put | p50 ms | p99 ms | failed |${others.map((o) => ` puts/s this÷${o.label} | CPU this÷${o.label} |`).join('')}`,
    `|---|---|---:|---:|---:|---:|---:|---:|${others.map(() => '---:|---:|').join('')}`,
  ];
  for (const w of s.workloads) {
    const mine = s.cells.find((c) => c.workload === w.id && c.target === self?.label);
    for (const t of s.targets) {
      const c = s.cells.find((x) => x.workload === w.id && x.target === t.label);
      if (c === undefined) continue;
      const ratios = others.map((o) => {
        const other = s.cells.find((x) => x.workload === w.id && x.target === o.label);
        if (t.label !== self?.label || mine === undefined || other === undefined) return ' | |';
        return ` ${(mine.opsPerSec / other.opsPerSec).toFixed(2)}x | ${(mine.cpuMsPerOp / other.cpuMsPerOp).toFixed(2)}x |`;
      });
      lines.push(`| ${w.id} | ${t.label} (${t.commit}) | ${c.opsPerSec.toFixed(0)} (${c.opsPerSecEach.join(', ')}) | ${c.cpuMsPerOp.toFixed(3)} | ${c.leaderCpuMsPerOp.toFixed(3)} | ${c.p50Ms.toFixed(2)} | ${c.p99Ms.toFixed(2)} | ${c.failed} |${ratios.join('')}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
