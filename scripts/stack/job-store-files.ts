// The JobStore objects of a local stack, read from outside: each object's SQLite storage is a file
// in wrangler's persisted state, as local D1's database is (docs/architecture.md, "Where a job's
// lists live"). Each read is of a copy taken with its write-ahead log, whose newest pages are
// not yet in the file, so the running stack's writes are neither blocked nor seen half-done.
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { sqlite } from './d1.ts';

/** The SQLite files of the JobStore objects under `persistTo`. */
export function jobStoreFiles(persistTo: string): string[] {
  if (!existsSync(persistTo)) return [];
  return readdirSync(persistTo, { recursive: true, withFileTypes: true })
    .map((entry) => ({ entry, path: join(entry.parentPath, entry.name) }))
    .filter(
      ({ entry, path }) => entry.isFile() && entry.name.endsWith('.sqlite') && path.includes('JobStore'),
    )
    .map(({ path }) => path);
}

/** `read` over a copy of the SQLite file `source` (with its write-ahead log). */
export function readSqliteCopy<T>(source: string, read: (database: DatabaseSync) => T): T {
  const copy = mkdtempSync(join(tmpdir(), 'rcpt-sqlite-copy-'));
  try {
    for (const suffix of ['', '-wal'])
      if (existsSync(`${source}${suffix}`))
        copyFileSync(`${source}${suffix}`, join(copy, `copy.sqlite${suffix}`));
    const database = new (sqlite().DatabaseSync)(join(copy, 'copy.sqlite'));
    try {
      return read(database);
    } finally {
      database.close();
    }
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** A SQLite file's size as its pages say: what `ctx.storage.sql.databaseSize` answers inside an object. */
export function databaseSize(source: string): number {
  return readSqliteCopy(source, (database) => {
    const { bytes } = database
      .prepare('SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()')
      .get() as { bytes: number };
    return bytes;
  });
}

/** The rows `sql` (the job's id bound to ?1) reads from job `jobId`'s lists in its object. */
export function jobListsRows<T>(persistTo: string, jobId: string, sql: string): T[] {
  return jobStoreFiles(persistTo).flatMap((file) =>
    readSqliteCopy(file, (database) => {
      // An object whose storage was deleted has no tables; another job's holds no row of this one.
      const tables = database.prepare("SELECT 1 FROM sqlite_schema WHERE name = 'job_list_seqs'").all();
      if (tables.length === 0) return [];
      const holds = database.prepare('SELECT 1 FROM job_list_seqs WHERE job_id = ?1').all(jobId);
      return holds.length === 0 ? [] : (database.prepare(sql).all(jobId) as T[]);
    }),
  );
}
