import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { type FileTime, slowestFiles, summariseReport, type VitestJsonReport } from './test-report.ts';

const root = join(import.meta.dirname, '..');

it('names every failing test and counts the tests of a file that never ran them', () => {
  const folder = mkdtempSync(join(tmpdir(), 'rcpt-test-report-'));
  try {
    const reportPath = join(folder, 'report.json');
    const timesPath = join(folder, 'file-times.json');
    const run = spawnSync(
      process.execPath,
      [
        join(root, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--root',
        join(import.meta.dirname, 'test-report-fixtures'),
        '--reporter=json',
        `--outputFile.json=${reportPath}`,
        `--reporter=${join(import.meta.dirname, 'file-times-reporter.ts')}`,
        `--outputFile.file-times=${timesPath}`,
      ],
      { cwd: root, encoding: 'utf8' },
    );
    expect(run.status).toBe(1);
    const summary = summariseReport(JSON.parse(readFileSync(reportPath, 'utf8')) as VitestJsonReport, root);
    expect(summary.passed).toBe(3);
    // 1 assertion, 1 file that never loaded, 2 tests whose beforeAll threw.
    expect(summary.failed).toBe(4);
    expect(summary.failures.sort()).toEqual([
      'scripts/test-report-fixtures/fails-to-load.test.ts (broken at load)',
      'scripts/test-report-fixtures/hook-fails.test.ts (2 tests not run: the system did not start)',
      'scripts/test-report-fixtures/one-fails.test.ts › arithmetic › is wrong on purpose',
    ]);

    // Every file is timed, the one that never loaded too; a file's hooks count in its time.
    const times = JSON.parse(readFileSync(timesPath, 'utf8')) as FileTime[];
    expect(times.map((time) => time.file.split('/').pop()).sort()).toEqual([
      'fails-to-load.test.ts',
      'hook-fails.test.ts',
      'one-fails.test.ts',
      'passes.test.ts',
      'slow-hook.test.ts',
    ]);
    const slowHook = times.find((time) => time.file.endsWith('slow-hook.test.ts'));
    expect(slowHook?.durationMs).toBeGreaterThanOrEqual(400);
    expect(slowestFiles(times, root, 1)).toEqual([
      expect.stringMatching(/^ +\d+\.\d s {2}\S* {2}scripts\/test-report-fixtures\/slow-hook\.test\.ts$/),
    ]);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

it('lists the slowest files first, at most as many as asked, in seconds with their project', () => {
  const times: FileTime[] = [
    { project: 'shared', file: `${root}/shared/src/a.test.ts`, durationMs: 120 },
    { project: 'e2e', file: `${root}/test/e2e/batch.test.ts`, durationMs: 157_249 },
    { project: 'edge', file: `${root}/edge/src/b.test.ts`, durationMs: 9_960 },
    { project: 'e2e', file: `${root}/test/e2e/start.test.ts`, durationMs: 45_000 },
  ];
  expect(slowestFiles(times, root, 3)).toEqual([
    '  157.2 s  e2e   test/e2e/batch.test.ts',
    '   45.0 s  e2e   test/e2e/start.test.ts',
    '   10.0 s  edge  edge/src/b.test.ts',
  ]);
  expect(slowestFiles(times, root)).toHaveLength(4);
  expect(slowestFiles([], root)).toEqual([]);
});
