// Runs A1 on Vera and on PostgreSQL and writes its result JSON and report.
// Called by bench/run.ts (npm run bench; --assign-only runs this part alone).
import { measureEach, type Contender } from '../lib/each-system.js';
import { ensurePackage } from '../lib/packages.js';
import { writeScenarioReport, type ScenarioOptions } from '../lib/scenario-report.js';
import { postgresAvailable } from '../journal/servers.js';
import { A1_FULL, A1_QUICK, runA1, type A1Result } from './a1.js';
import { postgresAssign, veraAssign } from './adapters.js';
import { renderA1 } from './report.js';
import type { AssignSystem } from './system.js';


export async function runAssignBench(options: ScenarioOptions, log: (m: string) => void): Promise<{ results: A1Result[]; failures: number }> {
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
  writeScenarioReport(options, 'A1', 'assign', started, { scale, results }, (meta) => renderA1(results, meta), log);
  return { results, failures };
}
