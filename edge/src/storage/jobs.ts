// Batch jobs in D1. The hot paths are raw statements in the shapes measured fastest on local
// D1: INSERT … SELECT FROM json_each for rows, one upsert per write, and
// counters recomputed from the rows so that a replayed write changes nothing.
import type { VerificationStatus } from '@rcpt/shared/contract/api';
import type { SubStatus } from '@rcpt/shared/contract/sub-statuses';
import { sql } from 'drizzle-orm';
import { type DataMode, dataModeSql } from './api-keys.ts';
import { type Db, prepare } from './db.ts';
import { type JsonChunk, jsonChunks } from './json-chunks.ts';
import { debit, refundFinishedJob } from './ledger.ts';
import type { jobs } from './schema.ts';
import {
  countStorage,
  ROW_OVERHEAD_BYTES,
  rowBytes,
  storageFitsSql,
  storageUsedSql,
  storedResultBytes,
  utf8Bytes,
} from './storage-budget.ts';

export type JobRow = typeof jobs.$inferSelect;

export interface NewJob {
  id: string;
  /** Credits to take: the unique valid addresses, or 0 for a sandbox job. */
  charge: number;
  accountId: string;
  apiKeyId: string | null;
  name: string | null;
  source: 'json' | 'csv';
  totalRows: number;
  totalEmails: number;
  duplicateCount: number;
  emptyRows: number;
  invalidRows: number;
  skippedRows: number;
  csvHeaders: string[] | null;
  /** Every row's original cells (CSV uploads), in row order, as JSON arrays of rows. */
  csvCells: readonly JsonChunk[] | null;
  webhookUrl: string | null;
  /** When the job completes at the latest (ms since the epoch). */
  deadlineAt: number;
  /** Greylist follow-up after completion; null: the account's default. */
  recheck: boolean | null;
  /** Each result carries the evidence behind its answer. */
  evidence: boolean;
  now: number;
}

export interface NewJobRow {
  row: number;
  input: string;
  addressIdx: number | null;
  resultJson: string | null;
}

export interface NewJobAddress {
  idx: number;
  email: string;
  domain: string;
  /** Already answered (sandbox keys): stored done, so counters and completion apply as usual. */
  result?: AddressResult;
}

/** The account's quotas a new job must fit in; a null limit is not checked for this job. */
export interface JobQuotaLimits {
  /** Most jobs pending or processing, this one included. */
  jobsInFlight: number | null;
  /** Most bytes written on the UTC day starting at `storageDay`, this job included. */
  storageBytes: number | null;
  storageDay: number;
}

/** What the account had when the job was refused, and which of its conditions failed. */
export interface AccountUsage {
  creditBalance: number;
  jobsInFlight: number;
  storageBytes: number;
  /** The bytes the job would have written. */
  jobBytes: number;
  creditsCover: boolean;
  inFlightFits: boolean;
  storageFits: boolean;
}

export type JobCreation = { created: true; balance: number } | { created: false; usage: AccountUsage };

/**
 * What a job's webhook events and its history entry store beside its own row: a `job.completed`
 * (or `job.failed`) event and one `job.updated` per greylist follow-up round, about 1 KB each.
 */
const JOB_EXTRA_BYTES = 8 * 1024;

// The job's conditions as SQL over the account's state, read once in the job's own batch (one
// transaction): ?2 account, ?18 its charge, ?20 the in-flight limit; the storage budget's
// numbers are inlined. The job insert requires all three; the refused batch reports each, so
// the caller answers with the one that failed.
function jobConditions(limits: JobQuotaLimits, jobBytes: number) {
  const usage = {
    creditBalance: '(SELECT credit_balance FROM accounts WHERE id = ?2)',
    jobsInFlight: `(SELECT COUNT(*) FROM jobs WHERE account_id = ?2 AND status IN ('pending', 'processing'))`,
    storageBytes: storageUsedSql('?2', limits.storageDay),
  };
  const conditions = {
    creditsCover: `${usage.creditBalance} >= ?18`,
    inFlightFits: `(?20 IS NULL OR ${usage.jobsInFlight} < ?20)`,
    storageFits: storageFitsSql('?2', {
      day: limits.storageDay,
      bytes: jobBytes,
      limit: limits.storageBytes,
    }),
  };
  return { usage, conditions };
}

/**
 * Creates the job, its rows and addresses and its history entry, and charges it, all in one
 * transaction whose every statement is conditional on the job row, which is written only when
 * the balance covers the charge and the job fits the account's quotas. So two concurrent
 * uploads cannot both take the last credit or the last slot of a quota. When it does not fit,
 * nothing is written and the account's usage says why.
 */
