import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Multi-process tests bind loopback ports; keep file-level parallelism modest on 2 cores.
    maxWorkers: 2,
  },
});
