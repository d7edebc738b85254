import { ApiError } from '@rcpt/shared/errors';
import { debitCredits, readBalance } from '../storage/credits.ts';
import type { Db } from '../storage/db.ts';

/**
 * Charges `amount` credits atomically before any work is done; 402 INSUFFICIENT_CREDITS
 * when the balance does not cover it.
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
  throw await insufficientCredits(db, charge.accountId, charge.amount);
}

/** 402 INSUFFICIENT_CREDITS with what was required and what the account has now. */
export async function insufficientCredits(db: Db, accountId: string, required: number): Promise<ApiError> {
  const available = (await readBalance(db, accountId)) ?? 0;
  return new ApiError('INSUFFICIENT_CREDITS', { details: { required, available } });
}
