// Reads vitest's JSON report into the summary CI prints: which tests failed, by name, and
// how many passed and failed; and the files that took longest (scripts/file-times-reporter.ts). A file that fails to load, or whose hook fails, runs none of
// its tests; each of them (at least one per file) counts as failed, so the total can never
// look better than the run was.
import { relative } from 'node:path';

/** The part of vitest's JSON reporter output (`--reporter=json`) the summary reads. */
export interface VitestJsonReport {
  numPassedTests: number;
  testResults: {
    name: string;
    status: 'passed' | 'failed';
    message: string;
    assertionResults: { ancestorTitles: string[]; title: string; status: string }[];
  }[];
}

export interface TestSummary {
  passed: number;
  failed: number;
  /** One line per failure: `file › describe › test`, or `file (message)` for a whole file. */
  failures: string[];
}

export function summariseReport(report: VitestJsonReport, root: string): TestSummary {
  const failures: string[] = [];
  let failed = 0;
  for (const file of report.testResults) {
    const path = relative(root, file.name);
    const failedTests = file.assertionResults.filter((test) => test.status === 'failed');
    for (const test of failedTests) failures.push([path, ...test.ancestorTitles, test.title].join(' › '));
    failed += failedTests.length;
    if (file.status === 'failed' && failedTests.length === 0) {
      const notRun = file.assertionResults.filter((test) => test.status !== 'passed').length;
      const reason = file.message.split('\n')[0] || 'failed';
      failures.push(`${path} (${notRun === 0 ? reason : `${notRun} tests not run: ${reason}`})`);
      failed += Math.max(1, notRun);
    }
  }
  return { passed: report.numPassedTests, failed, failures };
}

/** How long one test file took in its worker, hooks included (scripts/file-times-reporter.ts). */
export interface FileTime {
  project: string;
  /** Absolute path of the test file. */
  file: string;
  durationMs: number;
}

/** The `count` slowest files, slowest first, one line each: seconds, project, path from `root`. */
export function slowestFiles(times: readonly FileTime[], root: string, count = 10): string[] {
  const slowest = [...times].sort((a, b) => b.durationMs - a.durationMs).slice(0, count);
  const width = Math.max(0, ...slowest.map((time) => time.project.length));
  return slowest.map(
    (time) =>
      `${(time.durationMs / 1000).toFixed(1).padStart(7)} s  ${time.project.padEnd(width)}  ${relative(root, time.file)}`,
  );
}