export async function createJobWithCharge(
  db: Db,
  job: NewJob,
  rows: readonly NewJobRow[],
  addresses: readonly NewJobAddress[],
  limits: JobQuotaLimits,
): Promise<JobCreation> {
  const d1 = db.$client;
  const { charge } = job;
  const status = job.totalEmails === 0 ? 'completed' : 'processing';
  const jobExists = 'EXISTS (SELECT 1 FROM jobs WHERE id = ?4)';
  const movement = debit(
    { accountId: job.accountId, amount: charge, reason: 'bulk_charge', reference: job.id, now: job.now },
    jobExists,
  );
  const csvHeaders = job.csvHeaders ? JSON.stringify(job.csvHeaders) : null;
  const rowChunks = jobRowChunks(rows, job.csvCells);
  const addressChunks = jsonChunks(
    addresses.map((address) => [
      address.idx,
      address.email,
      address.domain,
      ...(address.result ? resultColumns(address.result) : [null, null, null, 0, null]),
    ]),
  );
  // The storage budget: the values written now (their JSON is a close upper bound), a row's
  // overhead for each, and the results still to come.
  let jobBytes =
    rowBytes(job.id, job.name, csvHeaders, job.webhookUrl) +
    JOB_EXTRA_BYTES +
    (rows.length + addresses.length) * ROW_OVERHEAD_BYTES;
  for (const chunk of rowChunks)
    jobBytes += utf8Bytes(chunk.rows) + (chunk.cellsFirst ? utf8Bytes(chunk.cells) : 0);
  for (const chunk of addressChunks) jobBytes += utf8Bytes(chunk.json);
  for (const address of addresses) if (!address.result) jobBytes += storedResultBytes(job.evidence);
  const { usage, conditions } = jobConditions(limits, jobBytes);
  const jobParams = [
    job.id,
    job.accountId,
    job.apiKeyId,
    job.name,
    status,
    job.source,
    job.totalRows,
    job.totalEmails,
    job.duplicateCount,
    job.emptyRows,
    job.invalidRows,
    job.skippedRows,
    csvHeaders,
    job.webhookUrl,
    job.now,
    status === 'completed' ? job.now : null,
    status === 'completed' ? 1 : 0,
    charge,
    job.deadlineAt,
    limits.jobsInFlight,
  ];
  // The usage first, then the job (under its conditions), then the debit's entry and every
  // other statement, each conditional on the job; the balance update last.
  const statements: D1PreparedStatement[] = [
    d1
      .prepare(
        `SELECT ${usage.creditBalance} AS creditBalance, ${usage.jobsInFlight} AS jobsInFlight,
           ${usage.storageBytes} AS storageBytes, ${conditions.creditsCover} AS creditsCover,
           ${conditions.inFlightFits} AS inFlightFits, ${conditions.storageFits} AS storageFits`,
      )
      .bind(...jobParams),
    d1
      .prepare(
        `INSERT INTO jobs (id, account_id, api_key_id, name, status, source, total_rows, total_emails, duplicate_count,
           empty_rows, invalid_rows, skipped_rows, credits_charged, csv_headers, webhook_url, created_at, completed_at, finalized, deadline_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?18, ?13, ?14, ?15, ?16, ?17, ?19
         WHERE ${conditions.creditsCover} AND ${conditions.inFlightFits} AND ${conditions.storageFits}`,
      )
      .bind(...jobParams),
    prepare(d1, movement.entry),
    d1
      .prepare(
        `UPDATE jobs SET recheck = COALESCE(?2, (SELECT recheck_default FROM accounts WHERE id = account_id)),
           evidence = ?3 WHERE id = ?1`,
      )
      .bind(job.id, job.recheck === null ? null : job.recheck ? 1 : 0, job.evidence ? 1 : 0),
    countStorage(
      d1,
      { accountId: job.accountId, day: limits.storageDay, bytes: jobBytes },
      { sql: 'EXISTS (SELECT 1 FROM jobs WHERE id = ?4)', params: [job.id] },
    ),
  ];
  for (const chunk of rowChunks) {
    // A row's cells are taken from its chunk of the file's cells by position (SQLite parses a
    // JSON parameter once per statement, not once per row: json.c's parse cache).
    statements.push(
      d1
        .prepare(
          `INSERT INTO job_rows (job_id, row, input, address_idx, result_json, csv_values)
           SELECT ?1, j.value->>0, j.value->>1, j.value->>2, j.value->>3, ?3 -> ('$[' || CAST(j.value->>0 - ?4 AS INTEGER) || ']')
           FROM json_each(?2) j
           WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)`,
        )
        .bind(job.id, chunk.rows, chunk.cells, chunk.cellsOffset),
    );
  }
  const answered = addresses.some((address) => address.result);
  for (const chunk of addressChunks) {
    statements.push(
      d1
        .prepare(
          `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, refundable, result_json)
           SELECT ?1, j.value->>0, j.value->>1, j.value->>2, CASE WHEN j.value->>7 IS NULL THEN 'queued' ELSE 'done' END, ?3,
             j.value->>3, j.value->>4, j.value->>5, j.value->>6, j.value->>7
           FROM json_each(?2) j WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)`,
        )
        .bind(job.id, chunk.json, job.now),
    );
  }
  if (answered) statements.push(...completionStatements(d1, job.id, job.now, null));
  // The job's entry in the account history, with the job.
  statements.push(
    d1
      .prepare(
        `INSERT INTO verifications (id, account_id, api_key_id, kind, job_id, created_at)
         SELECT 'job:' || ?1, ?2, ?3, 'batch', ?1, ?4 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)`,
      )
      .bind(job.id, job.accountId, job.apiKeyId, job.now),
    prepare(d1, movement.balance),
  );
  const results = await d1.batch(statements);
  const balance = (results.at(-1)?.results[0] as { credit_balance: number } | undefined)?.credit_balance;
  if (balance !== undefined) return { created: true, balance };
  const read = results[0]?.results[0] as Record<string, number> | undefined;
  if (!read) throw new Error(`no usage read for job ${job.id}`);
  return {
    created: false,
    usage: {
      creditBalance: read.creditBalance ?? 0,
      jobsInFlight: read.jobsInFlight ?? 0,
      storageBytes: read.storageBytes ?? 0,
      jobBytes,
      creditsCover: read.creditsCover === 1,
      inFlightFits: read.inFlightFits === 1,
      storageFits: read.storageFits === 1,
    },
  };
}

