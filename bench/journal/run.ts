// Runs J1 on every queue in turn and writes its result JSON and report.
// Called by bench/run.ts (npm run bench; --journal-only runs this part alone).
import { measureEach, type Contender } from '../lib/each-system.js';
import { ensurePackage } from '../lib/packages.js';
import { writeScenarioReport, type ScenarioOptions } from '../lib/scenario-report.js';
import { bullmqQueues, pgBossQueues, veraQueues } from './adapters.js';
import { J1_FULL, J1_QUICK, LOCK_MS, runJ1, type J1Result } from './j1.js';
import { renderJ1 } from './report.js';
import { FAILING_FULL, FAILING_QUICK, renderFailing, runFailingHandler, type FailingResult } from './failing.js';
import { postgresAvailable } from './servers.js';
import type { QueueSystem } from './queue.js';


export async function runJournalBench(options: ScenarioOptions, log: (m: string) => void): Promise<{ results: J1Result[]; failures: number }> {
  const scale = options.quick ? J1_QUICK : J1_FULL;
  const started = performance.now();
  const redis = ensurePackage('redis-server', 'redis-server', log);
  const postgres = postgresAvailable() ? { available: true, note: 'postgresql already installed' } : ensurePackage('postgresql', null, log);
  const systems: Array<Contender<QueueSystem>> = [
    { name: 'Vera journal', open: () => veraQueues(options.logDir) },
    { name: 'BullMQ always', open: () => bullmqQueues('always', options.logDir), ...(redis.available ? {} : { unavailable: redis.note }) },
    { name: 'BullMQ everysec', open: () => bullmqQueues('everysec', options.logDir), ...(redis.available ? {} : { unavailable: redis.note }) },
    { name: 'pg-boss', open: () => pgBossQueues(options.logDir), ...(postgres.available && postgresAvailable() ? {} : { unavailable: postgres.note }) },
  ];
  const { results, failures } = await measureEach(
    'J1',
    systems,
    (system) => runJ1(system, scale, (m) => log(`J1 ${m}`)),
    (system, error): J1Result => ({ system, settings: '', throughput: [], lateness: null, workerDeath: null, errors: [error] }),
    log,
  );
  // The failing-handler scenario: Vera alone, retry traffic bounded (failing.ts).
  let failing: FailingResult | null = null;
  try {
    failing = await runFailingHandler(options.logDir, options.quick ? FAILING_QUICK : FAILING_FULL, (m) => log(`J1 ${m}`));
  } catch (err) {
    log(`J1 failing handler: ${(err as Error).message}`);
  }
  const render = (meta: Parameters<typeof renderJ1>[2]): string => renderJ1(results, scale, meta) + (failing === null ? '' : `\n${renderFailing(failing).join('\n')}`);
  writeScenarioReport(options, 'J1', 'journal', started, { lockMs: LOCK_MS, scale, results, failingHandler: failing }, render, log);
  return { results, failures };
}
