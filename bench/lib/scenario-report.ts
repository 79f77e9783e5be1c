// What the scenarios run after the main comparison (J1, A1, H1) share: the
// options bench/run.ts gives them, and writing a result JSON beside its
// markdown report.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

export interface ScenarioOptions {
  readonly quick: boolean;
  readonly outDir: string;
  readonly docsFile: string;
  readonly logDir: string;
  readonly filePrefix: string;
  readonly command: string;
  readonly root: string;
}

export interface ReportMeta {
  readonly command: string;
  readonly seconds: number;
  readonly resultFile: string;
}

/** Writes `<outDir>/<prefix><name>.json` (the fields, timed from `started`) and the report `render` makes. */
export function writeScenarioReport(
  options: ScenarioOptions,
  scenario: string,
  name: string,
  started: number,
  fields: Readonly<Record<string, unknown>>,
  render: (meta: ReportMeta) => string,
  log: (m: string) => void,
): void {
  mkdirSync(options.outDir, { recursive: true });
  const path = join(options.outDir, `${options.filePrefix}${name}.json`);
  const seconds = (performance.now() - started) / 1000;
  writeFileSync(path, JSON.stringify({ schema: 1, scenario, command: options.command, finishedAt: new Date().toISOString(), seconds, ...fields }, null, 2) + '\n');
  writeFileSync(options.docsFile, render({ command: options.command, seconds, resultFile: relative(join(options.docsFile, '..'), path) }));
  log(`${scenario} wrote ${relative(options.root, path)} and ${relative(options.root, options.docsFile)} after ${Math.round(seconds)} s`);
}
