// `npm run bench -- [--systems vera,etcd,zookeeper] [--quick | --scale | --security-only] [--out DIR] [--no-profile] [--docs FILE]`
import { resolve } from 'node:path';
import { SYSTEM_NAMES, type SystemName } from '../systems/system.js';

export interface BenchOptions {
  readonly systems: readonly SystemName[];
  readonly quick: boolean;
  /** S7 alone, up to 10^6 items, with a budget of its own (its report goes to docs/performance-scale.md). */
  readonly scale: boolean;
  /** Where the result JSON (and plots) go. */
  readonly outDir: string;
  /** The markdown report to regenerate. */
  readonly docsFile: string;
  /** Take a CPU profile of the Vera leader during an S2 run. */
  readonly profile: boolean;
  /** J1, the journal against BullMQ and pg-boss: after the main run, alone, or not at all. */
  readonly journal: 'after' | 'only' | 'no';
  /** A1, node assignment against Tokenserver's schema on PostgreSQL: after the main run, alone, or not at all. */
  readonly assign: 'after' | 'only' | 'no';
  /** H1, hibernation: after the main run, alone, or not at all. */
  readonly hibernate: 'after' | 'only' | 'no';
  /**
   * Vera serves its client port over TLS (wss, certificates made with openssl); results and
   * report get a `tls-` prefix and a TLS overhead file compares S1, S2, S6 with the last plain run.
   */
  readonly tls: boolean;
  /**
   * `--security-only`: Vera's S1, S2 and S6 on fresh clusters in one run, plain, with TLS,
   * with authentication and with both (bench/security), as ratios against plain
   * (<date>-security.json, docs/performance-security.md). Nothing else runs.
   */
  readonly security: boolean;
  /**
   * `--compare REF[,REF...]`: this checkout against other builds (a commit, checked out and
   * built in a temporary worktree, or a directory holding a built checkout), S1 and S2 with
   * new keys and few lists, interleaved (bench/compare). Nothing else runs. Empty: no compare.
   */
  readonly compare: readonly string[];
  /** `--rounds N`: how many times --compare runs each workload on each build (default 2). */
  readonly rounds: number;
  /** `--workloads LIST`: the --compare workloads to run (default all: s1-new, s1-few, s2-new, s2-few). */
  readonly workloads: readonly string[] | null;
}

/** The workloads of --compare (bench/compare/workloads.ts). */
const COMPARE_WORKLOADS: readonly string[] = ['s1-new', 's1-few', 's2-new', 's2-few'];

export class BenchUsageError extends Error {
  override readonly name = 'BenchUsageError';
}

export const USAGE = `usage: npm run bench -- [options]
  --systems LIST   comma-separated subset of ${SYSTEM_NAMES.join(',')} (default: all)
  --quick          short smoke run (under 3 minutes)
  --scale          S7 alone, up to 10^6 items per system (under 50 minutes;
                   report in docs/performance-scale.md)
  --out DIR        where result JSON and plots go (default: bench/results)
  --docs FILE      report to regenerate (default: docs/performance.md)
  --no-profile     skip the CPU profile of the Vera leader
  --journal-only   J1 alone: the journal against BullMQ and pg-boss
                   (report in docs/performance-journal.md)
  --no-journal     skip J1
  --assign-only    A1 alone: node assignment against Tokenserver on PostgreSQL
                   (report in docs/performance-assign.md)
  --no-assign      skip A1
  --hibernate-only H1 alone: hibernation of idle units
                   (report in docs/performance-hibernation.md)
  --no-hibernate   skip H1
  --tls            Vera with TLS on its client port (results <date>-tls-*.json, report
                   docs/performance-tls.md, and S1/S2/S6 ratios against the newest
                   plain Vera result in --out: <date>-tls-vera-overhead.json)
  --security-only  Vera alone, S1/S2/S6 on fresh clusters in one run: plain, TLS,
                   authentication, TLS + authentication (and two references:
                   authentication as root, plain again), as ratios against plain
                   (<date>-security.json, docs/performance-security.md; under 10
                   minutes, --quick under 3)
  --compare REFS   the regression gate: this checkout against each REF (comma-separated
                   commits, built in temporary worktrees, or directories of built
                   checkouts), S1 and S2 with a new list per put and with few lists,
                   interleaved; prints medians, CPU ms per put and this/REF ratios
                   (<date>-compare-*.json and .md in --out). Nothing else runs.
  --rounds N       with --compare: runs of each workload on each build (default 2)
  --workloads LIST with --compare: a subset of s1-new,s1-few,s2-new,s2-few
  --help           this text`;

