// Runs H1 and writes its result JSON and report. Called by bench/run.ts
// (npm run bench; --hibernate-only runs this part alone).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { JournalBenchOptions } from '../journal/run.js';
import { H1_FULL, H1_QUICK, runH1 } from './h1.js';
import { renderH1 } from './report.js';

export async function runHibernateBench(options: JournalBenchOptions, log: (m: string) => void): Promise<{ failures: number }> {
  const started = performance.now();
  const scale = options.quick ? H1_QUICK : H1_FULL;
  let failures = 0;
  try {
    const result = await runH1(scale, options.logDir, (m) => log(`H1 ${m}`));
    failures += result.errors.length;
    mkdirSync(options.outDir, { recursive: true });
    const path = join(options.outDir, `${options.filePrefix}hibernation.json`);
    const seconds = (performance.now() - started) / 1000;
    writeFileSync(path, JSON.stringify({ schema: 1, scenario: 'H1', command: options.command, finishedAt: new Date().toISOString(), seconds, scale, result }, null, 2) + '\n');
    writeFileSync(options.docsFile, renderH1(result, { command: options.command, seconds, resultFile: relative(join(options.docsFile, '..'), path) }));
    log(`H1 wrote ${relative(options.root, path)} and ${relative(options.root, options.docsFile)} after ${Math.round(seconds)} s`);
  } catch (err) {
    failures++;
    log(`H1 failed: ${(err as Error).message}`);
  }
  return { failures };
}
