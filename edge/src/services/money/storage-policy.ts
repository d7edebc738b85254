// What may be stored, by whom and for how long, beyond the quotas (docs/money.md, "Quotas and
// free work"): an account whose email is not confirmed stores only a small sandbox try, kept a
// day; rows that cost nothing are kept days, not the retention period.
import { ApiError } from '@rcpt/shared/errors';
import type { Config } from '../../config.ts';
import type { RetentionCutoffs } from '../../storage/retention.ts';
import { DAY_MS } from './quotas.ts';

/** The most rows of a list an account whose email is not confirmed may store: with a test key only. */
export const TRIAL_MAX_ROWS = 100;

/** Days an unconfirmed account's sandbox lists and history are kept. */
export const TRIAL_RETENTION_DAYS = 1;

/** Whether a list of `rows` may be stored for an account whose email is not confirmed. */
export function unconfirmedMayStore(mode: 'live' | 'test', rows: number): boolean {
  return mode === 'test' && rows <= TRIAL_MAX_ROWS;
}

/** 403 EMAIL_NOT_CONFIRMED for a list an unconfirmed account may not store. */
export function listNeedsConfirmedEmail(rows: number): ApiError {
  return new ApiError('EMAIL_NOT_CONFIRMED', {
    message:
      "Storing a list needs the account's email address confirmed: follow the link rcpt emailed, or have it " +
      `sent again from the dashboard. Until then a test key (rk_test_…) may try a list of at most ${TRIAL_MAX_ROWS} ` +
      `rows, kept ${TRIAL_RETENTION_DAYS} day; this one has ${rows.toLocaleString('en-US')}.`,
    details: { rows, maxTrialRows: TRIAL_MAX_ROWS },
  });
}

/** What the retention cron deletes at `now`, by age (docs/operations.md, "Quotas"). */
export function retentionCutoffsOf(config: Config, now: number): RetentionCutoffs {
  return {
    retention: now - config.RETENTION_DAYS * DAY_MS,
    sandbox: now - config.SANDBOX_RETENTION_DAYS * DAY_MS,
    trial: now - TRIAL_RETENTION_DAYS * DAY_MS,
    freeRows: now - config.FREE_ROWS_RETENTION_DAYS * DAY_MS,
  };
}
