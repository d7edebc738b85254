// Batch jobs for API callers: upload (plan, charge and create atomically, then enqueue by
// domain), the job's status view, and ordered results as JSON or CSV.
import {
  type BounceEstimate,
  type BulkUploadResponse,
  type Job,
  MAX_MAX_WAIT_SECONDS,
  type OriginalCsvData,
  storedVerificationResult,
  VERIFICATION_STATUSES,
  type VerificationResult,
} from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { ownReplyOf, replyLine } from '@rcpt/shared/verify/evidence';
import type { Caller } from '../app-env.ts';
import { errorFields, log } from '../logger.ts';
import type { Db } from '../storage/db.ts';
import {
  type AddressResult,
  countResultRows,
  createJobWithCharge,
  type JobRow,
  queueOutlook,
  type ResultRow,
  type ResultRowsQuery,
  type RowCounts,
  readResultRows,
} from '../storage/jobs.ts';
import type { ParsedUpload } from './batch-input.ts';
import { groupByDomain, planBatch } from './batch-plan.ts';
import { type BatchMessage, enqueueBatchWork } from './batch-queue.ts';
import { insufficientCredits } from './credits.ts';
import { type Quotas, quotaExceeded, utcDayStart } from './quotas.ts';
import { sandboxVerify } from './sandbox.ts';

/**
 * Addresses of one domain per queue message, one probe: fewer than Postfix's hard error limit
 * (smtpd_hard_error_limit = 20, postconf(5)) even when every one and the catch-all test are
 * rejected, so no session is ever cut for "too many errors", and with 40 % unknown mailboxes
 * (6 rejections) below its soft limit of 10 as well. Small probes also spread a domain over
 * parallel sessions.
 */
export const ADDRESSES_PER_MESSAGE = 15;
/** Used for estimates until completed jobs give a measured rate. */
const DEFAULT_ADDRESSES_PER_SECOND = 50;
/** The default deadline: this long for any list, plus 1 s per ADDRESSES_PER_DEADLINE_SECOND. */
const BASE_DEADLINE_SECONDS = 180;
const ADDRESSES_PER_DEADLINE_SECOND = 25;
/** The deadline message arrives this long after the deadline, so probes cut at it can report. */
const DEADLINE_GRACE_SECONDS = 2;

/** The deadline of a job of `totalEmails` addresses with no `maxWaitSeconds` of its own. */
export function defaultMaxWaitSeconds(totalEmails: number): number {
  return Math.min(
    MAX_MAX_WAIT_SECONDS,
    BASE_DEADLINE_SECONDS + Math.ceil(totalEmails / ADDRESSES_PER_DEADLINE_SECOND),
  );
}

export function defaultDeadlineAt(totalEmails: number, now: number): number {
  return now + defaultMaxWaitSeconds(totalEmails) * 1000;
}

export interface UploadInput {
  db: Db;
  queue: Queue<BatchMessage>;
  caller: Caller;
  upload: ParsedUpload;
  source: 'json' | 'csv';
  name: string | null;
  webhookUrl: string | null;
  /** The job's deadline in seconds after upload; default from its size. */
  maxWaitSeconds: number | null;
  /** Greylist follow-up after completion; null or absent: the account's setting. */
  recheck?: boolean | null;
  /** Each result carries the evidence behind its answer (docs/verdicts.md, "Evidence"). */
  evidence?: boolean;
  /** The account's quotas (docs/operations.md): a job past one is refused, nothing stored. */
  quotas: Quotas;
  now: number;
}

