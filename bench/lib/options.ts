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
}

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
      case '--help':
      case '-h':
        return 'help';
      default:
        throw new BenchUsageError(`unknown option ${JSON.stringify(arg)}\n${USAGE}`);
    }
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
  return { systems, quick, scale, outDir, docsFile: docsFile ?? resolve(cwd, defaultDocs), profile, journal, assign, hibernate, tls, security };
}
