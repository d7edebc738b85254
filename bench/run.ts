// `npm run bench`: runs each benchmark in its own process (so heap and RSS figures are its
// own) and prints one table. `npm run bench -- core prober` runs only those.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export interface Figure {
  name: string;
  value: number;
  unit: string;
  target?: string;
}

const BENCHES = [
  'core',
  'prober',
  'single-verify',
  'time-budget',
  'batch',
  'distance',
  'store-distance',
  'capacity',
  'outcomes',
  'egress',
  'hub',
  'fleet',
  'upload-memory',
  'widget',
];
/**
 * Longest one bench may run: the slowest (batch, egress) take a few minutes on a loaded two-core
 * machine. Past it the bench is ended (its stack goes with it) and its row says so, and the
 * others still run: a bench that waits for ever never holds up the whole table.
 */
const BENCH_LIMIT_MS = 20 * 60_000;
const selected = process.argv.slice(2).filter((name) => !name.startsWith('-'));
const rows: (Figure & { bench: string })[] = [];

for (const bench of selected.length > 0 ? selected : BENCHES) {
  process.stderr.write(`bench ${bench}…\n`);
  const run = spawnSync(process.execPath, ['--expose-gc', join(import.meta.dirname, `${bench}.ts`)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
    timeout: BENCH_LIMIT_MS,
    killSignal: 'SIGTERM',
  });
  const line = (run.stdout ?? '').trim().split('\n').at(-1) ?? '';
  if (run.status !== 0 || !line.startsWith('[')) {
    const timedOut = (run.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
    rows.push({
      bench,
      name: 'failed',
      value: Number.NaN,
      unit: timedOut ? `no end in ${BENCH_LIMIT_MS / 60_000} min` : `exit ${run.status ?? run.signal}`,
    });
    continue;
  }
  for (const figure of JSON.parse(line) as Figure[]) rows.push({ bench, ...figure });
}

const table = rows.map((row) => [
  row.bench,
  row.name,
  Number.isFinite(row.value) ? formatValue(row.value) : 'n/a',
  row.unit,
  row.target ?? '',
]);
const header = ['bench', 'figure', 'value', 'unit', 'target'];
const widths = header.map((title, column) =>
  Math.max(title.length, ...table.map((cells) => (cells[column] ?? '').length)),
);
const format = (cells: string[]) => cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ');
console.log(format(header));
console.log(widths.map((width) => '-'.repeat(width)).join('  '));
for (const cells of table) console.log(format(cells));
process.exit(rows.some((row) => row.name === 'failed') ? 1 : 0);

function formatValue(value: number): string {
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  // Below 1 (a cost per 1,000 addresses, say) three significant digits, not two decimals.
  if (value !== 0 && Math.abs(value) < 1) return String(Number(value.toPrecision(3)));
  return value.toFixed(value >= 100 ? 0 : value >= 10 ? 1 : 2);
}
