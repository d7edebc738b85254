import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The whole-system files first, then the rest, each part in vitest's own order: the longest
 * files start first, and the quick ones fill the workers at the end instead of leaving one
 * whole-system file running alone.
 */
class WholeSystemFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const wholeSystem = (file: TestSpecification) => file.project.name === 'e2e';
    return [...sorted.filter(wholeSystem), ...sorted.filter((file) => !wholeSystem(file))];
  }
}

// One run, six projects: the pure core, the prober (against the fake mail world), the
// repository's scripts, the API client, the edge inside workerd, and whole-system tests
// against a real `wrangler dev`.
export default defineConfig({
  test: {
    // Files run side by side, all projects in one pool. A whole-system file spends most of its
    // time waiting (retry paces, greylisting delays, deadlines) while its stack idles, so on a
    // two-core runner three at a time keep both cores busy.
    maxWorkers: 3,
    sequence: { sequencer: WholeSystemFirst },
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
          globalSetup: ['test/e2e/migrated-database.ts'],
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
