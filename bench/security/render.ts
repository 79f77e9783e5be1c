// Regenerates docs/performance-security.md from a `--security-only` result file,
// without measuring again (after editing the report's generator or
// bench/security/analysis.md, the hand-written reading of the run):
//   npx tsx bench/security/render.ts [RESULT.json] [REPORT.md]
// Defaults: the newest bench/results/<date>-security.json, docs/performance-security.md.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { renderSecurity, type SecurityResult } from './report.js';

const ROOT = resolve(import.meta.dirname, '../..');
export const ANALYSIS_FILE = join(ROOT, 'bench/security/analysis.md');

/** The newest `<date>-security.json` in `dir`, or null. */
export function newestSecurityResult(dir: string): string | null {
  const names = readdirSync(dir).filter((n) => /^\d{4}-\d{2}-\d{2}-security\.json$/.test(n)).sort();
  const last = names[names.length - 1];
  return last === undefined ? null : join(dir, last);
}

function main(): number {
  const [resultArg, docsArg] = process.argv.slice(2);
  const resultFile = resultArg === undefined ? newestSecurityResult(join(ROOT, 'bench/results')) : resolve(resultArg);
  if (resultFile === null) {
    process.stderr.write('render: no <date>-security.json in bench/results; run `npm run bench -- --security-only` first\n');
    return 2;
  }
  const docsFile = resolve(docsArg ?? join(ROOT, 'docs/performance-security.md'));
  const stored = JSON.parse(readFileSync(resultFile, 'utf8')) as SecurityResult & { readonly command: string; readonly seconds: number };
  const analysis = existsSync(ANALYSIS_FILE) ? readFileSync(ANALYSIS_FILE, 'utf8') : undefined;
  writeFileSync(docsFile, renderSecurity(stored, { command: stored.command, seconds: stored.seconds, resultFile: relative(dirname(docsFile), resultFile), ...(analysis === undefined ? {} : { analysis }) }));
  process.stdout.write(`render: wrote ${relative(process.cwd(), docsFile)} from ${relative(process.cwd(), resultFile)}\n`);
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) process.exitCode = main();
