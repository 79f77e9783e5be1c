// Runs J1 on every queue in turn and writes its result JSON and report.
// Called by bench/run.ts (npm run bench; --journal-only runs this part alone).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
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
  const systems: Array<{ name: string; open: () => Promise<QueueSystem>; unavailable?: string }> = [
    { name: 'Vera journal', open: () => veraQueues(options.logDir) },
    { name: 'BullMQ always', open: () => bullmqQueues('always', options.logDir), ...(redis.available ? {} : { unavailable: redis.note }) },
    { name: 'BullMQ everysec', open: () => bullmqQueues('everysec', options.logDir), ...(redis.available ? {} : { unavailable: redis.note }) },
    { name: 'pg-boss', open: () => pgBossQueues(options.logDir), ...(postgres.available && postgresAvailable() ? {} : { unavailable: postgres.note }) },
  ];
  const results: J1Result[] = [];
  let failures = 0;
  for (const s of systems) {
    if (s.unavailable !== undefined) {
      log(`J1 ${s.name}: not measured: ${s.unavailable}`);
      results.push({ system: s.name, settings: '', throughput: [], lateness: null, workerDeath: null, errors: [`not available: ${s.unavailable}`] });
      continue;
    }
    let system: QueueSystem | null = null;
    try {
      system = await s.open();
      const r = await runJ1(system, scale, (m) => log(`J1 ${m}`));
      results.push(r);
      failures += r.errors.length;
    } catch (err) {
      failures++;
      log(`J1 ${s.name}: failed: ${(err as Error).message}`);
      results.push({ system: s.name, settings: '', throughput: [], lateness: null, workerDeath: null, errors: [(err as Error).message] });
    } finally {
      await system?.stop().catch(() => undefined);
    }
  }
  mkdirSync(options.outDir, { recursive: true });
  const path = join(options.outDir, `${options.filePrefix}journal.json`);
  const seconds = (performance.now() - started) / 1000;
  writeFileSync(path, JSON.stringify({ schema: 1, scenario: 'J1', command: options.command, finishedAt: new Date().toISOString(), seconds, lockMs: LOCK_MS, scale, results }, null, 2) + '\n');
  writeFileSync(options.docsFile, renderJ1(results, { command: options.command, seconds, resultFile: relative(join(options.docsFile, '..'), path) }));
  log(`J1 wrote ${relative(options.root, path)} and ${relative(options.root, options.docsFile)} after ${Math.round(seconds)} s`);
  return { results, failures };
}
