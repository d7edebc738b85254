// Batch jobs in D1, read: a job, an account's jobs, a job's rows with their results, its counts
// and pending addresses. Writes live beside it: job-creation.ts (upload, with its charge and
// quotas), job-results.ts (answers, completion, refunds) and job-recovery.ts (what the cron
// sweeps). The hot paths are raw statements in the shapes measured fastest on local D1.
import type { VerificationStatus } from '@rcpt/shared/contract/api';
import type { SubStatus } from '@rcpt/shared/contract/sub-statuses';
import { sql } from 'drizzle-orm';
import { type DataMode, dataModeSql } from './api-keys.ts';
import type { Db } from './db.ts';
import type { jobs } from './schema.ts';

export type JobRow = typeof jobs.$inferSelect;

/** A job of the account; with `mode`, only if it is that mode's (see dataModeSql). */
export async function findJob(
  db: Db,
  accountId: string,
  jobId: string,
  mode?: DataMode,
): Promise<JobRow | null> {
  const row = await db.query.jobs.findFirst({
    where: (table, { and, eq }) =>
      and(eq(table.id, jobId), eq(table.accountId, accountId), mode ? sql.raw(dataModeSql(mode)) : undefined),
  });
  return row ?? null;
}

/** A job whatever its account (for work the system does on its own, such as webhooks). */
export async function findJobById(db: Db, jobId: string): Promise<JobRow | null> {
  const row = await db.query.jobs.findFirst({ where: (table, { eq }) => eq(table.id, jobId) });
  return row ?? null;
}

/** The account's jobs among `jobIds`, in one query. */
export async function findJobs(db: Db, accountId: string, jobIds: readonly string[]): Promise<JobRow[]> {
  if (jobIds.length === 0) return [];
  return db.query.jobs.findMany({
    where: (table, { and, eq, inArray }) =>
      and(eq(table.accountId, accountId), inArray(table.id, [...jobIds])),
  });
}

export async function listJobs(
  db: Db,
  accountId: string,
  page: { offset: number; limit: number },
  mode?: DataMode,
): Promise<JobRow[]> {
  return db.query.jobs.findMany({
    where: (table, { and, eq }) =>
      and(eq(table.accountId, accountId), mode ? sql.raw(dataModeSql(mode)) : undefined),
    orderBy: (table, { desc }) => [desc(table.createdAt)],
    offset: page.offset,
    limit: page.limit,
  });
}

export interface LiveJob {
  id: string;
  accountId: string;
  /** Null for a job created before jobs had deadlines: the consumer gives it one. */
  deadlineAt: number | null;
  /** 1: its probes ask for the evidence behind each answer. */
  evidence: number;
}

/** The jobs among `jobIds` that are still processing. */
export async function processingJobs(db: Db, jobIds: readonly string[]): Promise<Map<string, LiveJob>> {
  const { results } = await db.$client
    .prepare(
      `SELECT id, account_id AS accountId, deadline_at AS deadlineAt, evidence FROM jobs
       WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'processing'`,
    )
    .bind(JSON.stringify(jobIds))
    .all<LiveJob>();
  return new Map(results.map((row) => [row.id, row]));
}

export interface ResultRow {
  row: number;
  input: string;
  resultJson: string | null;
  csvValues: string | null;
}

/** Which rows of a job's results to read: a page, optionally only rows of some statuses. */
export interface ResultRowsQuery {
  offset: number;
  limit: number;
  /** Only rows whose verdict has one of these statuses; all rows when absent. */
  statuses?: readonly string[] | undefined;
  /** Only rows whose verdict has one of these subStatuses; all rows when absent. */
  subStatuses?: readonly string[] | undefined;
  /** Only rows whose address, as uploaded, contains this text (ASCII case-insensitive). */
  search?: string | undefined;
}

// A row's status: its address's verdict, or for a row with no address (invalid input) its own.
// A row's verdict: its address's final answer (a temporary one, kept while the address is asked
// again, is not yet a verdict), or the row's own for one without an address to verify.
const ROW_STATUS =
  "COALESCE(CASE WHEN a.state = 'done' THEN a.status END, json_extract(r.result_json, '$.status'))";
const ROW_SUB_STATUS =
  "COALESCE(CASE WHEN a.state = 'done' THEN a.sub_status END, json_extract(r.result_json, '$.subStatus'))";

const ROWS_WITH_RESULTS = `FROM job_rows r LEFT JOIN job_addresses a ON a.job_id = r.job_id AND a.idx = r.address_idx
       WHERE r.job_id = ?1 AND (?2 IS NULL OR ${ROW_STATUS} IN (SELECT value FROM json_each(?2)))
         AND (?3 IS NULL OR r.input LIKE ?3 ESCAPE '\\')
         AND (?4 IS NULL OR ${ROW_SUB_STATUS} IN (SELECT value FROM json_each(?4)))`;

/** Whether the query selects some of a job's rows only, so their number must be counted. */
export function isFilteredQuery(query: ResultRowsQuery): boolean {
  return Boolean(query.statuses || query.subStatuses || query.search);
}

