// Runs every vitest project once and prints the ten slowest test files and the names of
// failing tests, then the plain `N passed, N failed` line CI reads.
// Extra arguments are passed to vitest (e.g. `npm test -- --project shared`).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  type FileTime,
  slowestFiles,
  summariseReport,
  type TestSummary,
  type VitestJsonReport,
} from './test-report.ts';

const root = join(import.meta.dirname, '..');
const artifacts = join(root, '.test-artifacts');
const reportPath = join(artifacts, 'vitest-report.json');
const fileTimesPath = join(artifacts, 'file-times.json');
mkdirSync(artifacts, { recursive: true });
rmSync(reportPath, { force: true });
rmSync(fileTimesPath, { force: true });

const run = spawnSync(
  'vitest',
  [
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile.json=${reportPath}`,
    `--reporter=${join(root, 'scripts', 'file-times-reporter.ts')}`,
    `--outputFile.file-times=${fileTimesPath}`,
    ...process.argv.slice(2),
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      ...quietWrangler(),
      // The tests start hundreds of Node processes (wrangler, probers, scripts): each loads code
      // V8 compiled once for the run instead of compiling it again.
      NODE_COMPILE_CACHE: join(root, 'node_modules', '.cache', 'node-compile-cache'),
    },
  },
);

let summary: TestSummary;
try {
  summary = summariseReport(JSON.parse(readFileSync(reportPath, 'utf8')) as VitestJsonReport, root);
} catch {
  summary = { passed: 0, failed: 1, failures: [`vitest wrote no report (exit ${run.status})`] };
}
// vitest exiting non-zero with every test passed (an unhandled error between tests) is a failure too.
if (run.status !== 0 && summary.failed === 0) {
  summary.failed = 1;
  summary.failures.push(`vitest exited with ${run.status} (see its output above)`);
}
// A run that never finished writes no times; the summary below says why.
if (existsSync(fileTimesPath)) {
  console.log('\nSlowest files:');
  for (const line of slowestFiles(JSON.parse(readFileSync(fileTimesPath, 'utf8')) as FileTime[], root))
    console.log(line);
}
if (summary.failures.length > 0) {
  console.log('\nFailed:');
  for (const failure of summary.failures) console.log(`  ✗ ${failure}`);
}
console.log(`${summary.passed} passed, ${summary.failed} failed`);
process.exit(summary.failed === 0 ? 0 : 1);

function quietWrangler(): Record<string, string> {
  return {
    WRANGLER_SEND_METRICS: 'false',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    WRANGLER_SEND_ERROR_REPORTS: 'false',
  };
}
