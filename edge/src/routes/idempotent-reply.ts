import type { Context, TypedResponse } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { IdempotentAnswer } from '../services/idempotency.ts';

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
