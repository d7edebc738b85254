// How long an account's verdict for an address is answered again instead of verifying anew
// (docs/verdicts.md, "Cached answers"): the policy table's `remembered` column turned into time.
// A mailbox that answered keeps its answer for a day, which is what makes repeated calls agree;
// an `unknown` from the mail server is kept only long enough to absorb a burst of retries, a
// greylisting deferral until the server's retry point, and rcpt's own failure not at all.
import {
  SUB_STATUS_TABLE,
  type SubStatus,
  type SubStatusRow,
  UNKNOWN_VERDICT_LIFETIME_MS,
  VERDICT_LIFETIME_MS,
} from './sub-statuses.ts';

export { UNKNOWN_VERDICT_LIFETIME_MS, VERDICT_LIFETIME_MS };

/**
 * How long `result` is answered again, from when it was reached; 0: it is not kept. A
 * greylisting answer without a named delay (none is kept without one) lasts as an `unknown`.
 */
export function verdictLifetimeMs(result: {
  subStatus: SubStatus;
  retryAfterSeconds?: number | undefined;
}): number {
  const row: SubStatusRow = SUB_STATUS_TABLE[result.subStatus];
  switch (row.remembered) {
    case 'day':
      return VERDICT_LIFETIME_MS;
    case 'minutes':
      return UNKNOWN_VERDICT_LIFETIME_MS;
    case 'until_retry':
      return result.retryAfterSeconds === undefined
        ? UNKNOWN_VERDICT_LIFETIME_MS
        : Math.min(result.retryAfterSeconds * 1000, UNKNOWN_VERDICT_LIFETIME_MS);
    case 'never':
      return 0;
  }
}
