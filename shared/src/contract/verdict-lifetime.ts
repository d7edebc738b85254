// How long an account's verdict for an address is answered again instead of verifying anew
// (docs/verdicts.md, "Cached answers"). A mailbox that answered keeps its answer for a day,
// which is what makes repeated calls agree; `unknown` means rcpt could not tell, and the next
// attempt may well tell, so it is kept only long enough to absorb a burst of retries.
import type { VerificationStatus } from './api.ts';

export const VERDICT_LIFETIME_MS = 24 * 60 * 60_000;
export const UNKNOWN_VERDICT_LIFETIME_MS = 10 * 60_000;

export function verdictLifetimeMs(status: VerificationStatus): number {
  return status === 'unknown' ? UNKNOWN_VERDICT_LIFETIME_MS : VERDICT_LIFETIME_MS;
}
