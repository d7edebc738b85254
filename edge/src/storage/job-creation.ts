// A batch job's creation in D1: the job, its rows and addresses, its history entry and its
// charge in one transaction, written only when the balance covers it, the account's quotas and
// email confirmation allow it and the store's daily write budget has room. Rows go in as INSERT … SELECT FROM json_each, the shape measured fastest on local D1.

import { addressFilterOf } from './address-filter.ts';
import { type Db, prepare } from './db.ts';
import {
  answerColumns,
  type JobStoreKind,
  jobLists,
  knowStore,
  type UploadRowChunk,
} from './job-lists/index.ts';
import { type AddressResult, applyReport, failJobWithoutRows } from './job-results.ts';
import { type JsonChunk, jsonChunks } from './json-chunks.ts';
import { debit, freeCreditsSql, spendableCreditsSql } from './ledger.ts';
import {
  countStorage,
  d1BytesWrittenByAllSql,
  limitOrZeroSql,
  ROW_OVERHEAD_BYTES,
  rowBytes,
  type StorageLimit,
  storageFitsSql,
  storageUsedSql,
  storedResultBytes,
  utf8Bytes,
} from './storage-budget.ts';
import { watchDaysStatement, watchRowsBytes } from './watches.ts';

/** What an upload's rows came to: the job's counts as stored. */
export interface JobCounts {
  totalRows: number;
  /** Unique valid addresses: what is verified and charged. */
  totalEmails: number;
  duplicateCount: number;
  emptyRows: number;
  invalidRows: number;
  skippedRows: number;
}

