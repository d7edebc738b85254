// An outcome's batch verdict (docs/verdicts.md, "Outcomes"): the latest answer to its email in the
// account's jobs created within the window before it. The jobs' lists are not read across jobs
// (docs/architecture.md, "Where a job's lists live"): D1 gives the account's jobs in the window
// with their address filters, and only the lists of the jobs whose filter may hold the email are
// asked, the latest job first; a job from before the filters is asked always.
import { filterMayHold } from './address-filter.ts';
import { type DataMode, dataModeSql } from './api-keys.ts';
import type { Db } from './db.ts';
import { type JobStoreKind, jobLists, knowStore, type ListVerdict } from './job-lists/index.ts';

export interface BatchVerdict extends ListVerdict {
  /** Index of the outcome it is a candidate for. */
  index: number;
  /** The job, and when it was created: a job's verdicts count from its creation. */
  ref: string;
  at: number;
}

/** Outcomes of an account, reported with keys of `mode`, to match to verdicts within `windowMs` before each. */
export interface VerdictLookup {
  accountId: string;
  mode: DataMode;
  windowMs: number;
  outcomes: readonly { email: string; at: number }[];
}

interface WindowJob {
  id: string;
  createdAt: number;
  filter: Uint8Array | null;
}

/** For each `{email, at}` (index = position), the latest answer in a job created within `windowMs` before `at`. */
export async function latestBatchVerdicts(db: Db, lookup: VerdictLookup): Promise<BatchVerdict[]> {
  const ats = lookup.outcomes.map((outcome) => outcome.at);
  const { results } = await db.$client
    .prepare(
      `SELECT j.id, j.created_at AS createdAt, j.store, f.filter FROM jobs j LEFT JOIN job_address_filters f ON f.job_id = j.id
       WHERE j.account_id = ?1 AND j.created_at < ?2 AND j.created_at >= ?3 AND ${dataModeSql(lookup.mode)}
       ORDER BY j.created_at DESC`,
    )
    .bind(lookup.accountId, Math.max(...ats), Math.min(...ats) - lookup.windowMs)
    .all<{ id: string; createdAt: number; store: JobStoreKind; filter: ArrayBuffer | number[] | null }>();
  for (const row of results) knowStore(row.id, row.store);
  const jobs: WindowJob[] = results.map((row) => ({
    id: row.id,
    createdAt: row.createdAt,
    filter: row.filter === null ? null : new Uint8Array(row.filter),
  }));
  // Each outcome's jobs to ask, the latest first.
  const queues = lookup.outcomes.map(({ email, at }) =>
    jobs.filter(
      (job) =>
        job.createdAt < at &&
        job.createdAt >= at - lookup.windowMs &&
        (job.filter === null || filterMayHold(job.filter, email)),
    ),
  );
  const found: BatchVerdict[] = [];
  // Rounds: each unmatched outcome asks its next job; the outcomes asking one job ask it together.
  for (;;) {
    const asks = new Map<string, number[]>();
    queues.forEach((queue, index) => {
      const next = queue[0];
      if (next) asks.set(next.id, [...(asks.get(next.id) ?? []), index]);
    });
    if (asks.size === 0) return found;
    for (const [jobId, indexes] of asks) {
      const verdicts = await jobLists(db, jobId).verdicts(
        indexes.map((index) => lookup.outcomes[index]!.email),
      );
      for (const index of indexes) {
        const queue = queues[index]!;
        const job = queue.shift()!;
        const verdict = verdicts.get(lookup.outcomes[index]!.email);
        if (!verdict) continue;
        found.push({ index, ref: job.id, at: job.createdAt, ...verdict });
        queue.length = 0;
      }
    }
  }
}
