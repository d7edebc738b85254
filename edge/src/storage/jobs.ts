// Batch jobs in D1, read: a job, an account's jobs, a job's rows with their results, its counts
// and pending addresses. Writes live beside it: job-creation.ts (upload, with its charge and
// quotas), job-results.ts (answers, completion, refunds) and job-recovery.ts (what the cron
// sweeps). The hot paths are raw statements in the shapes measured fastest on local D1.
import type { VerificationStatus } from '@rcpt/shared/contract/api';
import type { SubStatus } from '@rcpt/shared/contract/sub-statuses';
import { sql } from 'drizzle-orm';
import { type DataMode, dataModeSql } from './api-keys.ts';
import type { Db } from './db.ts';
import { type JobStoreKind, jobLists, knowStore, type ResultRow } from './job-lists/index.ts';
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
  knowStore(jobId, row?.store);
  return row ?? null;
}

/** A job whatever its account (for work the system does on its own, such as webhooks). */
export async function findJobById(db: Db, jobId: string): Promise<JobRow | null> {
  const row = await db.query.jobs.findFirst({ where: (table, { eq }) => eq(table.id, jobId) });
  knowStore(jobId, row?.store);
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
  store: JobStoreKind;
  /** 1: its recheckable final answers are asked again after completion (greylist follow-up). */
  recheck: number;
}

/** The jobs among `jobIds` that are still processing. */
export async function processingJobs(db: Db, jobIds: readonly string[]): Promise<Map<string, LiveJob>> {
  const { results } = await db.$client
    .prepare(
      `SELECT id, account_id AS accountId, deadline_at AS deadlineAt, evidence, store, recheck FROM jobs
       WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'processing'`,
    )
    .bind(JSON.stringify(jobIds))
    .all<LiveJob>();
  for (const row of results) knowStore(row.id, row.store);
  return new Map(results.map((row) => [row.id, row]));
}

export type { ResultRow } from './job-lists/index.ts';

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

/** Whether the query selects some of a job's rows only, so their number must be counted. */
export function isFilteredQuery(query: ResultRowsQuery): boolean {
  return Boolean(query.statuses || query.subStatuses || query.search);
}

/** Rows in upload order with their results (a duplicate row shows its address's result). */
export function readResultRows(db: Db, jobId: string, query: ResultRowsQuery): Promise<ResultRow[]> {
  return jobLists(db, jobId).resultRows(query, query);
}

/** How many rows of a job the query selects, ignoring its page. */
export function countResultRows(db: Db, jobId: string, query: ResultRowsQuery): Promise<number> {
  return jobLists(db, jobId).countResultRows(query);
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
  const results = await jobLists(db, jobId).rowsByVerdict();
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
  const { total, addresses } = await jobLists(db, jobId).pending(limit);
  return { total, addresses: addresses as PendingAddress[] };
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
