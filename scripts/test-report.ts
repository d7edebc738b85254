// Reads vitest's JSON report into the summary CI prints: which tests failed, by name, and
// how many passed and failed. A file that fails to load, or whose hook fails, runs none of
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
