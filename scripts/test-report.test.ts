import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { summariseReport, type VitestJsonReport } from './test-report.ts';

const root = join(import.meta.dirname, '..');

it('names every failing test and counts the tests of a file that never ran them', () => {
  const folder = mkdtempSync(join(tmpdir(), 'rcpt-test-report-'));
  try {
    const reportPath = join(folder, 'report.json');
    const run = spawnSync(
      process.execPath,
      [
        join(root, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--root',
        join(import.meta.dirname, 'test-report-fixtures'),
        '--reporter=json',
        `--outputFile.json=${reportPath}`,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect(run.status).toBe(1);
    const summary = summariseReport(JSON.parse(readFileSync(reportPath, 'utf8')) as VitestJsonReport, root);
    expect(summary.passed).toBe(2);
    // 1 assertion, 1 file that never loaded, 2 tests whose beforeAll threw.
    expect(summary.failed).toBe(4);
    expect(summary.failures.sort()).toEqual([
      'scripts/test-report-fixtures/fails-to-load.test.ts (broken at load)',
      'scripts/test-report-fixtures/hook-fails.test.ts (2 tests not run: the system did not start)',
      'scripts/test-report-fixtures/one-fails.test.ts › arithmetic › is wrong on purpose',
    ]);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
