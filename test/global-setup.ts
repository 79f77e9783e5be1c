// Multi-process tests run the real `vera` command (bin/vera.js -> dist/), so build it once before any test file runs.
// Type errors do not stop the build here: `npm test` typechecks strictly before it runs vitest.
import { spawnSync } from 'node:child_process';

export default function setup(): void {
  const r = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { encoding: 'utf8' });
  if (r.status !== 0) console.warn(`[global-setup] tsc reported errors; dist/ was emitted anyway:\n${r.stdout.slice(0, 2000)}`);
}