export interface NewJob extends JobCounts {
  id: string;
  /** Credits to take: the unique valid addresses, or 0 for a sandbox job. */
  charge: number;
  accountId: string;
  apiKeyId: string | null;
  name: string | null;
  source: 'json' | 'csv';
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
  /** Days a watched job watches its domains after completion; 'off': not watched. */
  watchDays: number | 'off';
  /** Where the job's lists live (docs/architecture.md, "Where a job's lists live"). */
  store: JobStoreKind;
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

/** The limits a new job must fit in; a null limit is not checked for this job. */
export interface JobQuotaLimits {
  /** Most jobs pending or processing, this one included. */
  jobsInFlight: number | null;
  /** The account's budget of bytes written on the UTC day starting at `storageDay`, this job included. */
  storage: StorageLimit | null;
  storageDay: number;
  /** Most bytes all accounts together may write to D1 on that day, this job's included (docs/capacity.md). */
  globalStorageBytes: number | null;
  /** Whether the job may be stored for an account whose email is not confirmed: a small sandbox try. */
  unconfirmedMayStore: boolean;
}

/** What the account had when the job was refused, and which of its conditions failed. */
export interface AccountUsage {
  creditBalance: number;
  jobsInFlight: number;
  storageBytes: number;
  /** The account's storage budget of the day. */
  storageLimit: number;
  /** The bytes all accounts together had written to D1 on the day. */
  globalStorageBytes: number;
  /** The bytes the job would have written. */
  jobBytes: number;
  /** Of them, the bytes it would have written to D1 (its lists only when they live there). */
  jobD1Bytes: number;
  confirmationAllows: boolean;
  creditsCover: boolean;
  inFlightFits: boolean;
  storageFits: boolean;
  globalFits: boolean;
}

export type JobCreation = { created: true; balance: number } | { created: false; usage: AccountUsage };

/**
 * What a job's webhook events and its history entry store beside its own row: a `job.completed`
 * (or `job.failed`) event and one `job.updated` per greylist follow-up round, about 1 KB each.
 */
const JOB_EXTRA_BYTES = 8 * 1024;

// The job's conditions as SQL over the account's and the store's state, read once in the job's
// own batch (one transaction): ?2 account, ?18 its charge, ?20 the in-flight limit; the storage
// budgets' numbers are inlined. The job insert requires all of them; the refused batch reports
// each, so the caller answers with the one that failed.
function jobConditions(limits: JobQuotaLimits, jobBytes: { all: number; d1: number }) {
  const usage = {
    creditBalance: `(SELECT ${freeCreditsSql()} FROM accounts WHERE id = ?2)`,
    jobsInFlight: `(SELECT COUNT(*) FROM jobs WHERE account_id = ?2 AND status IN ('pending', 'processing'))`,
    storageBytes: storageUsedSql('?2', limits.storageDay),
    storageLimit: limitOrZeroSql('?2', limits.storage, limits.storageDay),
    globalStorageBytes: d1BytesWrittenByAllSql(limits.storageDay),
  };
  // Confirmation is never undone, but reading it here costs no round trip and keeps every
  // condition of the job in one place.
  const confirmed = '(SELECT email_confirmed_at FROM accounts WHERE id = ?2) IS NOT NULL';
  const conditions = {
    confirmationAllows: limits.unconfirmedMayStore ? '1' : confirmed,
    creditsCover: `${spendableCreditsSql('?2')} >= ?18`,
    inFlightFits: `(?20 IS NULL OR ${usage.jobsInFlight} < ?20)`,
    storageFits: storageFitsSql('?2', { day: limits.storageDay, bytes: jobBytes.all, limit: limits.storage }),
    globalFits:
      limits.globalStorageBytes === null
        ? '1'
        : `(${usage.globalStorageBytes} + ${jobBytes.d1} <= ${limits.globalStorageBytes})`,
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
      ...(address.result ? answerColumns(address.result) : [null, null, null, 0, null]),
    ]),
  );
  // The storage budget: the values written now (their JSON is a close upper bound), a row's
  // overhead for each, and the results still to come. The lists' share goes to D1 only for a job
  // whose lists live there; the job's row, events, history entry, filter and watch always do.
  let listBytes = (rows.length + addresses.length) * ROW_OVERHEAD_BYTES;
  for (const chunk of rowChunks)
    listBytes += utf8Bytes(chunk.rows) + (chunk.cellsFirst ? utf8Bytes(chunk.cells) : 0);
  for (const chunk of addressChunks) listBytes += utf8Bytes(chunk.json);
  for (const address of addresses) if (!address.result) listBytes += storedResultBytes(job.evidence);
  const filter = addressFilterOf(addresses.map((address) => address.email));
  let d1OnlyBytes =
    rowBytes(job.id, job.name, csvHeaders, job.webhookUrl) + JOB_EXTRA_BYTES + (filter?.byteLength ?? 0);
  if (job.watchDays !== 'off')
    d1OnlyBytes += watchRowsBytes(
      job.id,
      addresses.map((address) => address.domain),
    );
  const jobBytes = {
    all: d1OnlyBytes + listBytes,
    d1: d1OnlyBytes + (job.store === 'd1' ? listBytes : 0),
  };
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
           ${usage.storageBytes} AS storageBytes, ${usage.storageLimit} AS storageLimit,
           ${usage.globalStorageBytes} AS globalStorageBytes, ${conditions.confirmationAllows} AS confirmationAllows,
           ${conditions.creditsCover} AS creditsCover, ${conditions.inFlightFits} AS inFlightFits,
           ${conditions.storageFits} AS storageFits, ${conditions.globalFits} AS globalFits`,
      )
      .bind(...jobParams),
    d1
      .prepare(
        `INSERT INTO jobs (id, account_id, api_key_id, name, status, source, total_rows, total_emails, duplicate_count,
           empty_rows, invalid_rows, skipped_rows, credits_charged, csv_headers, webhook_url, created_at, completed_at, finalized, deadline_at, store)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?18, ?13, ?14, ?15, ?16, ?17, ?19, ${storeSql(job.store)}
         WHERE ${Object.values(conditions).join(' AND ')}`,
      )
      .bind(...jobParams),
    prepare(d1, movement.entry),
    d1
      .prepare(
        `UPDATE jobs SET recheck = COALESCE(?2, (SELECT recheck_default FROM accounts WHERE id = account_id)),
           evidence = ?3 WHERE id = ?1`,
      )
      .bind(job.id, job.recheck === null ? null : job.recheck ? 1 : 0, job.evidence ? 1 : 0),
    watchDaysStatement(d1, job.id, job.watchDays),
    ...(filter
      ? [
          d1
            .prepare(
              'INSERT INTO job_address_filters (job_id, filter) SELECT ?1, ?2 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)',
            )
            .bind(job.id, filter.buffer),
        ]
      : []),
    countStorage(
      d1,
      { accountId: job.accountId, day: limits.storageDay, bytes: jobBytes.all, d1Bytes: jobBytes.d1 },
      { sql: 'EXISTS (SELECT 1 FROM jobs WHERE id = ?4)', params: [job.id] },
    ),
  ];
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
  if (balance !== undefined) {
    await storeLists(db, job, rowChunks, addressChunks);
    return { created: true, balance };
  }
  const read = results[0]?.results[0] as Record<string, number> | undefined;
  if (!read) throw new Error(`no usage read for job ${job.id}`);
  return {
    created: false,
    usage: {
      creditBalance: read.creditBalance ?? 0,
      jobsInFlight: read.jobsInFlight ?? 0,
      storageBytes: read.storageBytes ?? 0,
      storageLimit: read.storageLimit ?? 0,
      globalStorageBytes: read.globalStorageBytes ?? 0,
      jobBytes: jobBytes.all,
      jobD1Bytes: jobBytes.d1,
      confirmationAllows: read.confirmationAllows === 1,
      creditsCover: read.creditsCover === 1,
      inFlightFits: read.inFlightFits === 1,
      storageFits: read.storageFits === 1,
      globalFits: read.globalFits === 1,
    },
  };
}

/**
 * The created job's rows and addresses, stored in its lists after the transaction that created
 * and charged it (docs/architecture.md, "Where a job's lists live"); addresses answered at upload
 * (sandbox keys) are counted and may complete the job at once. If the lists cannot take them the
 * job fails with its refund at once; the rows were only in this upload's memory.
 */
async function storeLists(
  db: Db,
  job: NewJob,
  rows: readonly UploadRowChunk[],
  addresses: readonly JsonChunk[],
): Promise<void> {
  knowStore(job.id, job.store);
  try {
    const report = await jobLists(db, job.id).storeUpload({ rows, addresses, now: job.now });
    // Until this is set the recovery sweep takes the job for one whose rows never arrived.
    await db.$client.prepare('UPDATE jobs SET rows_stored_at = ?2 WHERE id = ?1').bind(job.id, job.now).run();
    if (report.processed > 0) await applyReport(db, job.id, report, job.now, null);
  } catch (error) {
    await failJobWithoutRows(db, job.id, job.now);
    throw error;
  }
}

/** SQL: a store's name as a literal (one of two constants: the statement's parameters are all taken). */
function storeSql(store: JobStoreKind): string {
  return store === 'object' ? "'object'" : "'d1'";
}

/** One statement's rows and the chunk of the file's cells they take theirs from. */
interface JobRowChunk extends UploadRowChunk {
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
