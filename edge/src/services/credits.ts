import { ApiError } from '@rcpt/shared/errors';
import { readBalance } from '../storage/credits.ts';
import type { Db } from '../storage/db.ts';

/** 402 INSUFFICIENT_CREDITS with what was required and what the account has now. */
export async function insufficientCredits(db: Db, accountId: string, required: number): Promise<ApiError> {
  const available = (await readBalance(db, accountId)) ?? 0;
  return new ApiError('INSUFFICIENT_CREDITS', { details: { required, available } });
}
