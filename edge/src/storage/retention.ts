// Lists, results and job data are deleted once the retention period (60 days by default)
// has passed — sandbox (test-key) jobs and history sooner (7 days by default), those of an
// account whose email is not confirmed after a day, and a job's rows that cost nothing (no
// address, or a duplicate) after FREE_ROWS_RETENTION_DAYS — in bounded statements
// (ROWS_PER_STATEMENT rows each, a bounded number per run) so that no statement and no run holds
// the database for long. Domain facts go once idle.
import { VERDICT_LIFETIME_MS } from '@rcpt/shared/contract/verdict-lifetime';
import { ACCEPTED_BOUNCES_WINDOW_MS } from '@rcpt/shared/verify/learnt';
import { dataModeSql } from './api-keys.ts';
import type { Db } from './db.ts';
import { IDEMPOTENCY_KEY_TTL_MS } from './idempotency.ts';
import { type JobStoreKind, jobLists, knowStore } from './job-lists/index.ts';
import { SESSION_ABSOLUTE_MS } from './sessions.ts';
import { directoryOf } from './shards.ts';

const JOBS_PER_CHUNK = 20;
/** How long an outcome webhook's signature nonce is kept: a day, twice the oldest signature taken. */
export const OUTCOME_NONCE_TTL_MS = 86_400_000;
/** Most rows one DELETE removes: a statement's work stays small whatever a job's size (10,000 rows). */
export const ROWS_PER_STATEMENT = 1000;
/** Most DELETEs of job data in one run (200,000 rows at most); what is left goes in the next run. */
const MAX_JOB_STATEMENTS = 200;
/** Most DELETEs of history or of deliveries in one run. */
const MAX_CHUNKS = 50;

export interface RetentionReport {
  jobs: number;
  /** Jobs whose free rows were dropped (free: rows dropped with them). */
  freeRowJobs: number;
  freeRows: number;
  verifications: number;
  outcomes: number;
  outcomeNonces: number;
  deliveries: number;
  operatorAlerts: number;
  sessions: number;
  /** The directory's lookups of sessions older than any session lives (SESSION_ABSOLUTE_MS). */
  sessionLookups: number;
  idempotencyKeys: number;
  domainFacts: number;
  acceptedBounces: number;
  storageDays: number;
  deskBatches: number;
}

/** What was created before each time (ms since the epoch) goes. */
export interface RetentionCutoffs {
  /** Jobs, history, webhook deliveries and the operator's alerts. */
  retention: number;
  /** Test-mode jobs and history. */
  sandbox: number;
  /** Test-mode jobs and history of an account whose email is not confirmed. */
  trial: number;
  /** A job's rows that cost nothing: no address (empty, invalid, unreadable) or a duplicate. */
  freeRows: number;
}

