// What the recovery cron finds of batch jobs: jobs past their deadline or their hard limit in
// D1, and in each job's lists the addresses whose lease ran out and those a deadline finishes.
import type { Db } from './db.ts';
import { jobLists, type UnfinishedAddress } from './job-lists/index.ts';

export type { UnfinishedAddress } from './job-lists/index.ts';

/** The addresses of a job that have no final answer yet. */
export function unfinishedAddresses(db: Db, jobId: string): Promise<UnfinishedAddress[]> {
  return jobLists(db, jobId).unfinished();
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
export function markRequeued(db: Db, jobId: string, idxs: readonly number[], now: number): Promise<void> {
  return jobLists(db, jobId).markRequeued(idxs, now);
}

export interface StaleAddress {
  jobId: string;
  idx: number;
  email: string;
  domain: string;
  attempts: number;
}

/**
 * Queued addresses of processing jobs whose lease ran out (a consumer or prober died), at most
 * `limit`: the processing jobs whose lists are in D1, oldest first, then each job's lists asked
 * for its own.
 */
export async function findStaleAddresses(
  db: Db,
  leaseExpiredBefore: number,
  limit: number,
): Promise<StaleAddress[]> {
  const { results: jobs } = await db.$client
    // A job in its object sweeps its own stale work on its clock (objects/job-store.ts).
    .prepare(`SELECT id FROM jobs WHERE status = 'processing' AND store = 'd1' ORDER BY created_at`)
    .all<{ id: string }>();
  const stale: StaleAddress[] = [];
  for (const { id } of jobs) {
    if (stale.length >= limit) break;
    for (const address of await jobLists(db, id).stale(leaseExpiredBefore, limit - stale.length)) {
      stale.push({ jobId: id, ...address });
    }
  }
  return stale;
}

/**
 * Processing jobs created before `createdBefore` whose rows never reached their lists (the
 * upload stopped between the charge and the rows): they cannot run, the rows were only in the
 * upload's memory.
 */
export async function findJobsWithoutRows(db: Db, createdBefore: number, limit: number): Promise<string[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT id FROM jobs WHERE rows_stored_at IS NULL AND created_at < ?1 AND status = 'processing' LIMIT ?2`,
    )
    .bind(createdBefore, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

export async function findOverdueJobs(db: Db, createdBefore: number, limit: number): Promise<string[]> {
  const { results } = await db.$client
    .prepare(`SELECT id FROM jobs WHERE status = 'processing' AND created_at < ?1 LIMIT ?2`)
    .bind(createdBefore, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}
