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

/** Runs statements in order (one wrangler call) and returns the rows of each. */
export function executeSql(target: D1Target, sql: string): Record<string, unknown>[][] {
  return rowsOf(runWrangler(executeArgs(target, sql)));
}

/** executeSql without blocking the event loop: for a process talking to the running edge meanwhile. */
export async function executeSqlAsync(target: D1Target, sql: string): Promise<Record<string, unknown>[][]> {
  return rowsOf(await runWranglerAsync(executeArgs(target, sql)));
}

/** Attempts of a read that found the database locked by the running edge's write. */
const BUSY_READ_ATTEMPTS = 6;

/**
 * One read-only query (a SELECT) of the running system's database. wrangler opens the same local
 * file as `wrangler dev` and cannot be given SQLite's busy timeout, so a read that meets the
 * edge's write answers SQLITE_BUSY ("database is locked", https://sqlite.org/rescode.html#busy):
 * it is asked again after a short wait, as a busy timeout would, since a read that failed changed
 * nothing. Writes are never retried this way.
 */
export async function queryRowsAsync(target: D1Target, query: string): Promise<Record<string, unknown>[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const [rows] = await executeSqlAsync(target, query);
      return rows ?? [];
    } catch (error) {
      if (attempt >= BUSY_READ_ATTEMPTS || !String(error).includes('SQLITE_BUSY')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
    }
  }
}

export function applyMigrations(target: D1Target): void {
  runWrangler(['d1', 'migrations', 'apply', DATABASE_NAME, ...targetArgs(target)]);
}
