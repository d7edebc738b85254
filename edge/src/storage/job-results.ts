// A batch job's answers: each address's result recorded once in the job's lists
// (storage/job-lists/), which report the job's counters with a write sequence number; then one D1
// transaction applies them to the job row if that number is higher than the one it holds, and —
// in the same transaction — completes the job once: refund, webhook event and history
// (docs/architecture.md, "Where a job's lists live"). A crash between the two steps is healed by
// the next report: a replayed write changes nothing in the lists and reports again.
import { dataModeSql } from './api-keys.ts';
import { type Db, prepare } from './db.ts';
import { type JobLists, jobLists, type ListAnswer, type ListsReport } from './job-lists/index.ts';
import { jsonChunks } from './json-chunks.ts';
import { refundFinishedJob } from './ledger.ts';
import { startWatchStatements } from './watches.ts';

export interface AddressResult extends ListAnswer {
  /** A final answer a job with `recheck` asks again later (isRecheckable in the policy table). */
  recheckable?: boolean;
}

/**
 * Records final results (each address once: a replay changes nothing) in the job's lists, then
 * applies their report: the job's counters and — once every address is done — its completion
 * and refund. Returns whether this call completed it, and when its first recheck round is due
 * (a job with `recheck` and recheckable answers).
 */
export async function recordResults(
  db: Db,
  jobId: string,
  results: readonly AddressResult[],
  now: number,
  firstRecheckAfterMs: number | null = null,
  /** The job's `recheck`, when the caller read it with the job's row; else it is read here. */
  jobRechecks?: boolean,
): Promise<{ completed: boolean; recheckDueAt: number | null }> {
  // Whether recheckable answers are asked again is the job's: read only when there are some and
  // the caller does not know it (a round trip before the write).
  const recheck =
    results.some((result) => result.recheckable) &&
    (jobRechecks ??
      (await db.$client
        .prepare('SELECT recheck FROM jobs WHERE id = ?1')
        .bind(jobId)
        .first<number>('recheck')) === 1);
  const report = await jobLists(db, jobId).recordFinal(results, recheck);
  return applyReport(db, jobId, report, now, firstRecheckAfterMs);
}

/**
 * The D1 step of a lists write: the report's counters if its sequence number is higher than the
 * job's, then the once-only completion. Returns whether this call completed the job. `lists`:
 * the job's lists where the caller has them (the job's own object, on its clock).
 */
export async function applyReport(
  db: Db,
  jobId: string,
  report: ListsReport,
  now: number,
  firstRecheckAfterMs: number | null,
  lists: JobLists = jobLists(db, jobId),
): Promise<{ completed: boolean; recheckDueAt: number | null }> {
  const d1 = db.$client;
  // The watch's domains, read from the lists only when the job may complete now.
  const domains = report.pending === 0 ? await lists.domains() : [];
  const outcome = await d1.batch<{ id: string; recheckDueAt: number | null }>(
    completionStatements(d1, jobId, report, now, firstRecheckAfterMs, domains),
  );
  const finalized = outcome.at(-1)?.results[0];
  return { completed: finalized !== undefined, recheckDueAt: finalized?.recheckDueAt ?? null };
}

/**
 * The report's counters on the job row, only if `report.seq` is higher than the one it holds and
 * `condition` holds; statements after it that test `lists_seq = <seq>` (`currentReportSql`) run
 * only for the report that was applied, so a late report changes nothing.
 */
export function countersStatement(
  d1: D1Database,
  jobId: string,
  report: ListsReport,
  condition: string,
): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE jobs SET processed_emails = ?3, deliverable_count = ?4, undeliverable_count = ?5, risky_count = ?6,
         unknown_count = ?7, catch_all_count = ?8, refundable_count = ?9, lists_seq = ?2
       WHERE id = ?1 AND lists_seq < ?2 AND ${condition}`,
    )
    .bind(
      jobId,
      report.seq,
      report.processed,
      report.deliverable,
      report.undeliverable,
      report.risky,
      report.unknown,
      report.catchAll,
      report.refundable,
    );
}

/** SQL: the job row `row` holds the counters of the report numbered `seq` (the one just applied). */
export function currentReportSql(row: string, seq: number): string {
  if (!Number.isSafeInteger(seq)) throw new Error(`a lists report's seq is an integer, not ${seq}`);
  return `${row}.lists_seq = ${seq}`;
}

/**
 * Counters from the report, then the once-only completion: status, the first recheck round's
 * time (a job with `recheck` and answers to ask again), the watch's start over `domains`, refund
 * ledger row, balance and the `finalized` flag, all conditional on the flag so a replay does
 * nothing. The last statement returns the job id only in the transaction that finalized it.
 */
export function completionStatements(
  d1: D1Database,
  jobId: string,
  report: ListsReport,
  now: number,
  firstRecheckAfterMs: number | null,
  domains: readonly string[],
): D1PreparedStatement[] {
  const current = currentReportSql('jobs', report.seq);
  return [
    countersStatement(d1, jobId, report, 'finalized = 0'),
    d1
      .prepare(
        `UPDATE jobs SET status = 'completed', completed_at = ?2, credits_refunded = refundable_count
         WHERE id = ?1 AND status = 'processing' AND finalized = 0 AND processed_emails >= total_emails AND ${current}`,
      )
      .bind(jobId, now),
    d1
      .prepare(
        `UPDATE jobs SET recheck_due_at = completed_at + ?2
         WHERE id = ?1 AND ?2 IS NOT NULL AND recheck = 1 AND status = 'completed' AND finalized = 0
           AND ?3 = 1 AND ${current}`,
      )
      .bind(jobId, firstRecheckAfterMs, report.due ? 1 : 0),
    ...startWatchStatements(d1, jobId, jsonChunks(domains)),
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
 * ones, once, counted from the lists' latest report — or, for a job whose lists could not be
 * written (`lists: 'unread'`), everything it was charged. Returns true if this call failed it.
 */
export async function failJob(
  db: Db,
  jobId: string,
  reason: string,
  now: number,
  lists: 'read' | 'unread' = 'read',
): Promise<boolean> {
  const d1 = db.$client;
  const report = lists === 'read' ? await jobLists(db, jobId).report() : null;
  const refunded = report ? 'refundable_count + (total_emails - processed_emails)' : 'credits_charged';
  const outcome = await d1.batch<{ id: string }>([
    ...(report ? [countersStatement(d1, jobId, report, 'finalized = 0')] : []),
    d1
      .prepare(
        `UPDATE jobs SET status = 'failed', failure_reason = ?2, completed_at = ?3, credits_refunded = ${refunded}
         WHERE id = ?1 AND status = 'processing' AND finalized = 0`,
      )
      .bind(jobId, reason, now),
    ...finalizeStatements(d1, jobId, now),
  ]);
  return (outcome.at(-1)?.results.length ?? 0) > 0;
}

/** Fails, with everything it was charged refunded, a job whose rows never reached its lists. */
export function failJobWithoutRows(db: Db, jobId: string, now: number): Promise<boolean> {
  return failJob(db, jobId, "The job's rows could not be stored.", now, 'unread');
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
  await jobLists(db, jobId).recordProvisional(results, now);
}
