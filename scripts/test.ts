// Runs every vitest project once and prints the plain `N passed, N failed` line CI reads.
// Extra arguments are passed to vitest (e.g. `npm test -- --project shared`).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const artifacts = join(import.meta.dirname, '..', '.test-artifacts');
const reportPath = join(artifacts, 'vitest-report.json');
mkdirSync(artifacts, { recursive: true });
rmSync(reportPath, { force: true });

const run = spawnSync(
  'vitest',
  [
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${reportPath}`,
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit', env: { ...process.env, ...quietWrangler() } },
);

let passed = 0;
let failed = 0;
try {
  const report = JSON.parse(readFileSync(reportPath, 'utf8')) as {
    numPassedTests: number;
    numFailedTests: number;
    numTotalTestSuites: number;
    numFailedTestSuites: number;
  };
  passed = report.numPassedTests;
  // A file that fails to load has no test counted as failed: count it as one.
  failed = report.numFailedTests + (report.numFailedTests === 0 && run.status !== 0 ? 1 : 0);
} catch {
  failed = 1;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(run.status === 0 && failed === 0 ? 0 : 1);

function quietWrangler(): Record<string, string> {
  return {
    WRANGLER_SEND_METRICS: 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    WRANGLER_SEND_ERROR_REPORTS: 'false',
  };
}
