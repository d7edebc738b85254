// Rows an account stores free of charge, counted against its daily quota (docs/operations.md,
// "Quotas"): the rows of jobs that charged nothing (sandbox jobs, lists with no valid address)
// and test-key single verifications (one history row each).
import { dataModeSql } from './api-keys.ts';

/** SQL for the free rows of the account `account` created since `since` (both SQL parameters, e.g. `?2`). */
export function freeRowsSinceSql(account: string, since: string): string {
  return `((SELECT COALESCE(SUM(total_rows), 0) FROM jobs
      WHERE account_id = ${account} AND credits_charged = 0 AND created_at >= ${since})
    + (SELECT COUNT(*) FROM verifications
      WHERE account_id = ${account} AND kind = 'single' AND created_at >= ${since} AND ${dataModeSql('test')}))`;
}
