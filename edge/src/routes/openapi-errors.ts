// OpenAPI responses: the errors generated from the one error table, and the JSON answer of an
// authenticated operation with its rate-limit headers.
import { ERRORS, ErrorBody, type ErrorCode } from '@rcpt/shared/errors';

type ErrorResponses = Record<
  number,
  { description: string; content: { 'application/json': { schema: typeof ErrorBody } } }
>;

/** The responses for these error codes, grouped by HTTP status, each listing its codes. */
export function errorResponses(codes: readonly ErrorCode[]): ErrorResponses {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERRORS[code].httpStatus;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: ErrorResponses = {};
  for (const [status, statusCodes] of byStatus) {
    responses[status] = {
      description: statusCodes.map((code) => `\`${code}\`: ${ERRORS[code].message}`).join(' '),
      content: { 'application/json': { schema: ErrorBody } },
    };
  }
  return responses;
}

/** Errors every authenticated, rate-limited operation can answer. */
export const AUTHENTICATED_ERRORS = [
  'UNAUTHORIZED',
  'INVALID_API_KEY',
  'KEY_SCOPE_DENIED',
  'KEY_ADDRESS_DENIED',
  'ORIGIN_NOT_ALLOWED',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
] as const;
/** Errors of the operations behind settingsKeyOnly: a test key is refused with FORBIDDEN. */
export const SETTINGS_KEY_ERRORS = [...AUTHENTICATED_ERRORS, 'FORBIDDEN'] as const;
/** Errors of the operations that take an `Idempotency-Key`. */
export const IDEMPOTENCY_ERRORS = ['IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'] as const;
/** Errors of every operation that takes a JSON body. */
export const JSON_BODY_ERRORS = ['VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const;

export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': header('integer', 'Requests allowed per 60 s window for this key (100).'),
  'X-RateLimit-Remaining': header('integer', 'Requests left in the current window.'),
  'X-RateLimit-Reset': header(
    'integer',
    'Seconds until the oldest counted request leaves the window (a slot frees up).',
  ),
  'X-Request-Id': header('string', 'Identifies this request in logs and in the credit ledger.'),
};

function header<T extends 'integer' | 'string'>(type: T, description: string) {
  return { description, schema: { type } };
}

/** The headers of a charged POST's answer: the rate-limit headers and the replay marker. */
export const IDEMPOTENT_ANSWER_HEADERS = {
  ...RATE_LIMIT_HEADERS,
  'Idempotent-Replayed': {
    description: '`true` when this is the kept answer to an earlier request with the same Idempotency-Key.',
    schema: { type: 'string' as const },
  },
};

/**
 * The answers of a charged POST that takes an `Idempotency-Key` (a verification, an upload): its
 * 200 with the rate-limit and replay headers, and the errors every such POST answers beside the
 * operation's own `errors`.
 */
export function chargedPostResponses<Schema>(
  success: { description: string; schema: Schema },
  errors: readonly ErrorCode[],
) {
  return {
    200: {
      description: success.description,
      headers: IDEMPOTENT_ANSWER_HEADERS,
      content: { 'application/json': { schema: success.schema } },
    },
    ...errorResponses([
      ...AUTHENTICATED_ERRORS,
      ...JSON_BODY_ERRORS,
      'INSUFFICIENT_CREDITS',
      'PAYMENT_DISPUTED',
      'QUOTA_EXCEEDED',
      ...errors,
      ...IDEMPOTENCY_ERRORS,
    ]),
  };
}

/** An authenticated operation's JSON answer, with the rate-limit headers every such answer carries. */
export function jsonReply<Schema>(description: string, schema: Schema) {
  return { description, headers: RATE_LIMIT_HEADERS, content: { 'application/json': { schema } } };
}
