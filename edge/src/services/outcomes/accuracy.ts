// Accuracy a customer can see (docs/verdicts.md, "Accuracy"): of the verdicts the account's
// outcomes were matched to, by the status rcpt gave — how many of the `deliverable` and `risky`
// ones hard-bounced on a mailbox reason, how many of the `undeliverable` ones were delivered —
// overall, by provider, by sub-status and by week, with the counts behind each rate.
import type { AccuracyCounts, AccuracyResponse, VerificationStatus } from '@rcpt/shared/contract/api';
import { MAX_ACCURACY_DAYS } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { type AccuracyRow, accuracyRows, type WrongOutcome, wrongOutcomes } from '../../storage/accuracy.ts';
import type { Db } from '../../storage/db.ts';

const DAY_MS = 86_400_000;
/** The period when the caller names none: the last 30 days. */
const DEFAULT_DAYS = 30;
/** Providers listed, those with the most outcomes first. */
const PROVIDERS_SHOWN = 50;

/** The outcomes that say a verdict of `status` was wrong. */
function wrongOf(status: VerificationStatus, row: AccuracyRow): number | null {
  switch (status) {
    case 'deliverable':
    case 'risky':
      return row.mailbox;
    case 'undeliverable':
      return row.delivered;
    case 'unknown':
      return null;
  }
}

export function countsOf(status: VerificationStatus, row: AccuracyRow): AccuracyCounts {
  const wrong = wrongOf(status, row);
  return {
    matched: row.matched,
    delivered: row.delivered,
    mailboxBounces: row.mailbox,
    policyBounces: row.policy,
    otherBounces: row.other,
    softBounces: row.soft,
    complaints: row.complaints,
    wrong: wrong ?? 0,
    wrongRate: wrong === null || row.matched === 0 ? null : wrong / row.matched,
  };
}

function byStatusOf(rows: readonly AccuracyRow[]): Partial<Record<VerificationStatus, AccuracyCounts>> {
  const byStatus: Partial<Record<VerificationStatus, AccuracyCounts>> = {};
  for (const row of rows)
    byStatus[row.status as VerificationStatus] = countsOf(row.status as VerificationStatus, row);
  return byStatus;
}

function groupBy<K>(rows: readonly AccuracyRow[], key: (row: AccuracyRow) => K): Map<K, AccuracyRow[]> {
  const groups = new Map<K, AccuracyRow[]>();
  for (const row of rows) groups.set(key(row), [...(groups.get(key(row)) ?? []), row]);
  return groups;
}

/** The period asked, or a 400: `to` after `from`, at most MAX_ACCURACY_DAYS. */
export function accuracyRange(
  query: { from?: string; to?: string },
  now: number,
): { from: number; to: number } {
  const to = query.to ? Date.parse(query.to) : now;
  const from = query.from ? Date.parse(query.from) : to - DEFAULT_DAYS * DAY_MS;
  if (from >= to) throw new ApiError('VALIDATION_ERROR', { message: '`from` must be before `to`.' });
  if (to - from > MAX_ACCURACY_DAYS * DAY_MS) {
    throw new ApiError('VALIDATION_ERROR', {
      message: `An accuracy report covers at most ${MAX_ACCURACY_DAYS} days.`,
    });
  }
  return { from, to };
}

export async function accuracyOf(
  db: Db,
  accountId: string,
  range: { from: number; to: number },
): Promise<AccuracyResponse> {
  const [overall = [], providers = [], subStatuses = [], weeks = []] = await accuracyRows(
    db,
    accountId,
    range,
    ['status', 'provider', 'subStatus', 'week'],
  );
  const byProvider = [...groupBy(providers, (row) => String(row.groupKey))]
    .map(([provider, rows]) => ({ provider, rows, total: rows.reduce((sum, row) => sum + row.matched, 0) }))
    .sort((a, b) => b.total - a.total || a.provider.localeCompare(b.provider))
    .slice(0, PROVIDERS_SHOWN)
    .map(({ provider, rows }) => ({ provider, byStatus: byStatusOf(rows) }));
  return {
    success: true,
    from: new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    byStatus: byStatusOf(overall),
    byProvider,
    bySubStatus: subStatuses.map((row) => ({
      status: row.status as VerificationStatus,
      subStatus: String(row.groupKey) as AccuracyResponse['bySubStatus'][number]['subStatus'],
      counts: countsOf(row.status as VerificationStatus, row),
    })),
    byWeek: [...groupBy(weeks, (row) => Number(row.groupKey))]
      .sort(([a], [b]) => a - b)
      .map(([weekStart, rows]) => ({
        weekStart: new Date(weekStart).toISOString().slice(0, 10),
        byStatus: byStatusOf(rows),
      })),
  };
}

/** The newest outcomes in `range` that say their verdict was wrong, for the Accuracy page. */
export function wrongOutcomesOf(
  db: Db,
  accountId: string,
  range: { from: number; to: number },
  limit: number,
): Promise<WrongOutcome[]> {
  return wrongOutcomes(db, accountId, range, limit);
}
