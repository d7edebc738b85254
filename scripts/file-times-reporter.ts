// A vitest reporter that writes how long each test file took in its worker, from loading its
// environment to its last hook: the time a file costs the run, which for a whole-system file
// is mostly its `beforeAll` starting the stack (vitest's JSON report times only the tests).
// `npm test` passes `--reporter=./scripts/file-times-reporter.ts --outputFile.file-times=PATH`
// and prints the slowest files from PATH (scripts/test-report.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';
import type { FileTime } from './test-report.ts';

export default class FileTimesReporter implements Reporter {
  private outputFile: string | null = null;

  onInit(vitest: Vitest): void {
    const outputFile = vitest.config.outputFile;
    const path = typeof outputFile === 'object' ? outputFile['file-times'] : undefined;
    this.outputFile = path ? resolve(vitest.config.root, path) : null;
  }

  onTestRunEnd(testModules: readonly TestModule[]): void {
    if (!this.outputFile) return;
    const times: FileTime[] = testModules.map((module) => {
      const took = module.diagnostic();
      return {
        project: module.project.name,
        file: module.moduleId,
        durationMs:
          took.environmentSetupDuration +
          took.prepareDuration +
          took.collectDuration +
          took.setupDuration +
          took.duration,
      };
    });
    mkdirSync(dirname(this.outputFile), { recursive: true });
    writeFileSync(this.outputFile, JSON.stringify(times));
  }
}
