import { configDefaults, defineConfig } from 'vitest/config';

// The long tests: `npm run test:all` (and `.ci/run`) runs them, `npm test` does not.
// Two projects over one list: `vitest run --project default` is the quick run,
// `vitest run` runs both, and naming a file (`npx vitest run test/scale/million.test.ts`)
// finds it in whichever project holds it. A new test joins this list when it takes
// more than about 20 s on its own (measure: `npx vitest run FILE --reporter=json`).
// Seconds from a full run on the 2-core CI machine (ci 15:40, whole suite 465 s):
export const LONG_TESTS = [
  'test/scale/**/*.test.ts', // 10^6 items: assign 139 s, journal 76 s, end to end 67 s
  'test/cluster/scenarios.test.ts', // fault-injection scenarios on real clusters, 72 s
  'test/cluster/operations.test.ts', // rolling replacement, crash mid-snapshot, 28 s
  'test/families/hibernate/cluster.test.ts', // hibernation through kill -9 and a wiped member, 32 s
];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Multi-process tests bind loopback ports; keep file-level parallelism modest on 2 cores.
    maxWorkers: 2,
    // (Each project lists its own files: a project that extends the root appends to the root's include.)
    projects: [
      // bench/test holds the benchmark suite's own tests (its samples, report and load generator).
      { extends: true, test: { name: 'default', include: ['test/**/*.test.ts', 'bench/test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...LONG_TESTS] } },
      { extends: true, test: { name: 'long', include: LONG_TESTS } },
    ],
  },
});
