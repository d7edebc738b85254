// Operator access to the D1 databases: the local ones of `wrangler dev` (optionally under another
// persistence folder), or the deployed ones through wrangler with `remote`. The databases are those
// wrangler.toml declares: `rcpt`, the directory and shard 0, and one more per shard
// (docs/architecture.md, "Sharding what still grows").
//
// A local database is one SQLite file that wrangler dev's workerd keeps in WAL mode (its -wal
// and -shm files beside it), and SQLite lets other processes share such a file under its own
// locks (https://sqlite.org/wal.html#concurrency), as `wrangler d1 execute --local` does. This
// module opens the file itself: milliseconds where a wrangler process takes seconds of CPU. A
// database whose file does not exist yet is left to wrangler.
import { createHash, createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { parse } from 'smol-toml';
import { REPO_ROOT, runWrangler, runWranglerAsync } from './wrangler-cli.ts';

/** The directory's database (and shard 0): the one a target names when it names none. */
export const DATABASE_NAME = 'rcpt';

export interface D1Target {
  remote?: boolean;
  persistTo?: string;
  /** The database's `database_name` in wrangler.toml; default the directory's, DATABASE_NAME. */
  database?: string;
}

/** A database wrangler.toml declares (`[[d1_databases]]`). */
export interface DeclaredDatabase {
  binding: string;
  name: string;
  id: string | undefined;
}

let declared: DeclaredDatabase[] | undefined;

/** The D1 databases of the repository's wrangler.toml, in its order: the directory's first. */
export function declaredDatabases(): DeclaredDatabase[] {
  declared ??= (
    (parse(readFileSync(join(REPO_ROOT, 'wrangler.toml'), 'utf8')).d1_databases ?? []) as {
      binding: string;
      database_name: string;
      database_id?: string;
    }[]
  ).map((database) => ({
    binding: database.binding,
    name: database.database_name,
    id: database.database_id,
  }));
  return declared;
}

/** The target's database as wrangler.toml declares it. */
function databaseOf(target: D1Target): DeclaredDatabase {
  const name = target.database ?? DATABASE_NAME;
  const database = declaredDatabases().find((candidate) => candidate.name === name);
  if (!database) throw new Error(`wrangler.toml declares no D1 database named ${name}`);
  return database;
}

/**
 * `target` pointed at shard `shard`'s database: the one wrangler.toml binds as `DB` for shard 0,
 * `DB_SHARD_n` for shard n (docs/architecture.md, "Sharding what still grows").
 */
export function shardTarget(target: D1Target, shard: number): D1Target {
  const database = shardDatabase(shard);
  if (!database)
    throw new Error(`wrangler.toml binds no database for shard ${shard} (${shardBinding(shard)})`);
  return { ...target, database: database.name };
}

function shardBinding(shard: number): string {
  return shard === 0 ? 'DB' : `DB_SHARD_${shard}`;
}

function shardDatabase(shard: number): DeclaredDatabase | undefined {
  return declaredDatabases().find((candidate) => candidate.binding === shardBinding(shard));
}

/** How many shards wrangler.toml binds: `DB`, then `DB_SHARD_1`, `DB_SHARD_2` … while bound, as the edge counts them. */
export function declaredShardCount(): number {
  let count = 1;
  while (shardDatabase(count)) count++;
  return count;
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
  return ['d1', 'execute', databaseOf(target).name, ...targetArgs(target), '--json', '--command', sql];
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

/** Runs statements in order as one transaction and returns the rows of each. */
export function executeSql(target: D1Target, sql: string): Record<string, unknown>[][] {
  const file = localDatabaseFile(target);
  if (file) return executeOnFile(file, sql);
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
  const file = localDatabaseFile(target);
  if (file) return executeOnFile(file, sql);
  for (let attempt = 1; ; attempt++) {
    try {
      return rowsOf(await runWranglerAsync(executeArgs(target, sql)));
    } catch (error) {
      if (!mayRetry(target, error, attempt)) throw error;
      await new Promise((resolve) => setTimeout(resolve, busyWait(attempt)));
    }
  }
}

/**
 * The SQLite file of a local target's D1 database, or null when it has none yet. Miniflare keeps
 * each database in a Durable Object of its own, named by the database's id, in a file named by the
 * object's id; workerd derives that id from the name as `localDurableObjectId` does.
 */
export function localDatabaseFile(target: D1Target): string | null {
  if (target.remote) return null;
  const database = databaseOf(target);
  const file = join(
    target.persistTo ?? join(REPO_ROOT, '.wrangler', 'state'),
    'v3',
    'd1',
    D1_OBJECT_NAMESPACE,
    `${localDurableObjectId(D1_OBJECT_NAMESPACE, database.id ?? database.name)}.sqlite`,
  );
  return existsSync(file) ? file : null;
}

/** The unique key of the Durable Object namespace miniflare keeps local D1 databases in. */
const D1_OBJECT_NAMESPACE = 'miniflare-D1DatabaseObject';

/**
 * The id workerd gives the object named `name` of a local namespace (its `idFromName`): the first
 * 16 bytes of an HMAC-SHA-256 of the name, keyed by the SHA-256 of the namespace's unique key, then
 * the first 16 bytes of an HMAC of those, in hex. scripts/seed.test.ts checks it against the files
 * a local wrangler makes.
 */
export function localDurableObjectId(uniqueKey: string, name: string): string {
  const key = createHash('sha256').update(uniqueKey).digest();
  const named = createHmac('sha256', key).update(name).digest().subarray(0, 16);
  const check = createHmac('sha256', key).update(named).digest().subarray(0, 16);
  return Buffer.concat([named, check]).toString('hex');
}

/**
 * Node's SQLite module, loaded without the line it prints on first use ("SQLite is an experimental
 * feature"): `npm start` shows its reader what matters. Only this warning is held back; the few
 * calls used here (DatabaseSync, prepare, all, exec) are those of its documented API
 * (https://nodejs.org/docs/latest-v22.x/api/sqlite.html).
 */
export function sqlite(): typeof import('node:sqlite') {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: never[]) => {
    if (!String(warning).startsWith('SQLite is an experimental feature'))
      emitWarning.call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return process.getBuiltinModule('node:sqlite') as typeof import('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
}

/**
 * How long a statement waits for the running edge's write to end (SQLite's busy timeout,
 * https://sqlite.org/c3ref/busy_timeout.html): the edge's transactions take milliseconds.
 */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * Runs `sql` on the database file as one transaction, as a D1 batch runs
 * (https://developers.cloudflare.com/d1/worker-api/d1-database/#batch): all its statements or none.
 * Foreign keys are enforced, as D1 does (https://developers.cloudflare.com/d1/sql-api/foreign-keys/).
 */
function executeOnFile(file: string, sql: string): Record<string, unknown>[][] {
  const db: DatabaseSync = new (sqlite().DatabaseSync)(file);
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}; PRAGMA foreign_keys = ON`);
    const statements = splitStatements(sql);
    // A write takes the write lock at once: a transaction that read first could not take it later
    // without starting again (https://sqlite.org/lang_transaction.html#deferred_immediate_and_exclusive_transactions).
    const writes = statements.some((statement) => !/^(SELECT|WITH|PRAGMA)\b/i.test(statement));
    db.exec(writes ? 'BEGIN IMMEDIATE' : 'BEGIN');
    try {
      const rows = statements.map((statement) =>
        db
          .prepare(statement)
          .all()
          .map((row) => ({ ...row })),
      );
      db.exec('COMMIT');
      return rows;
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  } finally {
    db.close();
  }
}

/**
 * The statements of a script, split at the semicolons that end them: not those inside a quoted
 * string or name, or a comment (https://sqlite.org/lang_expr.html#literal_values_constants_,
 * https://sqlite.org/lang_comment.html). Empty statements are dropped.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let index = 0;
  while (index < sql.length) {
    const char = sql[index] as string;
    if (char === "'" || char === '"' || char === '`') {
      // A quote inside is written twice, so the literal simply ends at the next quote.
      const end = sql.indexOf(char, index + 1);
      index = end === -1 ? sql.length : end + 1;
    } else if (char === '[') {
      const end = sql.indexOf(']', index + 1);
      index = end === -1 ? sql.length : end + 1;
    } else if (sql.startsWith('--', index)) {
      const end = sql.indexOf('\n', index);
      index = end === -1 ? sql.length : end + 1;
    } else if (sql.startsWith('/*', index)) {
      const end = sql.indexOf('*/', index + 2);
      index = end === -1 ? sql.length : end + 2;
    } else if (char === ';') {
      statements.push(sql.slice(start, index));
      index += 1;
      start = index;
    } else {
      index += 1;
    }
  }
  statements.push(sql.slice(start));
  return statements.map((statement) => statement.trim()).filter((statement) => !isOnlyComments(statement));
}

function isOnlyComments(statement: string): boolean {
  return (
    statement
      .replace(/--[^\n]*(\n|$)/g, '')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .trim() === ''
  );
}

/** One read-only query (a SELECT) of the running system's database: the rows it found. */
export async function queryRowsAsync(target: D1Target, query: string): Promise<Record<string, unknown>[]> {
  const [rows] = await executeSqlAsync(target, query);
  return rows ?? [];
}

/**
 * Applies the migrations to every database wrangler.toml declares (each gets them all), one
 * wrangler process after the other: two at once in one folder meet on miniflare's own metadata
 * database and one fails with SQLITE_BUSY.
 */
export async function applyMigrations(target: D1Target): Promise<void> {
  for (const database of declaredDatabases())
    await runWranglerAsync(['d1', 'migrations', 'apply', database.name, ...targetArgs(target)]);
}
