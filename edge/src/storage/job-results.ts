// A batch job's answers in D1: each address's result as an upsert keyed by (job, address), the
// job's counters recomputed from its rows, so that a replayed write changes nothing, and its
// completion — refund, webhook event and history — once, in the transaction of its last answer.
import { dataModeSql } from './api-keys.ts';
import { type Db, prepare } from './db.ts';
import { jsonChunks } from './json-chunks.ts';
import { refundFinishedJob } from './ledger.ts';
import { startWatchStatements } from './watches.ts';

/** status, sub_status, catch_all, refundable, result_json: one address's result as stored. */
export function resultColumns(result: AddressResult): unknown[] {
  return [
    result.status,
    result.subStatus,
    result.catchAll === null ? null : result.catchAll ? 1 : 0,
    result.refundable ? 1 : 0,
    result.resultJson,
  ];
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
export function completionStatements(
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
    ...startWatchStatements(d1, jobId),
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
