// The statement that changes an account's settings, built here once for the storage module that
// runs it on D1 (PUT /api/v1/account/settings, the dashboard) and for the operator's scripts
// (`npm run admin -- shared-fleet on|off`), which inline it for wrangler: every way of changing a
// setting writes it alike. Like inserts.ts, this file uses no Workers types.
import type { SqlStatement } from './ledger.ts';

/** Settings to change; one left out keeps its value. */
export interface AccountSettingsChange {
  recheck?: boolean | undefined;
  watch?: boolean | undefined;
  /**
   * Whether the shared fleet probes for the account when none of its own probers can
   * (docs/operations.md, "Customer-run probers").
   */
  sharedFleetFallback?: boolean | undefined;
}

/** The settings as the statement returns them (SQLite booleans). */
export interface StoredAccountSettings {
  recheck: number;
  watch: number;
  sharedFleetFallback: number;
}

/** Changes the settings given and returns them all (no row: no such account). */
export function accountSettingsUpdate(accountId: string, changes: AccountSettingsChange): SqlStatement {
  const flag = (value: boolean | undefined) => (value === undefined ? null : value ? 1 : 0);
  return {
    sql: `UPDATE accounts SET recheck_default = COALESCE(?2, recheck_default),
            watch_default = COALESCE(?3, watch_default),
            shared_fleet_fallback = COALESCE(?4, shared_fleet_fallback)
          WHERE id = ?1
          RETURNING recheck_default AS recheck, watch_default AS watch, shared_fleet_fallback AS sharedFleetFallback`,
    params: [accountId, flag(changes.recheck), flag(changes.watch), flag(changes.sharedFleetFallback)],
  };
}

/**
 * The hashes of the account's live API keys. Each key's record carries the account's
 * `sharedFleetFallback` and is kept by the edge's KeyLimiter object for a few minutes, so a change
 * of the settings has those records forgotten, read again on the next request.
 */
export function liveKeyHashesSelect(accountId: string): SqlStatement {
  return {
    sql: 'SELECT key_hash AS keyHash FROM api_keys WHERE account_id = ?1 AND revoked_at IS NULL',
    params: [accountId],
  };
}

/** The stored settings as the API says them. */
export function accountSettingsOf(row: StoredAccountSettings): {
  recheck: boolean;
  watch: boolean;
  sharedFleetFallback: boolean;
} {
  return {
    recheck: row.recheck === 1,
    watch: row.watch === 1,
    sharedFleetFallback: row.sharedFleetFallback === 1,
  };
}
