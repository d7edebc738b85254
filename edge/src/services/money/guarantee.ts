// The guarantee (docs/money.md, "The guarantee"): a `deliverable` verdict the account paid for
// that hard-bounces on a mailbox reason within the matching window is refunded one credit, once,
// when a sending service's signed webhook reports it — never the plain API, whose reports anyone
// holding a key could make up — and within a monthly cap relative to the account's charged
// verifications, so that what rcpt gives back stays a small part of what it was paid.

import type { Db } from '../../storage/db.ts';
import type { OutcomeRow } from '../../storage/outcomes.ts';
import { guaranteeAllowance, refundGuaranteed } from '../../storage/outcomes.ts';

/** The sources whose reports are signed by the sending service (services/outcomes/hooks.ts). */
const SIGNED_SOURCES: ReadonlySet<OutcomeRow['source']> = new Set(['ses', 'sendgrid', 'postmark', 'mailgun']);

/** At most one refund a month per this many charged verifications of the month (rounded down). */
export const VERIFICATIONS_PER_GUARANTEE_REFUND = 100;

/** Start of the UTC calendar month of `now`. */
export function utcMonthStart(now: number): number {
  const date = new Date(now);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** Whether an outcome just recorded claims the guarantee (before the ledger's own conditions). */
export function claimsGuarantee(row: OutcomeRow): boolean {
  return (
    SIGNED_SOURCES.has(row.source) &&
    row.outcome === 'hard_bounce' &&
    row.bounceKind === 'mailbox' &&
    row.verdictStatus === 'deliverable' &&
    row.verdictRef !== null
  );
}

/**
 * Refunds the guarantee's credits for the outcomes just recorded (`fresh`: each stored by this
 * request). Returns how many credits went back.
 */
export async function refundBouncedDeliverables(
  db: Db,
  fresh: readonly OutcomeRow[],
  now: number,
): Promise<number> {
  const monthStart = utcMonthStart(now);
  const claims = fresh.filter(claimsGuarantee).map((row) => {
    const ref = row.verdictRef as string;
    const single = row.verdictSource === 'single';
    return {
      accountId: row.accountId,
      reference: single ? ref : `${ref}:${row.email}`,
      charge: { reason: single ? ('verify' as const) : ('bulk_charge' as const), reference: ref },
      monthStart,
      verificationsPerRefund: VERIFICATIONS_PER_GUARANTEE_REFUND,
      now,
    };
  });
  if (claims.length === 0) return 0;
  // Every claim of a request is the same account's (the reporter's).
  const allowance = await guaranteeAllowance(db, {
    accountId: claims[0]?.accountId as string,
    monthStart,
    verificationsPerRefund: VERIFICATIONS_PER_GUARANTEE_REFUND,
  });
  // A claim the ledger refuses (refunded before, not charged) may leave room for one past this cut:
  // it is recorded, and refunded by a later event of it if the month still allows.
  return refundGuaranteed(db, claims.slice(0, allowance));
}
