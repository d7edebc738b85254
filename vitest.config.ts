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
          // Every wait in these tests is for a condition (a port answering, a job completing,
          // an element appearing). These limits only stop a run that hangs: starting wrangler,
          // workerd and Chromium takes minutes on a busy two-core runner, most on a first run.
          testTimeout: 300_000,
          hookTimeout: 600_000,
          expect: { poll: { timeout: 60_000, interval: 100 } },
        },
      },
    ],
  },
});