/** Rows in upload order with their results (a duplicate row shows its address's result). */
export async function readResultRows(db: Db, jobId: string, query: ResultRowsQuery): Promise<ResultRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT r.row, r.input, COALESCE(r.result_json, a.result_json) AS resultJson, r.csv_values AS csvValues
       ${ROWS_WITH_RESULTS} ORDER BY r.row LIMIT ?5 OFFSET ?6`,
    )
    .bind(jobId, statusFilter(query), searchPattern(query), subStatusFilter(query), query.limit, query.offset)
    .all<ResultRow>();
  return results;
}

/** How many rows of a job the query selects, ignoring its page. */
export async function countResultRows(db: Db, jobId: string, query: ResultRowsQuery): Promise<number> {
  const row = await db.$client
    .prepare(`SELECT COUNT(*) AS total ${ROWS_WITH_RESULTS}`)
    .bind(jobId, statusFilter(query), searchPattern(query), subStatusFilter(query))
    .first<{ total: number }>();
  return row?.total ?? 0;
}

function statusFilter(query: ResultRowsQuery): string | null {
  return query.statuses ? JSON.stringify(query.statuses) : null;
}

function subStatusFilter(query: ResultRowsQuery): string | null {
  return query.subStatuses ? JSON.stringify(query.subStatuses) : null;
}

// The search text matched literally: LIKE's wildcards and the escape character are escaped
// (SQLite, "The LIKE, GLOB, REGEXP, MATCH, and extract operators": ESCAPE clause).
function searchPattern(query: ResultRowsQuery): string | null {
  return query.search ? `%${query.search.replace(/[\\%_]/g, '\\$&')}%` : null;
}

/** A job's rows that have a verdict, by status, with the risky ones at a catch-all domain. */
export interface RowCounts {
  byStatus: Record<VerificationStatus, number>;
  /** Risky rows whose domain accepts any address: a part of `byStatus.risky`. */
  catchAll: number;
}

/**
 * How many rows of a job have each verdict (a row without one yet is not counted): the one
 * count the job page shows, so its cards, chart, filter and downloads agree with the files.
 */
export async function countRowsByVerdict(db: Db, jobId: string): Promise<RowCounts> {
  const { results } = await db.$client
    .prepare(
      `SELECT ${ROW_STATUS} AS status, COUNT(*) AS total, COALESCE(SUM(a.catch_all = 1), 0) AS catchAll
       ${ROWS_WITH_RESULTS} GROUP BY 1`,
    )
    .bind(jobId, null, null, null)
    .all<{ status: string | null; total: number; catchAll: number }>();
  const counts: RowCounts = {
    byStatus: { deliverable: 0, undeliverable: 0, risky: 0, unknown: 0 },
    catchAll: 0,
  };
  for (const row of results) {
    if (!row.status || !(row.status in counts.byStatus)) continue;
    counts.byStatus[row.status as VerificationStatus] = row.total;
    if (row.status === 'risky') counts.catchAll = row.catchAll;
  }
  return counts;
}

/** An address of a running job without its final answer yet. */
export interface PendingAddress {
  email: string;
  /** Its last temporary answer (null: not answered yet). */
  subStatus: SubStatus | null;
  /** When it is asked again, for one with a temporary answer. */
  retryAt: number | null;
}

/** A running job's addresses still waiting for a final answer: how many, and the first `limit`. */
export async function pendingAddresses(
  db: Db,
  jobId: string,
  limit: number,
): Promise<{ total: number; addresses: PendingAddress[] }> {
  const [listed, counted] = await db.$client.batch([
    db.$client
      .prepare(
        `SELECT email, sub_status AS subStatus, retry_at AS retryAt FROM job_addresses
         WHERE job_id = ?1 AND state = 'queued' ORDER BY idx LIMIT ?2`,
      )
      .bind(jobId, limit),
    db.$client
      .prepare(`SELECT COUNT(*) AS total FROM job_addresses WHERE job_id = ?1 AND state = 'queued'`)
      .bind(jobId),
  ]);
  return {
    total: (counted?.results[0] as { total: number } | undefined)?.total ?? 0,
    addresses: (listed?.results ?? []) as PendingAddress[],
  };
}

/** Addresses of the jobs still processing that have no final answer yet: the fleet's work ahead of a new job. */
export async function addressesAhead(db: Db): Promise<number> {
  const row = await db.$client
    .prepare(
      `SELECT COALESCE(SUM(total_emails - processed_emails), 0) AS pending FROM jobs WHERE status = 'processing'`,
    )
    .first<{ pending: number }>();
  return row?.pending ?? 0;
}

export async function countJobs(db: Db, accountId: string, mode?: DataMode): Promise<number> {
  const row = await db.$client
    .prepare(
      `SELECT COUNT(*) AS total FROM jobs WHERE account_id = ?1${mode ? ` AND ${dataModeSql(mode)}` : ''}`,
    )
    .bind(accountId)
    .first<{ total: number }>();
  return row?.total ?? 0;
}
