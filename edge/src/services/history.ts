// The account history (single verifications and batch jobs, newest first) with each batch
// entry's job, as the API and the dashboard both show it.
import type { Job } from '@rcpt/shared/contract/api';
import type { Db } from '../storage/db.ts';
import { findJobs } from '../storage/jobs.ts';
import { type HistoryFilters, type HistoryRow, listHistory } from '../storage/verifications.ts';
import { jobView } from './batch/jobs.ts';

export interface HistoryEntry extends HistoryRow {
  /** The job of a batch entry (null for a single verification, or a job already deleted). */
  job: Job | null;
}

export async function historyPage(
  db: Db,
  accountId: string,
  filters: HistoryFilters,
  page: { offset: number; limit: number },
): Promise<{ entries: HistoryEntry[]; total: number }> {
  const { rows, total } = await listHistory(db, accountId, filters, page);
  const jobIds = [...new Set(rows.flatMap((row) => (row.jobId ? [row.jobId] : [])))];
  const jobs = new Map((await findJobs(db, accountId, jobIds)).map((job) => [job.id, jobView(job)]));
  return {
    entries: rows.map((row) => ({ ...row, job: (row.jobId && jobs.get(row.jobId)) || null })),
    total,
  };
}
