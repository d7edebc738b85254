// Cleaning a CSV file, as `rcpt clean` and the MCP server's clean_csv tool both do: the file is
// uploaded as it is (the API finds the email column from the header), its job waited for, and
// the cleaned CSV — the original columns plus rcpt's verdict columns — downloaded and written.
import { readFile, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Job, Rcpt, SendAdvice, Status, UploadResponse } from './client.ts';

export interface CleanFileOptions {
  /** Header name (case-insensitive) or 0-based position; found from the header when absent. */
  emailColumn?: string;
  /** Where to write the cleaned CSV; not written when absent (the caller has `csv`). */
  output?: string;
  /** Keep only the rows whose verdict has one of these statuses. */
  only?: readonly Status[];
  /** Keep only the rows whose subStatus has one of these send advices (`['send']`: the ones to send to). */
  advice?: readonly SendAdvice[];
  maxWaitSeconds?: number;
  recheck?: boolean;
  watch?: boolean;
  /** Told the job id as soon as the list is uploaded, before the wait. */
  onUpload?: (upload: UploadResponse) => void;
  onProgress?: (job: Job) => void;
  signal?: AbortSignal;
}

/** What a cleaned list came to: the job's final counts and what was charged and refunded. */
export interface CleanSummary {
  jobId: string;
  output: string | null;
  only: Status[] | null;
  advice: SendAdvice[] | null;
  totalEmails: number;
  duplicateCount: number;
  invalidRows: number;
  emptyRows: number;
  deliverable: number;
  risky: number;
  unknown: number;
  undeliverable: number;
  creditsCharged: number;
  creditsRefunded: number;
}

/** Uploads the CSV file at `path`, waits for its job, and writes the cleaned CSV to `output` when given. */
export async function cleanCsvFile(
  rcpt: Rcpt,
  path: string,
  options: CleanFileOptions = {},
): Promise<{ csv: string; summary: CleanSummary }> {
  const { upload, job } = await rcpt.cleanList(
    {
      csv: new Blob([await readFile(path)], { type: 'text/csv' }),
      filename: basename(path),
      emailColumn: options.emailColumn,
    },
    {
      name: basename(path),
      maxWaitSeconds: options.maxWaitSeconds,
      recheck: options.recheck,
      watch: options.watch,
      onUpload: options.onUpload,
      onProgress: options.onProgress,
      signal: options.signal,
    },
  );
  const csv = await rcpt.resultsCsv(job.id, { only: options.only, advice: options.advice });
  if (options.output !== undefined) await writeFile(options.output, csv);
  return {
    csv,
    summary: {
      jobId: job.id,
      output: options.output ?? null,
      only: options.only ? [...options.only] : null,
      advice: options.advice ? [...options.advice] : null,
      totalEmails: job.totalEmails,
      duplicateCount: upload.duplicateCount,
      invalidRows: upload.invalidRows,
      emptyRows: upload.emptyRows,
      deliverable: job.deliverableCount,
      risky: job.riskyCount,
      unknown: job.unknownCount,
      undeliverable: job.undeliverableCount,
      creditsCharged: job.creditsCharged,
      creditsRefunded: job.creditsRefunded,
    },
  };
}
