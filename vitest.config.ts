import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The SDK warns on Node 20 that releases after January 2027 need Node 22; the versions are pinned.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
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
