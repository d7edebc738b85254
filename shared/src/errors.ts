// The one error table: every error the API can answer, its HTTP status and message.
// Routes throw `ApiError(code)`; the OpenAPI error responses and docs/api.md's table of error
// codes (`errorsMarkdown()`, a test compares the two) are generated from this table.
import { z } from 'zod';

export const ERRORS = {
  VALIDATION_ERROR: { httpStatus: 400, message: 'The request is malformed or a field is invalid.' },
  TOO_MANY_EMAILS: { httpStatus: 400, message: 'A batch holds at most 10,000 addresses.' },
  JOB_NOT_COMPLETED: { httpStatus: 400, message: 'Results are available once the job is completed.' },
  CONFIRMATION_LINK_INVALID: {
    httpStatus: 400,
    message: 'This confirmation link is not valid. Sign in and ask for a new one.',
  },
  WEBHOOK_SECRET_MISSING: {
    httpStatus: 400,
    message:
      "A webhookUrl needs the account's webhook signing secret, or no event could be signed: create one first " +
      "(POST /api/v1/webhooks/secret, or the dashboard's Webhooks page).",
  },
  WEBHOOK_SIGNATURE_INVALID: {
    httpStatus: 400,
    message: 'The Stripe-Signature header is missing, malformed, too old or does not match the body.',
  },
  UNAUTHORIZED: { httpStatus: 401, message: 'An API key is required in the X-API-Key header.' },
  INVALID_API_KEY: { httpStatus: 401, message: 'The API key is invalid or has been revoked.' },
  OUTCOME_HOOK_UNAUTHORIZED: {
    httpStatus: 401,
    message:
      "The sending service's signature or credentials are missing, malformed or do not match this outcome " +
      'endpoint (docs/verdicts.md, "Outcomes"); nothing was recorded.',
  },
  INSUFFICIENT_CREDITS: { httpStatus: 402, message: 'Not enough credits for this request.' },
  FORBIDDEN: { httpStatus: 403, message: 'This action is not allowed.' },
  CSRF_FAILED: { httpStatus: 403, message: 'The form has expired; reload the page and try again.' },
  EMAIL_NOT_CONFIRMED: {
    httpStatus: 403,
    message:
      "Live keys and webhook settings need the account's email address confirmed, and so does storing a list " +
      "past a test key's try of 100 rows: follow the link rcpt emailed, or have it sent again from the " +
      'dashboard. Test keys work meanwhile.',
  },
  CHALLENGE_FAILED: {
    httpStatus: 403,
    message:
      'The check that a person is there (Cloudflare Turnstile) did not pass; complete it and try again.',
  },
  PAYMENT_DISPUTED: {
    httpStatus: 403,
    message:
      "A payment of this account is disputed with the card's bank: paid work (live verifications, uploads) " +
      'and new payments are suspended until the dispute closes. Test keys still work.',
  },
  KEY_SCOPE_DENIED: {
    httpStatus: 403,
    message: "This API key's scopes do not include this operation; `details` names the scopes it holds.",
  },
  KEY_ADDRESS_DENIED: {
    httpStatus: 403,
    message:
      'This API key may not be used from this client address; `details.clientAddress` says which one it saw.',
  },
  ORIGIN_NOT_ALLOWED: {
    httpStatus: 403,
    message:
      "A publishable key answers only pages of the origins it lists; this request's Origin is not one.",
  },
  PROBER_REGION_UNUSED: {
    httpStatus: 403,
    message:
      "This prober's region is not in the edge's PROBER_REGIONS, so it would never be sent work: add the region " +
      'to PROBER_REGIONS, or give the prober a token of a listed region.',
  },
  NOT_FOUND: { httpStatus: 404, message: 'The resource does not exist.' },
  METHOD_NOT_ALLOWED: { httpStatus: 405, message: 'This method is not allowed on this path.' },
  CONFLICT: { httpStatus: 409, message: 'The resource already exists.' },
  IDEMPOTENCY_KEY_IN_USE: {
    httpStatus: 409,
    message: 'A request with this Idempotency-Key is still running; retry once it has answered.',
  },
  CONFIRMATION_LINK_EXPIRED: {
    httpStatus: 410,
    message: 'This confirmation link has expired. Sign in and ask for a new one.',
  },
  PAYLOAD_TOO_LARGE: { httpStatus: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { httpStatus: 415, message: 'The Content-Type of the request is not supported.' },
  IDEMPOTENCY_KEY_REUSED: {
    httpStatus: 422,
    message: 'This Idempotency-Key was already used with a different request.',
  },
  RATE_LIMITED: { httpStatus: 429, message: 'Too many requests; retry after the time in Retry-After.' },
  DAILY_CAP_REACHED: {
    httpStatus: 429,
    message:
      "This publishable key's daily cap of verifications is used up; it resets at midnight UTC (`Retry-After`).",
  },
  QUOTA_EXCEEDED: {
    httpStatus: 429,
    message:
      'An account quota is used up: `storage_bytes_per_day` (the bytes every stored row of the account — list ' +
      'rows and cells, results, history, kept Idempotency-Key answers, webhook events — adds in a UTC day), ' +
      '`jobs_in_flight`, `api_keys` or `prober_tokens`; `details` says which, its limit and when it resets.',
  },
  INTERNAL_ERROR: { httpStatus: 500, message: 'An internal error occurred.' },
  SERVICE_UNAVAILABLE: { httpStatus: 503, message: 'The service is temporarily unavailable.' },
  DAILY_STORAGE_FULL: {
    httpStatus: 503,
    message:
      'rcpt has taken in as much new data today as its store takes in a day, so it takes no new list until ' +
      'midnight UTC (`Retry-After`, `details.resetAt`); single verifications and stored jobs are not affected.',
  },
} as const satisfies Record<string, { httpStatus: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;
export const ErrorCode = z.enum(Object.keys(ERRORS) as [ErrorCode]);

export const ErrorBody = z
  .object({
    success: z.literal(false),
    code: ErrorCode,
    message: z.string(),
    requestId: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** An error the API answers with: its status and message come from ERRORS. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly details: Record<string, unknown> | undefined;
  /** When asking again can succeed, for `Retry-After` (RFC 9110 §10.2.3); undefined when unknown. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    options: { message?: string; details?: Record<string, unknown>; retryAfterSeconds?: number } = {},
  ) {
    super(options.message ?? ERRORS[code].message);
    this.name = 'ApiError';
    this.code = code;
    this.httpStatus = ERRORS[code].httpStatus;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** A schema's refusal as the API answers it: VALIDATION_ERROR with each zod issue's path and message. */
export function validationError(error: z.ZodError, message?: string): ApiError {
  return new ApiError('VALIDATION_ERROR', {
    ...(message === undefined ? {} : { message }),
    details: {
      issues: error.issues.map((issue) => ({
        path: issue.path.map(String).join('.'),
        message: issue.message,
      })),
    },
  });
}

/** The error body for `code`; a 500's message is always the table's, never an internal one. */
export function errorBody(
  code: ErrorCode,
  requestId: string,
  message?: string,
  details?: Record<string, unknown>,
): ErrorBody {
  const safeMessage =
    ERRORS[code].httpStatus >= 500 ? ERRORS[code].message : (message ?? ERRORS[code].message);
  return { success: false, code, message: safeMessage, requestId, ...(details ? { details } : {}) };
}

/** The error table as Markdown: docs/api.md's table of error codes (a test compares the two). */
export function errorsMarkdown(): string {
  const lines = ['| code | HTTP status | meaning |', '| --- | --- | --- |'];
  for (const [code, { httpStatus, message }] of Object.entries(ERRORS))
    lines.push(`| \`${code}\` | ${httpStatus} | ${message.replaceAll('|', '\\|')} |`);
  return lines.join('\n');
}
