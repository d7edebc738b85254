// Greylist follow-up in D1 (docs/architecture.md, "Greylist follow-up"): rounds that ask a
// completed job's recheckable answers again. A round is claimed once (conditional on the round
// number), its addresses move from 'due' to 'asking', each answer is recorded once (only while
// its address is 'asking'), and the round closes in the transaction that records its last
// answer — or at its end time by the recovery sweep — writing one `job.updated` event when it
// changed a verdict. An address refunded at completion that a round answers with a known verdict
// is charged then, in the transaction that records it, as far as the balance covers
// (docs/money.md, "Batch"); one the balance does not cover keeps its answer and is due again.

import { type Db, prepare } from './db.ts';
import { type AddressResult, countersStatement } from './job-results.ts';
import { chargeRecheckedAddresses, freeCreditsSql } from './ledger.ts';

export interface RecheckAddress {
  idx: number;
  email: string;
  domain: string;
}

export interface StartedRound {
  accountId: string;
  /** The round's number (1 for the first). */
  round: number;
  addresses: RecheckAddress[];
}

/**
 * Starts round `round + 1` of the job if it is due, not started yet and no round is running:
 * its recheckable addresses become 'asking' until `endsAt`. The next round is set to start
 * `nextAfterMs` after the job completed (null: this is the last). Null when not started here.
 */
export async function claimRecheckRound(
  db: Db,
  input: { jobId: string; round: number; now: number; endsAt: number; nextAfterMs: number | null },
): Promise<StartedRound | null> {
  const d1 = db.$client;
  // Rows of this claim only: the round number and end time it wrote.
  const claimed =
    'EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND recheck_round = ?2 + 1 AND recheck_round_ends_at = ?3)';
  const [claim, , asking] = await d1.batch([
    d1
      .prepare(
        `UPDATE jobs SET recheck_round = recheck_round + 1, recheck_round_ends_at = ?3,
           recheck_due_at = CASE WHEN ?4 IS NULL THEN NULL ELSE completed_at + ?4 END
         WHERE id = ?1 AND status = 'completed' AND recheck = 1 AND recheck_round = ?2
           AND recheck_round_ends_at IS NULL AND recheck_due_at IS NOT NULL AND recheck_due_at <= ?5
         RETURNING account_id AS accountId`,
      )
      .bind(input.jobId, input.round, input.endsAt, input.nextAfterMs, input.now),
    d1
      .prepare(
        `UPDATE job_addresses SET recheck = 'asking' WHERE job_id = ?1 AND recheck = 'due' AND ${claimed}`,
      )
      .bind(input.jobId, input.round, input.endsAt),
    d1
      .prepare(
        `SELECT idx, email, domain FROM job_addresses WHERE job_id = ?1 AND recheck = 'asking' AND ${claimed} ORDER BY idx`,
      )
      .bind(input.jobId, input.round, input.endsAt),
  ]);
  const accountId = (claim?.results[0] as { accountId: string } | undefined)?.accountId;
  if (accountId === undefined) return null;
  return { accountId, round: input.round + 1, addresses: (asking?.results ?? []) as RecheckAddress[] };
}

/** A recheck's answer about one address of the running round. */
export interface RecheckAnswer {
  idx: number;
  /** The new verdict, or null to keep the one the address has. */
  verdict: AddressResult | null;
  /** Ask again in the next round (the answer was temporary again). */
  askAgain: boolean;
}

export interface ClosedRound {
  /** Verdicts the round changed; 0 when it changed none (no event then). */
  changes: number;
}

/**
 * Records a round's answers (once each: only while the address is 'asking'). A new verdict
 * replaces the address's; one for an address the completion refunded is charged first, one
 * credit each, lowest index first, as many as the balance covers — those are marked
 * `charging`, charged (`chargeRecheckedAddresses`), added to the job's `credits_charged` and
 * recorded as paid (refundable 0). A known answer the balance did not
 * cover leaves the address as it was and due for the next round. The job's counters follow,
 * and the round closes with its last answer. Returns the round if this call closed it.
 */
