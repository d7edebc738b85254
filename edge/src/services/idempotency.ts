// Idempotency keys with Stripe's semantics (docs/money.md): the first answer to a key is kept
// and a retry with the same request gets it again, not run (nor charged) again.
import { ApiError, errorBody } from '@rcpt/shared/errors';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { errorFields, log } from '../logger.ts';
import type { Db } from '../storage/db.ts';
import { claimIdempotencyKey, keepIdempotentAnswer, releaseIdempotencyKey } from '../storage/idempotency.ts';

export interface IdempotentAnswer {
  status: number;
  body: unknown;
  /** True when this is the kept answer of an earlier request with the same key. */
  replayed: boolean;
}

/**
 * Runs `run` once per idempotency key. `operation` and `input` identify the request (the
 * parsed body, so a retry that encodes the same request differently is still the same).
 * An answer of the API's own failure (5xx, after which the charge was refunded) is not
 * kept, nor a 429 (a quota: "not now", nothing done, as Stripe keeps no rate-limited answer):
 * the key is freed and a retry runs afresh.
 */
export async function answerOnce(
  db: Db,
  request: {
    accountId: string;
    key: string | undefined;
    operation: string;
    input: unknown;
    requestId: string;
    now: number;
  },
  run: () => Promise<unknown>,
): Promise<IdempotentAnswer> {
  const { accountId, key } = request;
  if (key === undefined) return { status: 200, body: await run(), replayed: false };
  const fingerprint = await hashSecret(JSON.stringify([request.operation, request.input]));
  const claim = await claimIdempotencyKey(db, { accountId, key, fingerprint, now: request.now });
  if (claim.kind === 'other-request') throw new ApiError('IDEMPOTENCY_KEY_REUSED');
  if (claim.kind === 'running') throw new ApiError('IDEMPOTENCY_KEY_IN_USE');
  if (claim.kind === 'answered') {
    return { status: claim.status, body: JSON.parse(claim.body) as unknown, replayed: true };
  }
  let answer: { status: number; body: unknown };
  try {
    answer = { status: 200, body: await run() };
  } catch (error) {
    if (error instanceof ApiError && error.httpStatus < 500 && error.httpStatus !== 429) {
      const body = errorBody(error.code, request.requestId, error.message, error.details);
      await keepAnswer(db, { accountId, key, status: error.httpStatus, body });
    } else {
      await releaseIdempotencyKey(db, accountId, key).catch(() => undefined);
    }
    throw error;
  }
  await keepAnswer(db, { accountId, key, ...answer });
  return { ...answer, replayed: false };
}

async function keepAnswer(
  db: Db,
  answer: { accountId: string; key: string; status: number; body: unknown },
): Promise<void> {
  try {
    await keepIdempotentAnswer(db, { ...answer, body: JSON.stringify(answer.body) });
  } catch (cause) {
    // The request itself succeeded and its answer goes out; only a retry is affected (it
    // waits for the key's lock to lapse).
    log.error('idempotent answer not kept', errorFields(cause));
  }
}
