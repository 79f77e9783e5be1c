// Unit tests of the benchmark's own pieces (not part of `npm test`, which must
// not run the bench): npx vitest run --config bench/vitest.config.ts
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['bench/test/**/*.test.ts'],
    testTimeout: 20_000,
  },
});
