// Writes test/file-durations.json, the order in which `npm test` starts its files
// (test/longest-first.ts), from the file times of the last `npm test` run: run it after a whole
// green run on a quiet machine when files were added or got much slower, and commit the table.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DURATIONS_PATH } from '../test/longest-first.ts';
import type { FileTime } from './test-report.ts';

const root = join(import.meta.dirname, '..');
const fileTimesPath = process.argv[2] ?? join(root, '.test-artifacts', 'file-times.json');
const times = JSON.parse(readFileSync(fileTimesPath, 'utf8')) as FileTime[];
// The paths of the run that measured (a fresh clone's, say) read from that run's root.
const runRoot = process.argv[3] ?? root;
const seconds = Object.fromEntries(
  times
    .map((time) => [relative(runRoot, time.file), Math.round(time.durationMs / 100) / 10] as const)
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);
writeFileSync(DURATIONS_PATH, `${JSON.stringify(seconds, null, 2)}\n`);
console.log(`${Object.keys(seconds).length} files' durations written to ${relative(root, DURATIONS_PATH)}`);
