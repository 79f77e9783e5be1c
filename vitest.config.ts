import { configDefaults, defineConfig } from 'vitest/config';

// The long tests: `npm run test:all` (and `.ci/run`) runs them, `npm test` does not.
// Two projects over one list: `vitest run --project default` is the quick run,
// `vitest run` runs both, and naming a file (`npx vitest run test/scale/million.test.ts`)
// finds it in whichever project holds it. A test joins this list when it takes more
// than about 10 s on an idle machine and is a scale, fault-injection or packaging
// test; the quick run keeps one test of each cluster behaviour (failover, growing,
// shrinking, a wiped member, catch-up by snapshot). Measure with
// `npx vitest run FILE --reporter=json --outputFile=FILE.json`.
// Seconds: on the idle CI machine (whole suite 465 s) / on this one at load 15.
export const LONG_TESTS = [
  'test/scale/**/*.test.ts', // 10^6 items: assign 139, journal 76, end to end 67
  'test/cluster/scenarios.test.ts', // fault-injection scenarios on real clusters, 72
  'test/cluster/operations.test.ts', // rolling replacement, crash mid-snapshot, 28
  'test/families/hibernate/cluster.test.ts', // hibernation through kill -9 and a wiped member, 32
  'test/server/flipped-bytes.test.ts', // a byte changed anywhere in a stopped member's files, 14 / 41
  'test/families/journal/faults.test.ts', // thousands of journal cycles through two leader kills, 12 / 40
  'test/families/journal/schedules-failover.test.ts', // a schedule ticking through two leader kills, 19-21 at load
  'test/families/assign/race.test.ts', // one email raced across leader changes, 11 / 16
  'test/package/pack.test.ts', // npm pack, install and tsc in a fresh project, 10 / 40
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
