// Runs J1 on every queue in turn and writes its result JSON and report.
// Called by bench/run.ts (npm run bench; --journal-only runs this part alone).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { measureEach, type Contender } from '../lib/each-system.js';
import { ensurePackage } from '../lib/packages.js';
import { bullmqQueues, pgBossQueues, veraQueues } from './adapters.js';
import { J1_FULL, J1_QUICK, LOCK_MS, runJ1, type J1Result } from './j1.js';
import { renderJ1 } from './report.js';
import { postgresAvailable } from './servers.js';
import type { QueueSystem } from './queue.js';

export interface JournalBenchOptions {
  readonly quick: boolean;
  readonly outDir: string;
  readonly docsFile: string;
  readonly logDir: string;
  readonly filePrefix: string;
  readonly command: string;
  readonly root: string;
}

export async function runJournalBench(options: JournalBenchOptions, log: (m: string) => void): Promise<{ results: J1Result[]; failures: number }> {
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
  mkdirSync(options.outDir, { recursive: true });
  const path = join(options.outDir, `${options.filePrefix}journal.json`);
  const seconds = (performance.now() - started) / 1000;
  writeFileSync(path, JSON.stringify({ schema: 1, scenario: 'J1', command: options.command, finishedAt: new Date().toISOString(), seconds, lockMs: LOCK_MS, scale, results }, null, 2) + '\n');
  writeFileSync(options.docsFile, renderJ1(results, { command: options.command, seconds, resultFile: relative(join(options.docsFile, '..'), path) }));
  log(`J1 wrote ${relative(options.root, path)} and ${relative(options.root, options.docsFile)} after ${Math.round(seconds)} s`);
  return { results, failures };
}
