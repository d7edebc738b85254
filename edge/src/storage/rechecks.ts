// Greylist follow-up (docs/architecture.md, "Greylist follow-up"): rounds that ask a completed
// job's recheckable answers again. A round is claimed once in D1 (conditional on the round
// number), then its addresses move from 'due' to 'asking' in the job's lists; each answer is
// recorded once (only while its address is 'asking'), and the round closes in the D1 transaction
// that applies the lists' report of its last answer — or at its end time by the recovery sweep —
// writing one `job.updated` event when it changed a verdict. An address refunded at completion
// that a round answers with a known verdict is charged first in D1, as far as the balance covers
// (docs/money.md, "Batch"), then recorded as paid in the lists; one the balance does not cover
// keeps its answer and is due again.

import { type Db, prepare } from './db.ts';
import {
  type JobStoreKind,
  jobLists,
  knowStore,
  type ListsReport,
  type RoundAnswerRow,
} from './job-lists/index.ts';
import { type AddressResult, countersStatement, currentReportSql } from './job-results.ts';
import { chargeRecheckedAddresses } from './ledger.ts';

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
  const claim = await db.$client
    .prepare(
      `UPDATE jobs SET recheck_round = recheck_round + 1, recheck_round_ends_at = ?3,
         recheck_due_at = CASE WHEN ?4 IS NULL THEN NULL ELSE completed_at + ?4 END
       WHERE id = ?1 AND status = 'completed' AND recheck = 1 AND recheck_round = ?2
         AND recheck_round_ends_at IS NULL AND recheck_due_at IS NOT NULL AND recheck_due_at <= ?5
       RETURNING account_id AS accountId`,
    )
    .bind(input.jobId, input.round, input.endsAt, input.nextAfterMs, input.now)
    .first<{ accountId: string }>();
  if (!claim) return null;
  // Then the lists: the due addresses are asked. A crash before this leaves the round with
  // nothing asked; it closes at its end time (closeExpiredRounds) with its addresses still due,
  // and the next round asks them.
  const addresses = await jobLists(db, input.jobId).claimDue();
  return { accountId: claim.accountId, round: input.round + 1, addresses };
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
 * credit each, lowest index first, as many as the balance covers: D1 charges them
 * (`chargeRecheckedAddresses`: ledger row, balance, the job's `credits_charged`, and each
 * charged address kept) and answers which are paid for, then the lists record those as paid
 * (refundable 0). A known answer the balance did not cover leaves the address as it was and due
 * for the next round. The lists' report then gives the job's counters, and the round closes
 * with its last answer. Returns the round if this call closed it.
 *
 * A crash after D1's charge and before the lists' record is healed when the answer is recorded
 * again — the queue's redelivery of the answers' message, or, if the round ended first (its close
 * made the address due), the next round's answer: D1 finds the address charged, charges nothing,
 * and answers it as paid, so the lists record it as paid. No credit is taken twice.
 */