export async function createBatchJob(input: UploadInput): Promise<BulkUploadResponse> {
  const { db, caller, upload, now } = input;
  if (upload.rows.length === 0) throw new ApiError('VALIDATION_ERROR', { message: 'The list has no rows.' });
  const plan = planBatch(upload.rows, now);
  const jobId = crypto.randomUUID();
  const sandbox = caller.mode === 'test';
  const rows = plan.rows.map((row) => ({
    row: row.row,
    input: row.input,
    addressIdx: row.addressIdx,
    resultJson: row.result ? JSON.stringify(row.result) : null,
  }));
  // Test keys answer every address at once from the sandbox, free of charge.
  const addresses = sandbox
    ? plan.addresses.map((address) => ({
        ...address,
        result: addressResult(address.idx, sandboxVerify(address.email, now)),
      }))
    : plan.addresses;
  const counts = plan.counts;
  // Read before the charge: nothing that can fail runs between the charge and the answer.
  const outlook = await queueOutlook(db, now - 24 * 3600_000);
  const maxWaitSeconds = input.maxWaitSeconds ?? defaultMaxWaitSeconds(counts.totalEmails);
  const deadlineAt = now + maxWaitSeconds * 1000;
  const charge = sandbox ? 0 : counts.totalEmails;
  // Only a job that is still running after its upload holds a slot in flight.
  const staysInFlight = !sandbox && counts.totalEmails > 0;
  const creation = await createJobWithCharge(
    db,
    {
      id: jobId,
      accountId: caller.accountId,
      apiKeyId: caller.apiKeyId,
      name: input.name,
      source: input.source,
      ...counts,
      charge,
      csvHeaders: upload.headers,
      csvCells: upload.cells,
      webhookUrl: input.webhookUrl,
      deadlineAt,
      // Sandbox answers are made up at once: nothing to ask again.
      recheck: sandbox ? false : (input.recheck ?? null),
      // Sandbox answers come from no SMTP session: there is no evidence to keep.
      evidence: !sandbox && (input.evidence ?? false),
      now,
    },
    rows,
    addresses,
    {
      jobsInFlight: staysInFlight ? input.quotas.jobsInFlight : null,
      storageBytes: input.quotas.storageBytesPerDay,
      storageDay: utcDayStart(now),
    },
  );
  if (!creation.created) {
    const { usage } = creation;
    if (!usage.creditsCover) throw await insufficientCredits(db, caller.accountId, counts.totalEmails);
    if (!usage.inFlightFits) {
      throw quotaExceeded({
        quota: 'jobs_in_flight',
        limit: input.quotas.jobsInFlight,
        used: usage.jobsInFlight,
        requested: 1,
        now,
      });
    }
    if (!usage.storageFits) {
      throw quotaExceeded({
        quota: 'storage_bytes_per_day',
        limit: input.quotas.storageBytesPerDay,
        used: usage.storageBytes,
        requested: usage.jobBytes,
        now,
      });
    }
    throw new Error(`job ${jobId} was not stored, and no condition says why`);
  }
  if (!sandbox && plan.addresses.length > 0) {
    try {
      await enqueueBatchWork(
        input.queue,
        groupByDomain(plan.addresses, ADDRESSES_PER_MESSAGE).map((group) => ({
          jobId,
          domain: group[0]?.domain ?? '',
          attempt: 0,
          addresses: group.map(({ idx, email }) => ({ idx, email })),
        })),
      );
      await enqueueBatchWork(
        input.queue,
        [{ kind: 'deadline', jobId }],
        maxWaitSeconds + DEADLINE_GRACE_SECONDS,
      );
    } catch (cause) {
      // The job is charged and stored, its addresses queued in D1: the recovery sweep
      // enqueues them once their lease runs out, and finishes the job at its deadline if
      // the deadline message was not sent, so the caller gets its job id, not a 500.
      log.error('enqueue failed; recovery will enqueue', { jobId, ...errorFields(cause) });
    }
  }
  const perSecond =
    outlook.perSecond && outlook.perSecond > 0 ? outlook.perSecond : DEFAULT_ADDRESSES_PER_SECOND;
  return {
    success: true,
    jobId,
    totalEmails: counts.totalEmails,
    duplicateCount: counts.duplicateCount,
    skippedRows: counts.skippedRows,
    emptyRows: counts.emptyRows,
    invalidRows: counts.invalidRows,
    // The queue ahead at the measured rate, but never past the job's deadline.
    estimatedTimeSeconds: sandbox
      ? 0
      : Math.min(maxWaitSeconds, Math.max(1, Math.ceil((outlook.pending + counts.totalEmails) / perSecond))),
    creditsCharged: charge,
  };
}

/** A final result as the job stores it; `refundable` is its policy (SUB_STATUS_TABLE, docs/money.md). */
export function addressResult(idx: number, result: VerificationResult, refundable = false): AddressResult {
  return {
    idx,
    status: result.status,
    subStatus: result.subStatus,
    catchAll: result.checks.isCatchAll,
    refundable,
    resultJson: JSON.stringify(result),
  };
}

