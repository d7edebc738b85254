// The overview page's figures: balance, the last 30 days of use day by day (UTC), and the
// verdict mix of those days.
import { readBalance } from '../../storage/accounts.ts';
import { dailyUsage, type VerdictMix, verdictMix } from '../../storage/dashboard-usage.ts';
import type { Db } from '../../storage/db.ts';

export const OVERVIEW_DAYS = 30;
const DAY_MS = 86_400_000;

export interface UsageDay {
  /** YYYY-MM-DD (UTC). */
  date: string;
  singles: number;
  batchAddresses: number;
}

export interface AccountOverview {
  creditBalance: number;
  days: UsageDay[];
  mix: VerdictMix;
}

export async function accountOverview(db: Db, accountId: string, now: number): Promise<AccountOverview> {
  const today = Math.floor(now / DAY_MS);
  const firstDay = today - OVERVIEW_DAYS + 1;
  const since = firstDay * DAY_MS;
  const [creditBalance, usage, mix] = await Promise.all([
    readBalance(db, accountId),
    dailyUsage(db, accountId, since),
    verdictMix(db, accountId, since),
  ]);
  const byDay = new Map(usage.map((row) => [row.day, row]));
  const days = Array.from({ length: OVERVIEW_DAYS }, (_, offset) => {
    const day = firstDay + offset;
    const row = byDay.get(day);
    return {
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      singles: row?.singles ?? 0,
      batchAddresses: row?.batchAddresses ?? 0,
    };
  });
  return { creditBalance: creditBalance ?? 0, days, mix };
}