export async function recordRecheckAnswers(
  db: Db,
  jobId: string,
  answers: readonly RecheckAnswer[],
  now: number,
): Promise<ClosedRound | null> {
  const d1 = db.$client;
  const rows = JSON.stringify(
    answers.map(({ idx, verdict, askAgain }) => [
      idx,
      verdict?.status ?? null,
      verdict?.subStatus ?? null,
      verdict?.catchAll == null ? null : verdict.catchAll ? 1 : 0,
      verdict?.resultJson ?? null,
      askAgain ? 'due' : null,
    ]),
  );
  // SET expressions read the row as it was before the update (SQLite, "UPDATE"), so the
  // change test compares the old verdict with the new one.
  // A known answer replaces the verdict of an address that is paid for: never refunded, or
  // charged in this batch.
  const known = 'excluded.result_json IS NOT NULL';
  const replaces = `${known} AND (job_addresses.refundable = 0 OR job_addresses.recheck = 'charging')`;
  const changed = `${replaces} AND (excluded.status IS NOT job_addresses.status OR excluded.sub_status IS NOT job_addresses.sub_status)`;
  const replaced = (column: string) =>
    `${column} = CASE WHEN ${replaces} THEN excluded.${column} ELSE job_addresses.${column} END`;
  const charge = chargeRecheckedAddresses(jobId, now);
  const charging = "(SELECT COUNT(*) FROM job_addresses WHERE job_id = ?1 AND recheck = 'charging')";
  const outcome = await d1.batch([
    // Refunded addresses answered with a known verdict, lowest index first, as many as the
    // balance covers (the balance is still the one before the charge).
    d1
      .prepare(
        `UPDATE job_addresses SET recheck = 'charging'
         WHERE job_id = ?1 AND idx IN (
           SELECT a.idx FROM job_addresses a JOIN json_each(?2) j ON a.idx = j.value->>0
           WHERE a.job_id = ?1 AND a.recheck = 'asking' AND a.refundable = 1 AND j.value->>4 IS NOT NULL
           ORDER BY a.idx
           LIMIT (SELECT ${freeCreditsSql('a')} FROM accounts a JOIN jobs j ON j.account_id = a.id WHERE j.id = ?1))`,
      )
      .bind(jobId, rows),
    prepare(d1, charge.entry),
    d1
      .prepare(
        `UPDATE jobs SET credits_charged = credits_charged + ${charging}
         WHERE id = ?1 AND ${charging} > 0
           AND (SELECT ${freeCreditsSql()} FROM accounts WHERE id = jobs.account_id) >= ${charging}`,
      )
      .bind(jobId),
    prepare(d1, charge.balance),
    d1
      .prepare(
        `INSERT INTO job_addresses (job_id, idx, email, domain, state, enqueued_at, status, sub_status, catch_all, result_json, recheck)
         SELECT ?1, j.value->>0, '', '', 'done', 0, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5
         FROM json_each(?2) j WHERE true
         ON CONFLICT (job_id, idx) DO UPDATE SET ${replaced('status')}, ${replaced('sub_status')},
           ${replaced('catch_all')}, ${replaced('result_json')},
           changed_in_round = CASE WHEN ${changed} THEN (SELECT recheck_round FROM jobs WHERE id = ?1)
             ELSE job_addresses.changed_in_round END,
           refundable = CASE WHEN job_addresses.recheck = 'charging' THEN 0 ELSE job_addresses.refundable END,
           -- a known answer the balance did not cover: asked again next round
           recheck = CASE WHEN ${known} AND NOT (${replaces}) THEN 'due' ELSE excluded.recheck END
         WHERE job_addresses.recheck IN ('asking', 'charging')`,
      )
      .bind(jobId, rows),
    countersStatement(d1, jobId, "status = 'completed'"),
    ...closeRoundStatements(d1, jobId, now),
  ]);
  return closedRoundOf(outcome);
}

/**
 * Closes rounds that ran out of time (a probe lost with a hub or a prober): what they still
 * ask becomes due for the next round. Returns the jobs whose round closed with changes.
 */
export async function closeExpiredRounds(db: Db, now: number, limit: number): Promise<string[]> {
  const d1 = db.$client;
  const { results } = await d1
    .prepare(
      `SELECT id FROM jobs WHERE status = 'completed' AND recheck_round_ends_at IS NOT NULL AND recheck_round_ends_at < ?1 LIMIT ?2`,
    )
    .bind(now, limit)
    .all<{ id: string }>();
  const withChanges: string[] = [];
  for (const { id } of results) {
    const outcome = await d1.batch([
      d1
        .prepare(
          `UPDATE job_addresses SET recheck = 'due' WHERE job_id = ?1 AND recheck = 'asking'
             AND EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND recheck_round_ends_at < ?2)`,
        )
        .bind(id, now),
      ...closeRoundStatements(d1, id, now),
    ]);
    if ((closedRoundOf(outcome)?.changes ?? 0) > 0) withChanges.push(id);
  }
  return withChanges;
}

