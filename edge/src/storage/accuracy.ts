// The counts behind the accuracy report (services/outcomes/accuracy.ts): the account's matched
// outcomes in a time range, grouped by the status rcpt gave and one more key, in one batch.
import type { Db } from './db.ts';

export type AccuracyGrouping = 'status' | 'provider' | 'subStatus' | 'week';

export interface AccuracyRow {
  status: string;
  /** The second key: provider, sub-status or week start (ms); null for `status`. */
  groupKey: string | number | null;
  matched: number;
  delivered: number;
  mailbox: number;
  policy: number;
  other: number;
  soft: number;
  complaints: number;
}

const DAY_MS = 86_400_000;

const KEYS: Record<AccuracyGrouping, string> = {
  status: 'NULL',
  provider: "COALESCE(verdict_provider, 'unknown')",
  subStatus: 'verdict_sub_status',
  // The UTC Monday of the outcome: 1970-01-01 was a Thursday, three days after a Monday.
  week: `((at / ${DAY_MS}) - (((at / ${DAY_MS}) + 3) % 7)) * ${DAY_MS}`,
};

/** Each grouping's rows, in the order asked. */
export async function accuracyRows(
  db: Db,
  accountId: string,
  range: { from: number; to: number },
  groupings: readonly AccuracyGrouping[],
): Promise<AccuracyRow[][]> {
  const d1 = db.$client;
  const results = await d1.batch<AccuracyRow>(
    groupings.map((grouping) =>
      d1
        .prepare(
          `SELECT verdict_status AS status, ${KEYS[grouping]} AS groupKey, COUNT(*) AS matched,
             SUM(outcome = 'delivered') AS delivered,
             SUM(outcome = 'hard_bounce' AND bounce_kind = 'mailbox') AS mailbox,
             SUM(outcome = 'hard_bounce' AND bounce_kind = 'policy') AS policy,
             SUM(outcome = 'hard_bounce' AND COALESCE(bounce_kind, 'other') = 'other') AS other,
             SUM(outcome = 'soft_bounce') AS soft,
             SUM(outcome = 'complaint') AS complaints
           FROM outcomes
           WHERE account_id = ?1 AND verdict_status IS NOT NULL AND at >= ?2 AND at < ?3
           GROUP BY verdict_status, groupKey
           ORDER BY groupKey, verdict_status`,
        )
        .bind(accountId, range.from, range.to),
    ),
  );
  return results.map((result) => result.results);
}

/** An outcome that says its verdict was wrong, for the list that shows each one. */
export interface WrongOutcome {
  email: string;
  outcome: string;
  at: number;
  diagnostic: string | null;
  verdictSource: 'single' | 'batch';
  verdictRef: string;
  verdictStatus: string;
  verdictSubStatus: string | null;
}

/**
 * The newest outcomes in the range that say their verdict was wrong: a mailbox-reason hard bounce
 * of a `deliverable` or `risky`, a delivery of an `undeliverable` (services/outcomes/accuracy.ts).
 */
export async function wrongOutcomes(
  db: Db,
  accountId: string,
  range: { from: number; to: number },
  limit: number,
): Promise<WrongOutcome[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT email, outcome, at, diagnostic, verdict_source AS verdictSource, verdict_ref AS verdictRef,
         verdict_status AS verdictStatus, verdict_sub_status AS verdictSubStatus
       FROM outcomes
       WHERE account_id = ?1 AND at >= ?2 AND at < ?3 AND (
         (verdict_status IN ('deliverable', 'risky') AND outcome = 'hard_bounce' AND bounce_kind = 'mailbox')
         OR (verdict_status = 'undeliverable' AND outcome = 'delivered'))
       ORDER BY at DESC LIMIT ?4`,
    )
    .bind(accountId, range.from, range.to, limit)
    .all<WrongOutcome>();
  return results;
}