/** status, sub_status, catch_all, refundable, result_json: one address's result as stored. */
function resultColumns(result: AddressResult): unknown[] {
  return [
    result.status,
    result.subStatus,
    result.catchAll === null ? null : result.catchAll ? 1 : 0,
    result.refundable ? 1 : 0,
    result.resultJson,
  ];
}

/** One statement's rows and the chunk of the file's cells they take theirs from. */
interface JobRowChunk {
  /** JSON array of [row, input, addressIdx, resultJson]. */
  rows: string;
  /** The cells chunk holding these rows' cells (null for a JSON upload). */
  cells: string | null;
  /** The row number of the cells chunk's first element. */
  cellsOffset: number;
  /** The first statement to bind this cells chunk (its bytes are counted once). */
  cellsFirst: boolean;
}

/**
 * The job's rows in statements: each chunk of the file's cells with the rows it holds, split
 * further when their results make them too large to bind at once.
 */
function jobRowChunks(rows: readonly NewJobRow[], cells: readonly JsonChunk[] | null): JobRowChunk[] {
  const encode = (row: NewJobRow) => JSON.stringify([row.row, row.input, row.addressIdx, row.resultJson]);
  if (cells === null) {
    return jsonChunks(rows, encode).map((chunk) => ({
      rows: chunk.json,
      cells: null,
      cellsOffset: 0,
      cellsFirst: false,
    }));
  }
  const chunks: JobRowChunk[] = [];
  let offset = 0;
  for (const cellsChunk of cells) {
    const covered = rows.slice(offset, offset + cellsChunk.count);
    jsonChunks(covered, encode).forEach((chunk, index) => {
      chunks.push({ rows: chunk.json, cells: cellsChunk.json, cellsOffset: offset, cellsFirst: index === 0 });
    });
    offset += cellsChunk.count;
  }
  if (offset !== rows.length) throw new Error(`${rows.length} rows but cells for ${offset}`);
  return chunks;
}

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

export interface AddressResult {
  idx: number;
  status: string;
  subStatus: string;
  catchAll: boolean | null;
  refundable: boolean;
  resultJson: string;
  /** A final answer a job with `recheck` asks again later (isRecheckable in the policy table). */
  recheckable?: boolean;
}

