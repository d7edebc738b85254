import { defineConfig } from 'vitest/config';

// One run, seven projects: the pure core, the prober (against the fake mail world), the
// repository's scripts, the API client, the edge inside workerd (two: edge/vitest.project.ts),
// and whole-system tests against a real `wrangler dev`.
export default defineConfig({
  test: {
    // Two files at a time on a two-core runner; the whole-system files run as a group of their
    // own after the rest (their maxWorkers below), so no unit file shares the cores with three
    // stacks starting.
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: 'shared',
          include: ['shared/src/**/*.test.ts'],
          environment: 'node',
          // Pure functions and their tables: one process serves every file.
          isolate: false,
          // A fuzzed property runs a few hundred cases: a second on a quiet runner, over five
          // when the e2e stacks share its two cores. The limit only stops a hang.
          testTimeout: 30_000,
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
          isolate: false,
          // The MCP server's tests start it as a process: a hang guard, as for `shared`.
          testTimeout: 30_000,
        },
      },
      './edge/vitest.config.ts',
      './edge/vitest.fleet.config.ts',
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/e2e/migrated-database.ts'],
          // Three files at a time: each mostly waits (retry paces, greylisting delays, deadlines)
          // while its stack idles, so three keep two cores busy.
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
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
