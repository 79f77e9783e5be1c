import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // bench/test holds the benchmark suite's own tests (its samples, report and load generator).
    include: ['test/**/*.test.ts', 'bench/test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Multi-process tests bind loopback ports; keep file-level parallelism modest on 2 cores.
    maxWorkers: 2,
  },
});
