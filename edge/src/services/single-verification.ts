// A single verification for an API caller: charge (live keys), verify, record in history.
// Every charged request ends in exactly one of its result or its refund (docs/money.md):
// the charge opens the history row in the same transaction, the answer closes it, and any
// failure in between refunds it — here, or in the recovery sweep if the refund fails too.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { type VerifyDeps, verifyAddress } from '@rcpt/shared/verify/verify-address';
import type { Caller } from '../app-env.ts';
import { errorFields, log } from '../logger.ts';
import type { Db } from '../storage/db.ts';
import {
  answerVerification,
  insertVerification,
  openChargedVerification,
  refundVerification,
} from '../storage/history.ts';
import { insufficientCredits } from './credits.ts';
import { sandboxVerify } from './sandbox.ts';

/** docs/money.md: one credit whatever the answer, taken before any work is done. */
const SINGLE_VERIFICATION_CREDITS = 1;

export interface SingleVerification {
  result: VerificationResult;
  creditsRemaining: number;
}

export async function verifyForCaller(input: {
  db: Db;
  deps: VerifyDeps;
  caller: Caller;
  email: string;
  requestId: string;
  now: number;
}): Promise<SingleVerification> {
  const { db, caller, requestId, now } = input;
  if (caller.mode === 'test') {
    const result = sandboxVerify(input.email, now);
    await insertVerification(db, {
      ...historyFields(result),
      id: requestId,
      accountId: caller.accountId,
      apiKeyId: caller.apiKeyId,
      kind: 'single',
      createdAt: now,
    });
    return { result, creditsRemaining: caller.creditBalance };
  }
  const creditsRemaining = await openChargedVerification(db, {
    id: requestId,
    accountId: caller.accountId,
    apiKeyId: caller.apiKeyId,
    amount: SINGLE_VERIFICATION_CREDITS,
    now,
  });
  if (creditsRemaining === null) {
    throw await insufficientCredits(db, caller.accountId, SINGLE_VERIFICATION_CREDITS);
  }
  try {
    const { result } = await verifyAddress(input.deps, input.email);
    if (!(await answerVerification(db, requestId, historyFields(result)))) {
      throw new Error(`verification ${requestId} was closed before its answer was recorded`);
    }
    return { result, creditsRemaining };
  } catch (cause) {
    const refunded = await refundVerification(db, requestId, Date.now()).catch(() => false);
    log.error('single verification failed after the charge', {
      requestId,
      refunded,
      ...errorFields(cause),
    });
    // If the refund failed as well, the recovery sweep refunds the open verification.
    throw new ApiError('INTERNAL_ERROR', { details: { creditRefunded: true } });
  }
}

function historyFields(result: VerificationResult) {
  return {
    email: result.email,
    status: result.status,
    subStatus: result.subStatus,
    score: result.score,
    resultJson: JSON.stringify(result),
  };
}
