// Multi-process tests run the real `vera` command (bin/vera.js -> dist/), so build it once before any test file runs,
// with the browser bundles the members serve at /ui (dist/ui: scripts/build-ui.ts).
// Type errors do not stop the build here: `npm test` typechecks strictly before it runs vitest.
import { spawnSync } from 'node:child_process';
import { buildUi } from '../scripts/build-ui.js';

// Each vitest project (vitest.config.ts: default and long) runs this setup; one build per run is enough.
const BUILT = Symbol.for('vera.test.built');

export default async function setup(): Promise<void> {
  const done = globalThis as { [BUILT]?: Promise<void> };
  done[BUILT] ??= build();
  await done[BUILT];
}

async function build(): Promise<void> {
  const r = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { encoding: 'utf8' });
  if (r.status !== 0) console.warn(`[global-setup] tsc reported errors; dist/ was emitted anyway:\n${r.stdout.slice(0, 2000)}`);
  const ui = await buildUi();
  for (const f of ui.failures) console.warn(`[global-setup] ${f.entry} did not bundle (dist/ui has the rest):\n${f.error.slice(0, 2000)}`);
}