export async function recordRecheckAnswers(
  db: Db,
  jobId: string,
  answers: readonly RecheckAnswer[],
  now: number,
): Promise<ClosedRound | null> {
  const d1 = db.$client;
  const lists = jobLists(db, jobId);
  const rows = answers.map(
    ({ idx, verdict, askAgain }): RoundAnswerRow => [
      idx,
      verdict?.status ?? null,
      verdict?.subStatus ?? null,
      verdict?.catchAll == null ? null : verdict.catchAll ? 1 : 0,
      verdict?.resultJson ?? null,
      askAgain ? 'due' : null,
    ],
  );
  const known = answers.filter((answer) => answer.verdict !== null).map((answer) => answer.idx);
  const candidates = known.length > 0 ? await lists.chargeable(known) : [];
  const charge =
    candidates.length > 0
      ? chargeRecheckedAddresses(jobId, candidates, now)
      : [{ sql: "SELECT recheck_round AS round, '[]' AS paid FROM jobs WHERE id = ?1", params: [jobId] }];
  const charged = (await d1.batch(charge.map((statement) => prepare(d1, statement)))).at(-1)?.results[0] as
    | { round: number | null; paid: string }
    | undefined;
  if (charged?.round == null) return null;
  const report = await lists.recordRound(rows, charged.round, JSON.parse(charged.paid) as number[]);
  const outcome = await d1.batch([
    countersStatement(d1, jobId, report, "status = 'completed'"),
    ...closeRoundStatements(d1, jobId, report, now),
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
      `SELECT id, recheck_round AS round FROM jobs
       WHERE status = 'completed' AND recheck_round_ends_at IS NOT NULL AND recheck_round_ends_at < ?1 LIMIT ?2`,
    )
    .bind(now, limit)
    .all<{ id: string; round: number }>();
  const withChanges: string[] = [];
  for (const { id, round } of results) {
    // The lists first, then D1 applies their report; a crash between leaves the round running
    // past its end, found again by the next sweep.
    const report = await jobLists(db, id).closeRound(round);
    const outcome = await d1.batch([
      countersStatement(d1, id, report, "status = 'completed'"),
      ...closeRoundStatements(d1, id, report, now),
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
  store: JobStoreKind;
}

/** The jobs among `jobIds` with a recheck round running. */
export async function recheckingJobs(db: Db, jobIds: readonly string[]): Promise<Map<string, RecheckingJob>> {
  const { results } = await db.$client
    .prepare(
      `SELECT id, account_id AS accountId, recheck_round AS round, recheck_round_ends_at AS roundEndsAt, evidence, store FROM jobs
       WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'completed' AND recheck_round_ends_at IS NOT NULL`,
    )
    .bind(JSON.stringify(jobIds))
    .all<RecheckingJob>();
  for (const row of results) knowStore(row.id, row.store);
  return new Map(results.map((row) => [row.id, row]));
}

/**
 * The close of a running round with nothing left to ask: the `job.updated` event when the
 * round changed a verdict (one per round: its id names the job and the round, and like the
 * completion event its payload is built at the first attempt), then the job's recheck fields.
 * The last statement returns the job only in the transaction that closed the round.
 */
function closeRoundStatements(
  d1: D1Database,
  jobId: string,
  report: ListsReport,
  now: number,
): D1PreparedStatement[] {
  // Closable: a round runs, the lists ask nothing more, and the report is the job's current one.
  const closable = (job: string) =>
    `${job}.recheck_round_ends_at IS NOT NULL AND ${report.asking} = 0 AND ${currentReportSql(job, report.seq)}`;
  const changes = String(report.changed);
  return [
    d1
      .prepare(
        `INSERT INTO webhook_deliveries (id, account_id, job_id, event_type, url, payload, state, next_attempt_at, created_at)
         SELECT 'msg_' || replace(j.id, '-', '') || '_updated_' || j.recheck_round, j.account_id, j.id, 'job.updated',
           COALESCE(j.webhook_url, a.webhook_url), '', 'pending', ?2, ?2
         FROM jobs j JOIN accounts a ON a.id = j.account_id
         WHERE j.id = ?1 AND ${closable('j')} AND ${changes} > 0
           AND COALESCE(j.webhook_url, a.webhook_url) IS NOT NULL AND a.webhook_secret IS NOT NULL
         ON CONFLICT (id) DO NOTHING`,
      )
      .bind(jobId, now),
    d1
      .prepare(
        `UPDATE jobs SET recheck_round_ends_at = NULL,
           recheck_changes = CASE WHEN ${changes} > 0 THEN ${changes} ELSE recheck_changes END,
           rechecked_at = CASE WHEN ${changes} > 0 THEN ?2 ELSE rechecked_at END,
           recheck_due_at = CASE WHEN ?3 = 1 THEN recheck_due_at END
         WHERE id = ?1 AND ${closable('jobs')}
         RETURNING recheck_changes AS changes, rechecked_at = ?2 AS changedNow`,
      )
      .bind(jobId, now, report.due ? 1 : 0),
  ];
}

function closedRoundOf(outcome: D1Result[]): ClosedRound | null {
  const row = outcome.at(-1)?.results[0] as { changes: number; changedNow: number } | undefined;
  if (!row) return null;
  return { changes: row.changedNow === 1 ? row.changes : 0 };
}
