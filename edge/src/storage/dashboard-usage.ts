// Usage figures for the dashboard overview: verifications per UTC day and the verdict mix,
// single verifications from `verifications`, batch addresses from the jobs' counters.
import type { Db } from './db.ts';

const DAY_MS = 86_400_000;

export interface DailyUsageRow {
  /** Days since the epoch (UTC). */
  day: number;
  singles: number;
  batchAddresses: number;
}

export interface VerdictMix {
  deliverable: number;
  undeliverable: number;
  risky: number;
  unknown: number;
}

/** Per-day counts since `since` (only days with activity; the caller fills the gaps). */
export async function dailyUsage(db: Db, accountId: string, since: number): Promise<DailyUsageRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT day, SUM(singles) AS singles, SUM(batchAddresses) AS batchAddresses FROM (
         SELECT created_at / ${DAY_MS} AS day, COUNT(*) AS singles, 0 AS batchAddresses FROM verifications
         WHERE account_id = ?1 AND kind = 'single' AND created_at >= ?2 GROUP BY day
         UNION ALL
         SELECT created_at / ${DAY_MS} AS day, 0 AS singles, SUM(total_emails) AS batchAddresses FROM jobs
         WHERE account_id = ?1 AND created_at >= ?2 GROUP BY day
       ) GROUP BY day ORDER BY day`,
    )
    .bind(accountId, since)
    .all<DailyUsageRow>();
  return results;
}

/** Verdicts since `since`: single verifications by status plus the verified addresses of batch jobs. */
export async function verdictMix(db: Db, accountId: string, since: number): Promise<VerdictMix> {
  const d1 = db.$client;
  const [singles, batches] = await d1.batch<VerdictMix>([
    d1
      .prepare(
        `SELECT COALESCE(SUM(status = 'deliverable'), 0) AS deliverable, COALESCE(SUM(status = 'undeliverable'), 0) AS undeliverable,
           COALESCE(SUM(status = 'risky'), 0) AS risky, COALESCE(SUM(status = 'unknown'), 0) AS unknown
         FROM verifications WHERE account_id = ?1 AND kind = 'single' AND created_at >= ?2`,
      )
      .bind(accountId, since),
    d1
      .prepare(
        `SELECT COALESCE(SUM(deliverable_count), 0) AS deliverable, COALESCE(SUM(undeliverable_count), 0) AS undeliverable,
           COALESCE(SUM(risky_count), 0) AS risky, COALESCE(SUM(unknown_count), 0) AS unknown
         FROM jobs WHERE account_id = ?1 AND created_at >= ?2`,
      )
      .bind(accountId, since),
  ]);
  const single = singles?.results[0];
  const batch = batches?.results[0];
  return {
    deliverable: (single?.deliverable ?? 0) + (batch?.deliverable ?? 0),
    undeliverable: (single?.undeliverable ?? 0) + (batch?.undeliverable ?? 0),
    risky: (single?.risky ?? 0) + (batch?.risky ?? 0),
    unknown: (single?.unknown ?? 0) + (batch?.unknown ?? 0),
  };
}
