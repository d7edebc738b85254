// What the recovery cron finds of batch jobs in D1: jobs past their deadline or their hard
// limit, addresses whose lease ran out, and the addresses a deadline finishes.
import type { Db } from './db.ts';

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
