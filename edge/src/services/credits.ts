import { ApiError } from '@rcpt/shared/errors';
import { debitCredits, readBalance } from '../storage/credits.ts';
import type { Db } from '../storage/db.ts';

/**
 * Charges `amount` credits atomically before any work is done; 402 INSUFFICIENT_CREDITS
 * (with what was required and what is available) when the balance does not cover it.
 */
export async function chargeCredits(
  db: Db,
  charge: {
    accountId: string;
    amount: number;
    reason: 'verify' | 'bulk_charge';
    reference: string;
    now: number;
  },
): Promise<number> {
  const balance = await debitCredits(db, charge);
  if (balance !== null) return balance;
  const available = (await readBalance(db, charge.accountId)) ?? 0;
  throw new ApiError('INSUFFICIENT_CREDITS', { details: { required: charge.amount, available } });
}
