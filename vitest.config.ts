import { defineConfig } from 'vitest/config';

// One run, six projects: the pure core, the prober (against the fake mail world), the
// repository's scripts, the API client, the edge inside workerd, and whole-system tests
// against a real `wrangler dev`.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'shared',
          include: ['shared/src/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'prober',
          include: ['prober/src/**/*.test.ts', 'test/world/**/*.test.ts'],
          environment: 'node',
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'scripts',
          include: ['scripts/*.test.ts'],
          environment: 'node',
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'client',
          include: ['client/src/**/*.test.ts'],
          environment: 'node',
        },
      },
      './edge/vitest.config.ts',
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          environment: 'node',
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
