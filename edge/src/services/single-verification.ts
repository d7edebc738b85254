// A single verification for an API caller: charge (live keys), verify, record in history.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { type VerifyDeps, verifyAddress } from '@rcpt/shared/verify/verify-address';
import type { Caller } from '../app-env.ts';
import type { Db } from '../storage/db.ts';
import { insertVerification } from '../storage/history.ts';
import { chargeCredits } from './credits.ts';
import { sandboxVerify } from './sandbox.ts';

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
  const { db, caller, email, requestId, now } = input;
  let result: VerificationResult;
  let creditsRemaining: number;
  if (caller.mode === 'test') {
    result = sandboxVerify(email, now);
    creditsRemaining = caller.creditBalance;
  } else {
    // SPEC §1: one credit whatever the answer, taken before any work is done.
    creditsRemaining = await chargeCredits(db, {
      accountId: caller.accountId,
      amount: 1,
      reason: 'verify',
      reference: requestId,
      now,
    });
    ({ result } = await verifyAddress(input.deps, email));
  }
  await insertVerification(db, {
    id: requestId,
    accountId: caller.accountId,
    apiKeyId: caller.apiKeyId,
    kind: 'single',
    email: result.email,
    status: result.status,
    subStatus: result.subStatus,
    score: result.score,
    resultJson: JSON.stringify(result),
    createdAt: now,
  });
  return { result, creditsRemaining };
}
