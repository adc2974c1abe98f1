import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
    coverage: {
      provider: 'v8',
      include: ['lambdas/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        'lambdas/core/**': { lines: 95 },
      },
    },
  },
});
