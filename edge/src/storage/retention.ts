// Lists, results and job data are deleted once the retention period (60 days by default)
// has passed — sandbox (test-key) jobs and history sooner (7 days by default) — in bounded
// chunks so that one run never holds the database for long. Domain facts go once idle.
import { VERDICT_LIFETIME_MS } from '@rcpt/shared/contract/verdict-lifetime';
import { dataModeSql } from './api-keys.ts';
import type { Db } from './db.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from './idempotency.ts';

const JOBS_PER_CHUNK = 20;
const ROWS_PER_CHUNK = 1000;
const MAX_CHUNKS = 50;

export interface RetentionReport {
  jobs: number;
  verifications: number;
  deliveries: number;
  sessions: number;
  idempotencyKeys: number;
  domainFacts: number;
}

/**
 * Deletes jobs, history and deliveries created before `cutoff`, test-mode jobs and history
 * created before `sandboxCutoff`, and sessions expired by `now`.
 */
export async function deleteExpired(
  db: Db,
  cutoff: number,
  now: number,
  sandboxCutoff = cutoff,
): Promise<RetentionReport> {
  const d1 = db.$client;
  const report: RetentionReport = {
    jobs: 0,
    verifications: 0,
    deliveries: 0,
    sessions: 0,
    idempotencyKeys: 0,
    domainFacts: 0,
  };
  // ?1 the cutoff, ?2 the sandbox cutoff.
  const expiredSql = `(created_at < ?1 OR (created_at < ?2 AND ${dataModeSql('test')}))`;
  for (let chunk = 0; chunk < MAX_CHUNKS; chunk++) {
    const { results } = await d1
      .prepare(`SELECT id FROM jobs WHERE ${expiredSql} LIMIT ?3`)
      .bind(cutoff, sandboxCutoff, JOBS_PER_CHUNK)
      .all<{ id: string }>();
    if (results.length === 0) break;
    const ids = JSON.stringify(results.map((row) => row.id));
    await d1.batch([
      d1.prepare('DELETE FROM job_rows WHERE job_id IN (SELECT value FROM json_each(?1))').bind(ids),
      d1.prepare('DELETE FROM job_addresses WHERE job_id IN (SELECT value FROM json_each(?1))').bind(ids),
      d1.prepare('DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?1))').bind(ids),
    ]);
    report.jobs += results.length;
  }
  report.verifications = await deleteInChunks(d1, 'verifications', expiredSql, cutoff, sandboxCutoff);
  report.deliveries = await deleteInChunks(
    d1,
    'webhook_deliveries',
    'created_at < ?1',
    cutoff,
    sandboxCutoff,
  );
  // Dashboard sessions go when they expire, not after the retention period.
  report.sessions = await deleteBefore(d1, 'sessions', 'expires_at', now);
  // Domain facts nobody touched for a verdict's lifetime: every fact in them expired long ago
  // (an hour at most), and a cached verdict whose facts are gone is simply verified again.
  report.domainFacts = await deleteBefore(d1, 'domain_facts', 'updated_at', now - VERDICT_LIFETIME_MS);
  // Idempotency keys are kept 24 hours, whatever the retention period.
  report.idempotencyKeys = await deleteBefore(
    d1,
    'idempotency_keys',
    'created_at',
    now - IDEMPOTENCY_KEY_TTL_MS,
  );
  return report;
}

/** Deletes the rows of a small table (or one indexed on `column`) whose `column` is before `before`. */
async function deleteBefore(
  d1: D1Database,
  table: 'sessions' | 'domain_facts' | 'idempotency_keys',
  column: 'expires_at' | 'updated_at' | 'created_at',
  before: number,
): Promise<number> {
  return (await d1.prepare(`DELETE FROM ${table} WHERE ${column} < ?1`).bind(before).run()).meta.changes;
}

async function deleteInChunks(
  d1: D1Database,
  table: 'verifications' | 'webhook_deliveries',
  expiredSql: string,
  cutoff: number,
  sandboxCutoff: number,
): Promise<number> {
  let deleted = 0;
  for (let chunk = 0; chunk < MAX_CHUNKS; chunk++) {
    const result = await d1
      .prepare(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${expiredSql} LIMIT ?3)`)
      .bind(cutoff, sandboxCutoff, ROWS_PER_CHUNK)
      .run();
    deleted += result.meta.changes;
    if (result.meta.changes < ROWS_PER_CHUNK) break;
  }
  return deleted;
}
