// A single verification as its caller asked for it, from the API (POST /api/v1/verify) or the
// dashboard's Verify page: built once, so that `fresh`, `evidence` and a time budget mean the
// same on both.
import type { VerifyRequest } from '@rcpt/shared/contract/api';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { deskOf } from '../services/money/account-desk.ts';
import { quotasOf } from '../services/money/quotas.ts';
import { verificationBudgetMs } from '../services/verify/deps.ts';
import { type SingleVerification, verifyForCaller } from '../services/verify/single-verification.ts';

/**
 * What answering takes once the caller's budget is spent: the refund and the history row in one
 * D1 batch, the idempotent answer, the response (`npm run bench -- time-budget` prints the rest).
 */
const ANSWER_TAIL_MS = 25;

export async function verifyAsAsked<E extends AppEnv>(
  c: Context<E>,
  request: VerifyRequest,
  now: number,
): Promise<SingleVerification> {
  const { db, config, facts, inBackground, verifyDeps, desks } = c.get('services');
  // The caller's budget counts from the request's arrival, less what recording the answer and
  // replying take; the verification itself may run longer, for the next call (docs/verdicts.md,
  // "A time budget per call"). Without one, the deployment's budget bounds the verification
  // itself, as it always has.
  const { timeoutMs } = request;
  const evidence = request.evidence ?? false;
  const verification = await verifyForCaller({
    db,
    deps: {
      ...verifyDeps(
        c.get('caller'),
        timeoutMs === undefined ? undefined : verificationBudgetMs(config, timeoutMs),
      ),
      evidence,
    },
    ...(timeoutMs === undefined ? {} : { answerBy: c.get('receivedAt') + timeoutMs - ANSWER_TAIL_MS }),
    background: inBackground,
    facts,
    caller: c.get('caller'),
    // Charged, recorded and answered from the cache at the account's desk (docs/money.md).
    desk: deskOf(desks, c.get('caller').accountId),
    // Begun beside the key's admission, for a key this isolate knows (middleware/early-desk.ts).
    early: c.get('earlyDesk'),
    email: request.email,
    fresh: request.fresh ?? false,
    evidence,
    requestId: c.get('requestId'),
    quotas: quotasOf(config),
    // The dashboard's Verify page has no key.
    publishable: c.get('keyLimits')?.kind === 'publishable',
    now,
  });
  if (verification.balanceUnmoved) c.set('balanceUnmoved', true);
  return verification;
}
