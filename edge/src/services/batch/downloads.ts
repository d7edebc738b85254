// A job's results for download: one page as JSON, or every row streamed as CSV or JSON in
// pages of EXPORT_PAGE_ROWS, with the upload's own columns first and formula cells defused.
// Once a job's rows that cost nothing are dropped (FREE_ROWS_RETENTION_DAYS after upload), its
// results are its charged rows, and say how many of which rows went (`droppedRows`).
import {
  type DroppedRows,
  type OriginalCsvData,
  storedVerificationResult,
  VERIFICATION_STATUSES,
  type VerificationResult,
} from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { ownReplyOf, replyLine } from '@rcpt/shared/verify/evidence';
import type { Db } from '../../storage/db.ts';
import {
  countResultRows,
  isFilteredQuery,
  type JobRow,
  type ResultRow,
  type ResultRowsQuery,
  readResultRows,
} from '../../storage/jobs.ts';
import { jobView } from './jobs.ts';

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

/** The rows of the job the retention cron dropped as costing nothing; null while every row is kept. */
export function droppedRowsOf(job: JobRow): DroppedRows | null {
  if (job.freeRowsDroppedAt === null) return null;
  const dropped = {
    invalid: job.invalidRows,
    empty: job.emptyRows,
    skipped: job.skippedRows,
    duplicate: job.duplicateCount,
  };
  if (Object.values(dropped).every((count) => count === 0)) return null;
  return { ...dropped, droppedAt: new Date(job.freeRowsDroppedAt).toISOString() };
}

/** The rows a download of the whole job holds: every row, less those dropped. */
function storedRowsOf(job: JobRow): number {
  const dropped = droppedRowsOf(job);
  if (!dropped) return job.totalRows;
  return job.totalRows - dropped.invalid - dropped.empty - dropped.skipped - dropped.duplicate;
}

/**
 * The `Rcpt-Dropped-Rows` header of a CSV download whose free rows were dropped, a Structured
 * Field Dictionary (RFC 8941 §3.2): `invalid=3, empty=1, skipped=0, duplicate=5`; null otherwise.
 */
export function droppedRowsHeader(job: JobRow): string | null {
  const dropped = droppedRowsOf(job);
  if (!dropped) return null;
  return `invalid=${dropped.invalid}, empty=${dropped.empty}, skipped=${dropped.skipped}, duplicate=${dropped.duplicate}`;
}

export const DROPPED_ROWS_HEADER = 'Rcpt-Dropped-Rows';

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
    isFilteredQuery(query) ? countResultRows(db, job.id, query) : storedRowsOf(job),
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
  const total = isFilteredQuery(query) ? await countResultRows(db, job.id, query) : storedRowsOf(job);
  const droppedRows = droppedRowsOf(job);
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
    const lead = JSON.stringify(droppedRows ? { ...shape.lead, droppedRows } : shape.lead).slice(0, -1);
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
