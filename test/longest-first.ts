// The order in which `npm test` starts its files: within a group and project, the file that took
// longest in the last measured run first (test/file-durations.json), so a long whole-system file
// never starts last on a fresh clone, where vitest has no timings of its own and would order by
// file size. A file the table does not know yet starts before every known one, as vitest does
// with files it has no timings for. `npm run test:durations` writes the table from the last run.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each test file took in a whole run, by its path from the repository's root. */
export const DURATIONS_PATH = join(import.meta.dirname, 'file-durations.json');

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const seconds = JSON.parse(readFileSync(DURATIONS_PATH, 'utf8')) as Record<string, number>;
    const root = this.ctx.config.root;
    const took = (spec: TestSpecification) =>
      seconds[relative(root, spec.moduleId)] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => {
      const group = a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder;
      if (group !== 0) return group;
      if (a.project.name !== b.project.name) return a.project.name < b.project.name ? -1 : 1;
      return took(b) - took(a) || (a.moduleId < b.moduleId ? -1 : 1);
    });
  }
}
