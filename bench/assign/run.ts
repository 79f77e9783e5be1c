// Runs A1 on Vera and on PostgreSQL and writes its result JSON and report.
// Called by bench/run.ts (npm run bench; --assign-only runs this part alone).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { measureEach, type Contender } from '../lib/each-system.js';
import { ensurePackage } from '../lib/packages.js';
import { postgresAvailable } from '../journal/servers.js';
import { A1_FULL, A1_QUICK, runA1, type A1Result } from './a1.js';
import { postgresAssign, veraAssign } from './adapters.js';
import { renderA1 } from './report.js';
import type { AssignSystem } from './system.js';

export interface AssignBenchOptions {
  readonly quick: boolean;
  readonly outDir: string;
  readonly docsFile: string;
  readonly logDir: string;
  readonly filePrefix: string;
  readonly command: string;
  readonly root: string;
}

export async function runAssignBench(options: AssignBenchOptions, log: (m: string) => void): Promise<{ results: A1Result[]; failures: number }> {
  const scale = options.quick ? A1_QUICK : A1_FULL;
  const started = performance.now();
  const postgres = postgresAvailable() ? { available: true, note: 'postgresql already installed' } : ensurePackage('postgresql', null, log);
  const systems: Array<Contender<AssignSystem>> = [
    { name: 'Vera', open: () => veraAssign(options.logDir) },
    { name: 'PostgreSQL 15 (Tokenserver schema)', open: () => postgresAssign(options.logDir), ...(postgres.available && postgresAvailable() ? {} : { unavailable: postgres.note }) },
  ];
  const { results, failures } = await measureEach(
    'A1',
    systems,
    (system) => runA1(system, scale, (m) => log(`A1 ${m}`)),
    (system, error): A1Result => ({ system, settings: '', levels: [], counters: null, drift: null, errors: [error] }),
    log,
  );
  mkdirSync(options.outDir, { recursive: true });
  const path = join(options.outDir, `${options.filePrefix}assign.json`);
  const seconds = (performance.now() - started) / 1000;
  writeFileSync(path, JSON.stringify({ schema: 1, scenario: 'A1', command: options.command, finishedAt: new Date().toISOString(), seconds, scale, results }, null, 2) + '\n');
  writeFileSync(options.docsFile, renderA1(results, { command: options.command, seconds, resultFile: relative(join(options.docsFile, '..'), path) }));
  log(`A1 wrote ${relative(options.root, path)} and ${relative(options.root, options.docsFile)} after ${Math.round(seconds)} s`);
  return { results, failures };
}