/**
 * Records final results (each address once: a replay changes nothing), recomputes the
 * job's counters from its addresses, and — in the same transaction — completes the job
 * and refunds it once every address is done. Returns whether this call completed it, and
 * when its first recheck round is due (a job with `recheck` and recheckable answers).
 */
export async function recordResults(
  db: Db,
  jobId: string,
  results: readonly AddressResult[],
  now: number,
  firstRecheckAfterMs: number | null = null,
): Promise<{ completed: boolean; recheckDueAt: number | null }> {
  const d1 = db.$client;
  const statements: D1PreparedStatement[] = [];
  for (const chunk of jsonChunks(
    results.map((result) => [result.idx, ...resultColumns(result), result.recheckable ? 1 : 0]),
  )) {
    statements.push(
      d1
        .prepare(
          `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, refundable, result_json, recheck)
           SELECT ?1, j.value->>0, '', '', 'done', 0, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5,
             CASE WHEN j.value->>6 = 1 AND (SELECT recheck FROM jobs WHERE id = ?1) = 1 THEN 'due' END
           FROM json_each(?2) j WHERE true
           ON CONFLICT (job_id, idx) DO UPDATE SET state = 'done', status = excluded.status, sub_status = excluded.sub_status,
             catch_all = excluded.catch_all, refundable = excluded.refundable, result_json = excluded.result_json,
             recheck = excluded.recheck
           WHERE job_addresses.state != 'done'`,
        )
        .bind(jobId, chunk.json),
    );
  }
  statements.push(...completionStatements(d1, jobId, now, firstRecheckAfterMs));
  const outcome = await d1.batch<{ id: string; recheckDueAt: number | null }>(statements);
  const finalized = outcome.at(-1)?.results[0];
  return { completed: finalized !== undefined, recheckDueAt: finalized?.recheckDueAt ?? null };
}

/** The job's verdict counters recomputed from its answered addresses. */
export function countersStatement(d1: D1Database, jobId: string, condition: string): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE jobs SET (processed_emails, deliverable_count, undeliverable_count, risky_count, unknown_count,
           catch_all_count, refundable_count) =
         (SELECT COUNT(*), COALESCE(SUM(status = 'deliverable'), 0), COALESCE(SUM(status = 'undeliverable'), 0),
            COALESCE(SUM(status = 'risky'), 0), COALESCE(SUM(status = 'unknown'), 0), COALESCE(SUM(catch_all = 1), 0),
            COALESCE(SUM(refundable), 0)
          FROM job_addresses WHERE job_id = ?1 AND state = 'done')
       WHERE id = ?1 AND ${condition}`,
    )
    .bind(jobId);
}

/**
 * Counters from the addresses, then the once-only completion: status, the first recheck
 * round's time (a job with `recheck` and answers to ask again), refund ledger row, balance and
 * the `finalized` flag, all conditional on the flag so a replay does nothing. The last
 * statement returns the job id only in the transaction that finalized it.
 */
function completionStatements(
  d1: D1Database,
  jobId: string,
  now: number,
  firstRecheckAfterMs: number | null,
): D1PreparedStatement[] {
  return [
    countersStatement(d1, jobId, 'finalized = 0'),
    d1
      .prepare(
        `UPDATE jobs SET status = 'completed', completed_at = ?2, credits_refunded = refundable_count
         WHERE id = ?1 AND status = 'processing' AND finalized = 0 AND processed_emails >= total_emails`,
      )
      .bind(jobId, now),
    d1
      .prepare(
        `UPDATE jobs SET recheck_due_at = completed_at + ?2
         WHERE id = ?1 AND ?2 IS NOT NULL AND recheck = 1 AND status = 'completed' AND finalized = 0
           AND EXISTS (SELECT 1 FROM job_addresses WHERE job_id = ?1 AND recheck = 'due')`,
      )
      .bind(jobId, firstRecheckAfterMs),
    ...finalizeStatements(d1, jobId, now),
  ];
}

/**
 * The outbox row of a finishing job's webhook event (job.completed or job.failed), written in
 * the transaction that finishes the job, so the event exists exactly when the job finished.
 * Its id is derived from the job and the event, so the event always carries the same
 * `webhook-id`. The payload is built from the job at the first delivery attempt (empty until
 * then) and kept, so every retry sends the same bytes. No row without a URL and a secret, nor
 * for a sandbox (test-key) job: the secret is the account's live one (docs/money.md).
 */
function jobEventStatement(d1: D1Database, jobId: string, now: number): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO webhook_deliveries (id, account_id, job_id, event_type, url, payload, state, next_attempt_at, created_at)
       SELECT 'msg_' || replace(j.id, '-', '') || CASE j.status WHEN 'failed' THEN '_failed' ELSE '_completed' END,
         j.account_id, j.id, CASE j.status WHEN 'failed' THEN 'job.failed' ELSE 'job.completed' END,
         COALESCE(j.webhook_url, a.webhook_url), '', 'pending', ?2, ?2
       FROM jobs j JOIN accounts a ON a.id = j.account_id
       WHERE j.id = ?1 AND j.status IN ('completed', 'failed') AND j.finalized = 0
         AND COALESCE(j.webhook_url, a.webhook_url) IS NOT NULL AND a.webhook_secret IS NOT NULL
         AND ${dataModeSql('live')}
       ON CONFLICT (id) DO NOTHING`,
    )
    .bind(jobId, now);
}