/** Deletes what is older than its cutoff, and sessions expired by `now`. */
export async function deleteExpired(
  db: Db,
  cutoffs: RetentionCutoffs,
  now: number,
): Promise<RetentionReport> {
  const d1 = db.$client;
  const report: RetentionReport = {
    jobs: 0,
    freeRowJobs: 0,
    freeRows: 0,
    verifications: 0,
    outcomes: 0,
    outcomeNonces: 0,
    deliveries: 0,
    operatorAlerts: 0,
    sessions: 0,
    sessionLookups: 0,
    idempotencyKeys: 0,
    domainFacts: 0,
    acceptedBounces: 0,
    storageDays: 0,
    deskBatches: 0,
  };
  // ?1 the cutoff, ?2 the sandbox cutoff, ?3 the trial cutoff.
  const expiredSql = `(created_at < ?1 OR (${dataModeSql('test')} AND (created_at < ?2 OR (created_at < ?3
    AND account_id IN (SELECT id FROM accounts WHERE email_confirmed_at IS NULL)))))`;
  const expiry = [cutoffs.retention, cutoffs.sandbox, cutoffs.trial] as const;
  report.jobs = await deleteExpiredJobs(db, expiredSql, expiry);
  const freeRows = await dropFreeRows(db, cutoffs.freeRows, now);
  report.freeRowJobs = freeRows.jobs;
  report.freeRows = freeRows.rows;
  report.verifications = await deleteInChunks(d1, 'verifications', expiredSql, ...expiry);
  // Outcomes are kept as long as the verdicts they are matched to (test-key ones as sandbox data).
  report.outcomes = await deleteInChunks(d1, 'outcomes', expiredSql, ...expiry);
  // A webhook signature's nonce outlives the signature's freshness window (services/outcomes/mailgun.ts).
  report.outcomeNonces = await deleteInChunks(
    d1,
    'outcome_hook_nonces',
    'created_at < ?1',
    now - OUTCOME_NONCE_TTL_MS,
  );
  report.deliveries = await deleteInChunks(d1, 'webhook_deliveries', 'created_at < ?1', cutoffs.retention);
  report.operatorAlerts = await deleteInChunks(d1, 'operator_alerts', 'created_at < ?1', cutoffs.retention);
  // Dashboard sessions go when they expire, not after the retention period.
  report.sessions = await deleteInChunks(d1, 'sessions', 'expires_at < ?1', now);
  if (directoryOf(db) === db) {
    report.sessionLookups = await deleteInChunks(
      d1,
      'account_lookups',
      "kind = 'session' AND created_at < ?1",
      now - SESSION_ABSOLUTE_MS,
    );
  }
  // Domain facts nobody touched for a verdict's lifetime: every fact in them expired long ago
  // (an hour at most), and a cached verdict whose facts are gone is simply verified again.
  // What outcomes taught of a domain lasts its window (docs/verdicts.md, "Learning from outcomes").
  const learntSince = now - ACCEPTED_BOUNCES_WINDOW_MS;
  report.domainFacts = await deleteInChunks(
    d1,
    'domain_facts',
    'updated_at < ?1 AND (accepted_bounces_at IS NULL OR accepted_bounces_at < ?2)',
    now - VERDICT_LIFETIME_MS,
    learntSince,
  );
  report.acceptedBounces = await deleteInChunks(d1, 'domain_accepted_bounces', 'last_at < ?1', learntSince);
  // Idempotency keys are kept 24 hours, whatever the retention period.
  report.idempotencyKeys = await deleteInChunks(
    d1,
    'idempotency_keys',
    'created_at < ?1',
    now - IDEMPOTENCY_KEY_TTL_MS,
  );
  // The storage budget counts today (UTC) only; yesterday's counter is kept for a look back.
  report.storageDays = await deleteInChunks(d1, 'storage_days', 'day < ?1', now - 2 * 86_400_000);
  // A desk's flush is retried within minutes of its first try (objects/account-desk.ts): a week
  // of guard rows is far more than a retry needs.
  report.deskBatches = await deleteInChunks(d1, 'desk_batches', 'created_at < ?1', now - 7 * 86_400_000);
  return report;
}

/**
 * Deletes expired jobs, each statement at most ROWS_PER_STATEMENT rows of one table, and at most
 * MAX_JOB_STATEMENTS of them in a run; returns how many jobs went. A job's rows and addresses go
 * first and the job itself last: a run that stops half-way leaves the job in place, found
 * expired again by the next run.
 */