/** The job as the status endpoint shows it. */
export function jobView(job: JobRow): Job {
  const progress = job.totalEmails === 0 ? 100 : Math.floor((job.processedEmails / job.totalEmails) * 100);
  return {
    id: job.id,
    name: job.name,
    status: job.status,
    progress: job.status === 'completed' ? 100 : Math.min(progress, 99),
    totalEmails: job.totalEmails,
    processedEmails: job.processedEmails,
    deliverableCount: job.deliverableCount,
    undeliverableCount: job.undeliverableCount,
    riskyCount: job.riskyCount,
    unknownCount: job.unknownCount,
    catchAllCount: job.catchAllCount,
    createdAt: new Date(job.createdAt).toISOString(),
    completedAt: job.completedAt === null ? null : new Date(job.completedAt).toISOString(),
    deadlineAt: job.deadlineAt === null ? null : new Date(job.deadlineAt).toISOString(),
    bounceEstimate: jobBounceEstimate(job),
    creditsCharged: job.creditsCharged,
    creditsRefunded: job.creditsRefunded,
    failureReason: job.failureReason,
    recheck: job.recheck === 1,
    recheckedAt: job.recheckedAt === null ? null : new Date(job.recheckedAt).toISOString(),
    nextRecheckAt: job.recheckDueAt === null ? null : new Date(job.recheckDueAt).toISOString(),
    evidence: job.evidence === 1,
  };
}

/** The bounce percentages from which an estimate is `medium` and `high` (below: `low`). */
export const BOUNCE_LEVEL_FROM = { medium: 2, high: 8 } as const;

/** The verdicts a bounce estimate is made from, all counted in one unit. */
export interface BounceBasis {
  unit: 'addresses' | 'rows';
  /** Those with a verdict, invalid ones included. */
  checked: number;
  undeliverable: number;
  risky: number;
  /** The risky ones at a catch-all domain. */
  catchAll: number;
  unknown: number;
}

/**
 * The share of the list expected to bounce if sent as-is: undeliverable and invalid entries
 * bounce; a catch-all address bounces about one time in three, an unknown one in six, other
 * risky ones one in ten (industry rules of thumb; stated in `basis`).
 */
export function bounceEstimate(counts: BounceBasis): BounceEstimate | null {
  if (counts.checked <= 0) return null;
  const otherRisky = Math.max(0, counts.risky - counts.catchAll);
  const expected = counts.undeliverable + counts.catchAll / 3 + counts.unknown / 6 + otherRisky / 10;
  const percent = Math.round((expected / counts.checked) * 1000) / 10;
  return {
    percent,
    level: percent < BOUNCE_LEVEL_FROM.medium ? 'low' : percent < BOUNCE_LEVEL_FROM.high ? 'medium' : 'high',
    basis: `${counts.checked} ${counts.unit} checked: undeliverable and invalid count fully, catch-all 1/3, unknown 1/6, other risky 1/10`,
  };
}

/** The job's estimate as the API gives it: its unique addresses, and its invalid rows. */
function jobBounceEstimate(job: JobRow): BounceEstimate | null {
  return bounceEstimate({
    unit: 'addresses',
    checked: job.processedEmails + job.invalidRows,
    undeliverable: job.undeliverableCount + job.invalidRows,
    risky: job.riskyCount,
    catchAll: job.catchAllCount,
    unknown: job.unknownCount,
  });
}

/**
 * The estimate over a job's rows, as the job page counts them (an empty row has no address to
 * send to, so it is left out).
 */
export function rowsBounceEstimate(rows: RowCounts, emptyRows: number): BounceEstimate | null {
  return bounceEstimate({
    unit: 'rows',
    checked:
      rows.byStatus.deliverable +
      rows.byStatus.undeliverable +
      rows.byStatus.risky +
      rows.byStatus.unknown -
      emptyRows,
    undeliverable: rows.byStatus.undeliverable - emptyRows,
    risky: rows.byStatus.risky,
    catchAll: rows.catchAll,
    unknown: rows.byStatus.unknown,
  });
}

export interface ResultsPage {
  results: VerificationResult[];
  originalCsvData: OriginalCsvData | null;
  total: number;
}

function assertCompleted(job: JobRow): void {
  if (job.status !== 'completed') {
    throw new ApiError('JOB_NOT_COMPLETED', {
      details: { status: job.status, progress: jobView(job).progress },
    });
  }
}