/** Refund, webhook event and the `finalized` flag for a job that reached completed or failed. */
function finalizeStatements(d1: D1Database, jobId: string, now: number): D1PreparedStatement[] {
  const refund = refundFinishedJob(jobId, now);
  return [
    prepare(d1, refund.entry),
    prepare(d1, refund.balance),
    jobEventStatement(d1, jobId, now),
    d1
      .prepare(
        `UPDATE jobs SET finalized = 1 WHERE id = ?1 AND status IN ('completed', 'failed') AND finalized = 0
         RETURNING id, recheck_due_at AS recheckDueAt`,
      )
      .bind(jobId),
  ];
}

/**
 * Fails a job that cannot finish: its remaining addresses are refunded with the refundable
 * ones, once. Returns true if this call failed it.
 */
export async function failJob(db: Db, jobId: string, reason: string, now: number): Promise<boolean> {
  const d1 = db.$client;
  const outcome = await d1.batch<{ id: string }>([
    d1
      .prepare(
        `UPDATE jobs SET status = 'failed', failure_reason = ?2, completed_at = ?3,
           credits_refunded = refundable_count + (total_emails - processed_emails)
         WHERE id = ?1 AND status = 'processing' AND finalized = 0`,
      )
      .bind(jobId, reason, now),
    ...finalizeStatements(d1, jobId, now),
  ]);
  return (outcome.at(-1)?.results.length ?? 0) > 0;
}

/**
 * Keeps the temporary answer of addresses that will be asked again, and when: it becomes their
 * final answer if the job's deadline comes first. They stay queued; the lease starts again now.
 */
export async function recordProvisional(
  db: Db,
  jobId: string,
  results: readonly (AddressResult & { retryAt: number })[],
  now: number,
): Promise<void> {
  const d1 = db.$client;
  const statements = jsonChunks(
    results.map((result) => [result.idx, ...resultColumns(result), result.retryAt]),
  ).map((chunk) =>
    d1
      .prepare(
        `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, refundable, result_json, retry_at)
         SELECT ?1, j.value->>0, '', '', 'queued', ?3, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5, j.value->>6
         FROM json_each(?2) j WHERE true
         ON CONFLICT (job_id, idx) DO UPDATE SET attempts = attempts + 1, enqueued_at = excluded.enqueued_at,
           status = excluded.status, sub_status = excluded.sub_status, catch_all = excluded.catch_all,
           refundable = excluded.refundable, result_json = excluded.result_json, retry_at = excluded.retry_at
         WHERE job_addresses.state != 'done'`,
      )
      .bind(jobId, chunk.json, now),
  );
  if (statements.length > 0) await d1.batch(statements);
}

export interface UnfinishedAddress {
  idx: number;
  email: string;
  domain: string;
  /** The last temporary answer, if the address had one. */
  subStatus: string | null;
  resultJson: string | null;
}