async function deleteExpiredJobs(
  db: Db,
  expiredSql: string,
  expiry: readonly [number, number, number],
): Promise<number> {
  const d1 = db.$client;
  let jobs = 0;
  let statements = 0;
  while (statements < MAX_JOB_STATEMENTS) {
    const { results } = await d1
      .prepare(`SELECT id, store FROM jobs WHERE ${expiredSql} LIMIT ?4`)
      .bind(...expiry, JOBS_PER_CHUNK)
      .all<{ id: string; store: JobStoreKind }>();
    if (results.length === 0) break;
    for (const row of results) knowStore(row.id, row.store);
    const ids = JSON.stringify(results.map((row) => row.id));
    // Each job's lists, then what D1 keeps of the jobs beside their rows.
    for (const { id } of results) {
      const lists = jobLists(db, id);
      let deleted = ROWS_PER_STATEMENT;
      while (deleted > 0) {
        if (statements++ >= MAX_JOB_STATEMENTS) return jobs;
        deleted = await lists.deleteSome(ROWS_PER_STATEMENT);
      }
    }
    for (const table of ['job_watch_domains', 'job_recheck_charges', 'job_address_filters'] as const) {
      let deleted = ROWS_PER_STATEMENT;
      while (deleted === ROWS_PER_STATEMENT) {
        if (statements++ >= MAX_JOB_STATEMENTS) return jobs;
        deleted = (
          await d1
            .prepare(
              `DELETE FROM ${table} WHERE rowid IN
                 (SELECT rowid FROM ${table} WHERE job_id IN (SELECT value FROM json_each(?1)) LIMIT ?2)`,
            )
            .bind(ids, ROWS_PER_STATEMENT)
            .run()
        ).meta.changes;
      }
    }
    statements++;
    await d1.prepare('DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?1))').bind(ids).run();
    jobs += results.length;
  }
  return jobs;
}

/**
 * Drops the free rows of finished jobs created before `cutoff`, ROWS_PER_STATEMENT a statement
 * and at most MAX_JOB_STATEMENTS statements a run, and marks each job once its free rows are
 * gone (`free_rows_dropped_at`), so its downloads say what was dropped. A run that stops
 * half-way leaves the job unmarked, found again by the next run.
 */
async function dropFreeRows(db: Db, cutoff: number, now: number): Promise<{ jobs: number; rows: number }> {
  const d1 = db.$client;
  let jobs = 0;
  let rows = 0;
  let statements = 0;
  while (statements < MAX_JOB_STATEMENTS) {
    const { results } = await d1
      .prepare(
        `SELECT id, store FROM jobs WHERE free_rows_dropped_at IS NULL AND created_at < ?1
           AND status IN ('completed', 'failed') LIMIT ?2`,
      )
      .bind(cutoff, JOBS_PER_CHUNK)
      .all<{ id: string; store: JobStoreKind }>();
    if (results.length === 0) break;
    for (const row of results) knowStore(row.id, row.store);
    for (const { id } of results) {
      let deleted = ROWS_PER_STATEMENT;
      while (deleted === ROWS_PER_STATEMENT) {
        if (statements++ >= MAX_JOB_STATEMENTS) return { jobs, rows };
        deleted = await jobLists(db, id).dropFreeRows(ROWS_PER_STATEMENT);
        rows += deleted;
      }
      statements++;
      await d1.prepare('UPDATE jobs SET free_rows_dropped_at = ?2 WHERE id = ?1').bind(id, now).run();
      jobs++;
    }
  }
  return { jobs, rows };
}

/**
 * Deletes the rows of `table` that match `where` (bound to `binds`), ROWS_PER_STATEMENT per
 * statement and MAX_CHUNKS statements per run at most.
 */
async function deleteInChunks(
  d1: D1Database,
  table:
    | 'verifications'
    | 'outcomes'
    | 'outcome_hook_nonces'
    | 'webhook_deliveries'
    | 'operator_alerts'
    | 'sessions'
    | 'account_lookups'
    | 'domain_facts'
    | 'domain_accepted_bounces'
    | 'idempotency_keys'
    | 'storage_days'
    | 'desk_batches',
  where: string,
  ...binds: number[]
): Promise<number> {
  let deleted = 0;
  for (let chunk = 0; chunk < MAX_CHUNKS; chunk++) {
    const { changes } = (
      await d1
        .prepare(
          `DELETE FROM ${table} WHERE rowid IN
             (SELECT rowid FROM ${table} WHERE ${where} LIMIT ${ROWS_PER_STATEMENT})`,
        )
        .bind(...binds)
        .run()
    ).meta;
    deleted += changes;
    if (changes < ROWS_PER_STATEMENT) break;
  }
  return deleted;
}