/** Completed jobs whose next round was due before `before` and has not started (its message was lost). */
export async function findDueRechecks(
  db: Db,
  before: number,
  limit: number,
): Promise<{ id: string; round: number; dueAt: number }[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT id, recheck_round AS round, recheck_due_at AS dueAt FROM jobs
       WHERE recheck_due_at IS NOT NULL AND recheck_due_at < ?1 AND recheck_round_ends_at IS NULL AND status = 'completed'
       LIMIT ?2`,
    )
    .bind(before, limit)
    .all<{ id: string; round: number; dueAt: number }>();
  return results;
}

export interface RecheckingJob {
  id: string;
  accountId: string;
  /** The running round's number. */
  round: number;
  /** When the running round ends: its probes' deadline. */
  roundEndsAt: number;
  /** 1: the job keeps the evidence behind each answer. */
  evidence: number;
}

/** The jobs among `jobIds` with a recheck round running. */
export async function recheckingJobs(db: Db, jobIds: readonly string[]): Promise<Map<string, RecheckingJob>> {
  const { results } = await db.$client
    .prepare(
      `SELECT id, account_id AS accountId, recheck_round AS round, recheck_round_ends_at AS roundEndsAt, evidence FROM jobs
       WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'completed' AND recheck_round_ends_at IS NOT NULL`,
    )
    .bind(JSON.stringify(jobIds))
    .all<RecheckingJob>();
  return new Map(results.map((row) => [row.id, row]));
}

/**
 * The close of a running round with nothing left to ask: the `job.updated` event when the
 * round changed a verdict (one per round: its id names the job and the round, and like the
 * completion event its payload is built at the first attempt), then the job's recheck fields.
 * The last statement returns the job only in the transaction that closed the round.
 */
function closeRoundStatements(d1: D1Database, jobId: string, now: number): D1PreparedStatement[] {
  const closable = (job: string) => `${job}.recheck_round_ends_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM job_addresses WHERE job_id = ?1 AND recheck = 'asking')`;
  const changes = (job: string) =>
    `(SELECT COUNT(*) FROM job_addresses WHERE job_id = ?1 AND changed_in_round = ${job}.recheck_round)`;
  return [
    d1
      .prepare(
        `INSERT INTO webhook_deliveries (id, account_id, job_id, event_type, url, payload, state, next_attempt_at, created_at)
         SELECT 'msg_' || replace(j.id, '-', '') || '_updated_' || j.recheck_round, j.account_id, j.id, 'job.updated',
           COALESCE(j.webhook_url, a.webhook_url), '', 'pending', ?2, ?2
         FROM jobs j JOIN accounts a ON a.id = j.account_id
         WHERE j.id = ?1 AND ${closable('j')} AND ${changes('j')} > 0
           AND COALESCE(j.webhook_url, a.webhook_url) IS NOT NULL AND a.webhook_secret IS NOT NULL
         ON CONFLICT (id) DO NOTHING`,
      )
      .bind(jobId, now),
    d1
      .prepare(
        `UPDATE jobs SET recheck_round_ends_at = NULL,
           recheck_changes = CASE WHEN ${changes('jobs')} > 0 THEN ${changes('jobs')} ELSE recheck_changes END,
           rechecked_at = CASE WHEN ${changes('jobs')} > 0 THEN ?2 ELSE rechecked_at END,
           recheck_due_at = CASE WHEN EXISTS (SELECT 1 FROM job_addresses WHERE job_id = ?1 AND recheck = 'due')
             THEN recheck_due_at END
         WHERE id = ?1 AND ${closable('jobs')}
         RETURNING recheck_changes AS changes, rechecked_at = ?2 AS changedNow`,
      )
      .bind(jobId, now),
  ];
}

function closedRoundOf(outcome: D1Result[]): ClosedRound | null {
  const row = outcome.at(-1)?.results[0] as { changes: number; changedNow: number } | undefined;
  if (!row) return null;
  return { changes: row.changedNow === 1 ? row.changes : 0 };
}
