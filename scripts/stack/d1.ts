// Operator access to the D1 database through wrangler: the local one of `wrangler dev`
// (optionally under another persistence folder), or the deployed one with `remote`.
import { runWrangler, runWranglerAsync } from './wrangler-cli.ts';

export const DATABASE_NAME = 'rcpt';

export interface D1Target {
  remote?: boolean;
  persistTo?: string;
}

function targetArgs(target: D1Target): string[] {
  if (target.remote) return ['--remote'];
  return ['--local', ...(target.persistTo ? ['--persist-to', target.persistTo] : [])];
}

/** An SQL literal: strings quoted with '' doubled; numbers and null as they are. */
export function sqlLiteral(value: string | number | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
    return String(value);
  }
  if (/\0/.test(value)) throw new Error('NUL is not allowed in SQL text');
  return `'${value.replaceAll("'", "''")}'`;
}

/** A statement with its `?N` parameters written in as literals, for `d1 execute --command`. */
export function inlineStatement(statement: { sql: string; params: (string | number | null)[] }): string {
  return statement.sql.replace(/\?(\d+)/g, (_, position: string) => {
    const index = Number(position) - 1;
    if (index >= statement.params.length) throw new Error(`no parameter ?${position}`);
    return sqlLiteral(statement.params[index] ?? null);
  });
}

function executeArgs(target: D1Target, sql: string): string[] {
  return ['d1', 'execute', DATABASE_NAME, ...targetArgs(target), '--json', '--command', sql];
}

function rowsOf(output: string): Record<string, unknown>[][] {
  const parsed = JSON.parse(output) as { results?: Record<string, unknown>[] }[];
  return parsed.map((statement) => statement.results ?? []);
}

/** Attempts of a local batch that found the database locked by the running edge's write. */
const BUSY_ATTEMPTS = 6;

function busyWait(attempt: number): number {
  return 100 * 2 ** attempt;
}

/**
 * Whether a failed local batch may simply be run again. wrangler opens the same local file as
 * `wrangler dev` and cannot be given SQLite's busy timeout, so a batch that meets the edge's write
 * answers SQLITE_BUSY ("database is locked", https://sqlite.org/rescode.html#busy). A command's
 * statements run as one D1 batch, and a batch is one transaction
 * (https://developers.cloudflare.com/d1/worker-api/d1-database/#batch): the locked batch wrote
 * nothing, so asking again after a short wait is what a busy timeout would do, for writes as for
 * reads. The deployed database is never retried here.
 */
function mayRetry(target: D1Target, error: unknown, attempt: number): boolean {
  return !target.remote && attempt < BUSY_ATTEMPTS && String(error).includes('SQLITE_BUSY');
}

/** Runs statements in order as one transaction (one wrangler call) and returns the rows of each. */
export function executeSql(target: D1Target, sql: string): Record<string, unknown>[][] {
  for (let attempt = 1; ; attempt++) {
    try {
      return rowsOf(runWrangler(executeArgs(target, sql)));
    } catch (error) {
      if (!mayRetry(target, error, attempt)) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, busyWait(attempt));
    }
  }
}

/** executeSql without blocking the event loop: for a process talking to the running edge meanwhile. */
export async function executeSqlAsync(target: D1Target, sql: string): Promise<Record<string, unknown>[][]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return rowsOf(await runWranglerAsync(executeArgs(target, sql)));
    } catch (error) {
      if (!mayRetry(target, error, attempt)) throw error;
      await new Promise((resolve) => setTimeout(resolve, busyWait(attempt)));
    }
  }
}

/** One read-only query (a SELECT) of the running system's database: the rows it found. */
export async function queryRowsAsync(target: D1Target, query: string): Promise<Record<string, unknown>[]> {
  const [rows] = await executeSqlAsync(target, query);
  return rows ?? [];
}

export function applyMigrations(target: D1Target): void {
  runWrangler(['d1', 'migrations', 'apply', DATABASE_NAME, ...targetArgs(target)]);
}