/** A stored row's result: a duplicate shares its address's verdict but shows the address as its row had it. */
function rowResult(jobId: string, row: ResultRow): VerificationResult {
  if (!row.resultJson) throw new Error(`row ${row.row} of job ${jobId} has no result`);
  return { ...storedVerificationResult(row.resultJson), email: row.input };
}

const csvHeadersOf = (job: JobRow) => (job.csvHeaders ? (JSON.parse(job.csvHeaders) as string[]) : null);

/**
 * A page of a completed job's results; with `soFar`, of a running one's rows that have their
 * final answer.
 */
export async function readJobResults(
  db: Db,
  job: JobRow,
  query: ResultRowsQuery,
  options: { soFar?: boolean } = {},
): Promise<ResultsPage> {
  if (options.soFar) query = { ...query, statuses: query.statuses ?? [...VERIFICATION_STATUSES] };
  else assertCompleted(job);
  const [rows, total] = await Promise.all([
    readResultRows(db, job.id, query),
    query.statuses || query.search ? countResultRows(db, job.id, query) : job.totalRows,
  ]);
  const headers = csvHeadersOf(job);
  return {
    results: rows.map((row) => rowResult(job.id, row)),
    originalCsvData: headers
      ? { headers, rows: rows.map((row) => (row.csvValues ? (JSON.parse(row.csvValues) as string[]) : [])) }
      : null,
    total,
  };
}

const VERDICT_COLUMNS = [
  'rcpt_status',
  'rcpt_sub_status',
  'rcpt_score',
  'rcpt_is_deliverable',
  'rcpt_reason',
  'rcpt_is_catch_all',
  'rcpt_suggestion',
];

/** The column a job kept with its evidence adds: the reply to the address's own RCPT, code and text. */
const EVIDENCE_COLUMNS = ['rcpt_smtp_reply'];

function verdictColumnsOf(job: JobRow): string[] {
  return job.evidence === 1 ? [...VERDICT_COLUMNS, ...EVIDENCE_COLUMNS] : VERDICT_COLUMNS;
}

/**
 * A download's file name: the list's name made safe for any file system (ASCII letters, digits
 * and dashes, accents dropped), else `rcpt-<job id>`, then the subset it holds, if any.
 */
export function downloadFileName(
  job: { id: string; name: string | null },
  subset: readonly string[],
  extension: 'csv' | 'json',
): string {
  const named = (job.name ?? '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
    .replace(/-+$/, '');
  const base = named === '' ? `rcpt-${job.id}` : named;
  return `${[base, ...subset].join('-')}.${extension}`;
}

/** Rows read from D1 per page of a CSV export: at most a few MB of results and cells at once. */
const EXPORT_PAGE_ROWS = 500;

/**
 * The results as CSV — the original columns (or `email`) followed by the verdict columns —
 * streamed: rows are read from D1 a page at a time as the client reads, so an export of any
 * size holds one page in memory (a Worker isolate has 128 MB). 400 JOB_NOT_COMPLETED is thrown
 * before the first byte.
 */
export function resultsCsvStream(
  db: Db,
  job: JobRow,
  query: ResultRowsQuery,
  options: { byteOrderMark?: boolean } = {},
): ReadableStream<Uint8Array> {
  assertCompleted(job);
  const headers = csvHeadersOf(job);
  const encoder = new TextEncoder();
  const end = query.offset + query.limit;
  let offset = query.offset;
  let headerSent = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headerSent) {
          headerSent = true;
          // U+FEFF first: how Excel on Windows tells a CSV file is UTF-8 rather than its ANSI code page.
          const header = csvLine([...(headers ?? ['email']), ...verdictColumnsOf(job)]);
          controller.enqueue(encoder.encode(options.byteOrderMark ? `\uFEFF${header}` : header));
          return;
        }
        const limit = Math.min(EXPORT_PAGE_ROWS, end - offset);
        const rows = limit > 0 ? await readResultRows(db, job.id, { ...query, offset, limit }) : [];
        if (rows.length === 0) {
          controller.close();
          return;
        }
        offset += rows.length;
        controller.enqueue(encoder.encode(rows.map((row) => csvLine(csvRow(job, row, headers))).join('')));
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * The results as the JSON of a results page — `{...lead, results, originalCsvData,
 * pagination?}` — streamed like resultsCsvStream: the results, then the original rows, each read
 * from D1 a page at a time, so the largest page (10,000 rows) is never held whole.
 */
export async function resultsJsonStream(
  db: Db,
  job: JobRow,
  query: ResultRowsQuery,
  shape: { lead: Record<string, unknown>; pagination: boolean },
): Promise<ReadableStream<Uint8Array>> {
  assertCompleted(job);
  const total = query.statuses || query.search ? await countResultRows(db, job.id, query) : job.totalRows;
  const headers = csvHeadersOf(job);
  async function* pages(encode: (row: ResultRow) => string): AsyncGenerator<string> {
    const end = query.offset + query.limit;
    let first = true;
    for (let offset = query.offset; offset < end; ) {
      const rows = await readResultRows(db, job.id, {
        ...query,
        offset,
        limit: Math.min(EXPORT_PAGE_ROWS, end - offset),
      });
      if (rows.length === 0) return;
      offset += rows.length;
      yield `${first ? '' : ','}${rows.map(encode).join(',')}`;
      first = false;
    }
  }
  async function* parts(): AsyncGenerator<string> {
    const lead = JSON.stringify(shape.lead).slice(0, -1);
    yield `${lead}${lead === '{' ? '' : ','}"results":[`;
    yield* pages((row) => JSON.stringify(rowResult(job.id, row)));
    if (headers) {
      yield `],"originalCsvData":{"headers":${JSON.stringify(headers)},"rows":[`;
      // A row's cells are stored as a JSON array: put in as they are.
      yield* pages((row) => row.csvValues ?? '[]');
      yield ']}';
    } else {
      yield '],"originalCsvData":null';
    }
    yield shape.pagination
      ? `,"pagination":${JSON.stringify({ offset: query.offset, limit: query.limit, total })}}`
      : '}';
  }
  const encoder = new TextEncoder();
  const source = parts();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await source.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
    },
    { highWaterMark: 0 },
  );
}