/** The addresses of a job that have no final answer yet. */
export async function unfinishedAddresses(db: Db, jobId: string): Promise<UnfinishedAddress[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT idx, email, domain, sub_status AS subStatus, result_json AS resultJson FROM job_addresses
       WHERE job_id = ?1 AND state = 'queued' ORDER BY idx`,
    )
    .bind(jobId)
    .all<UnfinishedAddress>();
  return results;
}

/** Processing jobs whose deadline passed before `before` (their deadline message was lost). */
export async function findJobsPastDeadline(db: Db, before: number, limit: number): Promise<string[]> {
  const { results } = await db.$client
    .prepare(`SELECT id FROM jobs WHERE status = 'processing' AND deadline_at < ?1 LIMIT ?2`)
    .bind(before, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

/** Marks addresses as handed to the queue again (for the recovery lease) and counts the attempt. */
export async function markRequeued(
  db: Db,
  jobId: string,
  idxs: readonly number[],
  now: number,
): Promise<void> {
  await db.$client
    .prepare(
      `UPDATE job_addresses SET attempts = attempts + 1, enqueued_at = ?3
       WHERE job_id = ?1 AND idx IN (SELECT value FROM json_each(?2)) AND state = 'queued'`,
    )
    .bind(jobId, JSON.stringify(idxs), now)
    .run();
}

export interface StaleAddress {
  jobId: string;
  idx: number;
  email: string;
  domain: string;
  attempts: number;
}

/** Queued addresses of processing jobs whose lease ran out (a consumer or prober died). */
export async function findStaleAddresses(
  db: Db,
  leaseExpiredBefore: number,
  limit: number,
): Promise<StaleAddress[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT a.job_id AS jobId, a.idx, a.email, a.domain, a.attempts FROM jobs j
       JOIN job_addresses a ON a.job_id = j.id AND a.state = 'queued' AND a.enqueued_at < ?1
       WHERE j.status = 'processing' LIMIT ?2`,
    )
    .bind(leaseExpiredBefore, limit)
    .all<StaleAddress>();
  return results;
}

export async function findOverdueJobs(db: Db, createdBefore: number, limit: number): Promise<string[]> {
  const { results } = await db.$client
    .prepare(`SELECT id FROM jobs WHERE status = 'processing' AND created_at < ?1 LIMIT ?2`)
    .bind(createdBefore, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
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
  /** Only rows whose address, as uploaded, contains this text (ASCII case-insensitive). */
  search?: string | undefined;
}

// A row's status: its address's verdict, or for a row with no address (invalid input) its own.
// A row's verdict: its address's final answer (a temporary one, kept while the address is asked
// again, is not yet a verdict), or the row's own for one without an address to verify.
const ROW_STATUS =
  "COALESCE(CASE WHEN a.state = 'done' THEN a.status END, json_extract(r.result_json, '$.status'))";
const ROWS_WITH_RESULTS = `FROM job_rows r LEFT JOIN job_addresses a ON a.job_id = r.job_id AND a.idx = r.address_idx
       WHERE r.job_id = ?1 AND (?2 IS NULL OR ${ROW_STATUS} IN (SELECT value FROM json_each(?2)))
         AND (?3 IS NULL OR r.input LIKE ?3 ESCAPE '\\')`;

/** Rows in upload order with their results (a duplicate row shows its address's result). */
export async function readResultRows(db: Db, jobId: string, query: ResultRowsQuery): Promise<ResultRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT r.row, r.input, COALESCE(r.result_json, a.result_json) AS resultJson, r.csv_values AS csvValues
       ${ROWS_WITH_RESULTS} ORDER BY r.row LIMIT ?4 OFFSET ?5`,
    )
    .bind(jobId, statusFilter(query), searchPattern(query), query.limit, query.offset)
    .all<ResultRow>();
  return results;
}

/** How many rows of a job the query selects, ignoring its page. */
export async function countResultRows(db: Db, jobId: string, query: ResultRowsQuery): Promise<number> {
  const row = await db.$client
    .prepare(`SELECT COUNT(*) AS total ${ROWS_WITH_RESULTS}`)
    .bind(jobId, statusFilter(query), searchPattern(query))
    .first<{ total: number }>();
  return row?.total ?? 0;
}

function statusFilter(query: ResultRowsQuery): string | null {
  return query.statuses ? JSON.stringify(query.statuses) : null;
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
    .bind(jobId, null, null)
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

/** Addresses waiting across all processing jobs, and the recent throughput, for estimates. */
export async function queueOutlook(
  db: Db,
  since: number,
): Promise<{ pending: number; perSecond: number | null }> {
  const row = await db.$client
    .prepare(
      `SELECT
         (SELECT COALESCE(SUM(total_emails - processed_emails), 0) FROM jobs WHERE status = 'processing') AS pending,
         (SELECT CAST(SUM(total_emails) AS REAL) / MAX(SUM(completed_at - created_at), 1) * 1000 FROM jobs
            WHERE status = 'completed' AND completed_at > ?1 AND total_emails > 0) AS perSecond`,
    )
    .bind(since)
    .first<{ pending: number; perSecond: number | null }>();
  return { pending: row?.pending ?? 0, perSecond: row?.perSecond ?? null };
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
