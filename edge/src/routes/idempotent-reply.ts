import type { Context, TypedResponse } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../app-env.ts';
import { answerOnce, type IdempotentAnswer, requestFingerprint } from '../services/money/idempotency.ts';

/**
 * Runs a charged POST once per `Idempotency-Key` of the caller (answerOnce): the request is
 * known by the operation, its content type, its query and the digest of its body. A publishable
 * key's keys are the account's publishable scope, apart from its secret keys'.
 */
export function answerRequestOnce(
  c: Context<AppEnv>,
  request: {
    operation: string;
    key: string | undefined;
    bodyDigest: () => Promise<string> | string;
    /** The ledger reference `run` charges under; the request id unless it says otherwise (a job id). */
    chargeReference?: string;
    now: number;
  },
  run: () => Promise<unknown>,
): Promise<IdempotentAnswer> {
  const caller = c.get('caller');
  return answerOnce(
    c.get('db'),
    {
      accountId: caller.accountId,
      mode: c.get('keyLimits')?.kind === 'publishable' ? 'publishable' : caller.mode,
      key: request.key,
      fingerprint: async () =>
        requestFingerprint({
          operation: request.operation,
          contentType: c.req.header('content-type'),
          query: new URL(c.req.url).search,
          bodyDigest: await request.bodyDigest(),
        }),
      chargeReference: request.chargeReference ?? c.get('requestId'),
      now: request.now,
    },
    run,
  );
}

/**
 * The answer of a charged POST, marked when it is the kept answer of an earlier request. A
 * kept answer may be one of the route's documented errors, so it is typed as the route's
 * success only to satisfy the route's handler type.
 */
export function replyWith<T>(c: Context, answer: IdempotentAnswer): TypedResponse<T, 200, 'json'> {
  if (answer.replayed) c.header('Idempotent-Replayed', 'true');
  return c.json(answer.body, answer.status as ContentfulStatusCode) as unknown as TypedResponse<
    T,
    200,
    'json'
  >;
}