function csvRow(job: JobRow, row: ResultRow, headers: string[] | null): string[] {
  const result = rowResult(job.id, row);
  const cells = headers ? (row.csvValues ? (JSON.parse(row.csvValues) as string[]) : []) : [result.email];
  while (headers && cells.length < headers.length) cells.push('');
  return [
    ...cells,
    result.status,
    result.subStatus,
    String(result.score),
    String(result.isDeliverable),
    result.reason,
    result.checks.isCatchAll === null ? '' : String(result.checks.isCatchAll),
    result.checks.hasTypo?.suggested ?? '',
    ...(job.evidence === 1 ? [smtpReplyCell(result)] : []),
  ];
}

/** `rcpt_smtp_reply`: the reply to the address's own RCPT in its evidence; empty without one. */
function smtpReplyCell(result: VerificationResult): string {
  // The address as asked: its local part at the domain in A-labels (meta.domain).
  const asked = `${result.meta.localPart}@${result.meta.domain}`;
  const reply = result.evidence ? ownReplyOf(result.evidence, asked) : null;
  return reply ? replyLine(reply) : '';
}

function csvLine(cells: string[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

// Where a spreadsheet may start a cell with a formula (OWASP, CSV Injection,
// https://owasp.org/www-community/attacks/CSV_Injection): the start of the value, when its
// first character is =, +, -, @, tab, CR or LF, and every field separator of any spreadsheet
// (`,` `;` tab) or line break followed by =, +, -, or @, so that a spreadsheet splitting on
// another separator than ours finds no formula inside the cell either (tab, CR and LF after a
// separator are separators themselves, checked for what follows them). Spaces and quotes in
// between are skipped: a spreadsheet trims the one and reads the other as a quoted field's start.
const FORMULA_AFTER_SEPARATOR = /[,;\t\r\n][ "]*(?=[=+\-@])/g;
const FORMULA_AT_START = /^[ "]*(?=[=+\-@\t\r\n])/;

/**
 * One CSV cell, safe in every spreadsheet (OWASP CSV Injection): each place above gets an
 * apostrophe before the formula character, so the spreadsheet reads text, and the cell is always
 * quoted, with its quotes doubled (RFC 4180 §2.6, §2.7), so its separators and line breaks stay
 * inside it.
 */
export function csvCell(value: string): string {
  const neutralised = value.replace(FORMULA_AFTER_SEPARATOR, "$&'").replace(FORMULA_AT_START, "$&'");
  return `"${neutralised.replaceAll('"', '""')}"`;
}

export function notFoundJob(): ApiError {
  return new ApiError('NOT_FOUND', { message: 'No such job for this account.' });
}