export function parseBenchArgs(argv: readonly string[], cwd: string): BenchOptions | 'help' {
  let systems: SystemName[] = [...SYSTEM_NAMES];
  let quick = false;
  let scale = false;
  let outDir = resolve(cwd, 'bench/results');
  let docsFile: string | null = null;
  let profile = true;
  let journal: BenchOptions['journal'] = 'after';
  let assign: BenchOptions['assign'] = 'after';
  let hibernate: BenchOptions['hibernate'] = 'after';
  let tls = false;
  let security = false;
  let compare: string[] = [];
  let rounds = 2;
  let workloads: string[] | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new BenchUsageError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--systems': {
        const names = value().split(',').map((s) => s.trim()).filter((s) => s !== '');
        const unknown = names.filter((n) => !(SYSTEM_NAMES as readonly string[]).includes(n));
        if (unknown.length > 0) throw new BenchUsageError(`unknown system ${unknown.map((u) => JSON.stringify(u)).join(', ')}; choose from ${SYSTEM_NAMES.join(', ')}`);
        if (names.length === 0) throw new BenchUsageError('--systems needs at least one system');
        // Keep the canonical order so reports always read Vera, etcd, ZooKeeper.
        systems = SYSTEM_NAMES.filter((n) => names.includes(n));
        break;
      }
      case '--quick':
        quick = true;
        break;
      case '--scale':
        scale = true;
        break;
      case '--out':
        outDir = resolve(cwd, value());
        break;
      case '--docs':
        docsFile = resolve(cwd, value());
        break;
      case '--no-profile':
        profile = false;
        break;
      case '--journal-only':
        journal = 'only';
        break;
      case '--no-journal':
        journal = 'no';
        break;
      case '--assign-only':
        assign = 'only';
        break;
      case '--no-assign':
        assign = 'no';
        break;
      case '--hibernate-only':
        hibernate = 'only';
        break;
      case '--no-hibernate':
        hibernate = 'no';
        break;
      case '--tls':
        tls = true;
        break;
      case '--security-only':
        security = true;
        break;
      case '--compare':
        compare = value().split(',').map((r) => r.trim()).filter((r) => r !== '');
        if (compare.length === 0) throw new BenchUsageError('--compare needs at least one REF');
        break;
      case '--rounds': {
        const v = value();
        rounds = Number(v);
        if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) throw new BenchUsageError(`--rounds must be an integer from 1 to 20, got ${JSON.stringify(v)}`);
        break;
      }
      case '--workloads': {
        workloads = value().split(',').map((w) => w.trim()).filter((w) => w !== '');
        const unknown = workloads.filter((w) => !COMPARE_WORKLOADS.includes(w));
        if (unknown.length > 0 || workloads.length === 0) throw new BenchUsageError(`--workloads takes a subset of ${COMPARE_WORKLOADS.join(',')}`);
        break;
      }
      case '--help':
      case '-h':
        return 'help';
      default:
        throw new BenchUsageError(`unknown option ${JSON.stringify(arg)}\n${USAGE}`);
    }
  }
  if (workloads !== null && compare.length === 0) throw new BenchUsageError('--workloads goes with --compare');
  if (argv.some((a) => a === '--rounds' || a.startsWith('--rounds=')) && compare.length === 0) throw new BenchUsageError('--rounds goes with --compare');
  if (compare.length > 0) {
    const other = ['--scale', '--tls', '--security-only', '--journal-only', '--assign-only', '--hibernate-only', '--systems'].find((f) => argv.some((a) => a === f || a.startsWith(`${f}=`)));
    if (other !== undefined) throw new BenchUsageError(`--compare and ${other} do not go together (--compare measures Vera builds alone)`);
  }
  if (quick && scale) throw new BenchUsageError('--quick and --scale do not go together');
  if (tls && scale) throw new BenchUsageError('--tls and --scale do not go together (the TLS overhead is measured on S1, S2 and S6)');
  if (security) {
    if (scale) throw new BenchUsageError('--security-only and --scale do not go together (the overhead is measured on S1, S2 and S6)');
    if (tls) throw new BenchUsageError('--security-only measures TLS itself (against plain, in the same run); leave out --tls');
    const other = ['--journal-only', '--assign-only', '--hibernate-only'].find((f) => argv.includes(f));
    if (other !== undefined) throw new BenchUsageError(`--security-only and ${other} do not go together (run them one after the other)`);
    const systemsGiven = argv.some((a) => a === '--systems' || a.startsWith('--systems='));
    if (systemsGiven && (systems.length !== 1 || systems[0] !== 'vera')) throw new BenchUsageError('--security-only measures Vera alone; leave out --systems or give --systems vera');
    systems = ['vera'];
    journal = 'no';
    assign = 'no';
    hibernate = 'no';
  }
  if (argv.includes('--journal-only') && argv.includes('--no-journal')) throw new BenchUsageError('--journal-only and --no-journal do not go together');
  if (argv.includes('--assign-only') && argv.includes('--no-assign')) throw new BenchUsageError('--assign-only and --no-assign do not go together');
  // The scale run is S7 alone; J1 and A1 run with the ordinary and quick runs. One "-only" leaves out what it does not name.
  if (scale && journal === 'after') journal = 'no';
  if (scale && assign === 'after') assign = 'no';
  if (scale && hibernate === 'after') hibernate = 'no';
  const only = journal === 'only' || assign === 'only' || hibernate === 'only';
  if (only && journal === 'after') journal = 'no';
  if (only && assign === 'after') assign = 'no';
  if (only && hibernate === 'after') hibernate = 'no';
  // A TLS run measures the main scenarios only: J1, A1 and H1 are not about the client port.
  if (tls && journal === 'after') journal = 'no';
  if (tls && assign === 'after') assign = 'no';
  if (tls && hibernate === 'after') hibernate = 'no';
  const defaultDocs =
    security ? 'docs/performance-security.md' : journal === 'only' ? 'docs/performance-journal.md' : assign === 'only' ? 'docs/performance-assign.md' : hibernate === 'only' ? 'docs/performance-hibernation.md' : scale ? 'docs/performance-scale.md' : tls ? 'docs/performance-tls.md' : 'docs/performance.md';
  return { systems, quick, scale, outDir, docsFile: docsFile ?? resolve(cwd, defaultDocs), profile, journal, assign, hibernate, tls, security, compare, rounds, workloads };
}
