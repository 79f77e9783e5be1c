// Runs H1 and writes its result JSON and report. Called by bench/run.ts
// (npm run bench; --hibernate-only runs this part alone).
import { writeScenarioReport, type ScenarioOptions } from '../lib/scenario-report.js';
import { H1_FULL, H1_QUICK, runH1 } from './h1.js';
import { renderH1 } from './report.js';

export async function runHibernateBench(options: ScenarioOptions, log: (m: string) => void): Promise<{ failures: number }> {
  const started = performance.now();
  const scale = options.quick ? H1_QUICK : H1_FULL;
  let failures = 0;
  try {
    const result = await runH1(scale, options.logDir, (m) => log(`H1 ${m}`));
    failures += result.errors.length;
    writeScenarioReport(options, 'H1', 'hibernation', started, { scale, result }, (meta) => renderH1(result, meta), log);
  } catch (err) {
    failures++;
    log(`H1 failed: ${(err as Error).message}`);
  }
  return { failures };
}
