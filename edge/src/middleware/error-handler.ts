// Every failure answers the JSON error body of shared/src/errors.ts: never HTML, never a stack.
import { ApiError, type ErrorCode, errorBody } from '@rcpt/shared/errors';
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from '../app-env.ts';
import { errorFields, log } from '../logger.ts';

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

export function respondWithError(c: Context<AppEnv>, error: ApiError): Response {
  const body = errorBody(error.code, c.get('requestId') ?? 'unknown', error.message, error.details);
  if (error.retryAfterSeconds !== undefined) c.header('Retry-After', String(error.retryAfterSeconds));
  return c.json(body, error.httpStatus as ContentfulStatusCode);
}

export const handleError: ErrorHandler<AppEnv> = (error, c) => {
  if (error instanceof ApiError) return respondWithError(c, error);
  if (error instanceof HTTPException) {
    const code = CODE_BY_STATUS[error.status];
    if (code) return respondWithError(c, new ApiError(code, { message: error.message || undefined }));
  }
  // Log the cause for operators; the client gets the table's message and the request id.
  log.error('unhandled error', {
    requestId: c.get('requestId'),
    path: new URL(c.req.url).pathname,
    ...errorFields(error),
  });
  return respondWithError(c, new ApiError('INTERNAL_ERROR'));
};

/** Known paths answer 405 (with Allow) to other methods; everything else is 404. */
export function notFoundHandler(allowedMethods: (path: string) => string[]): NotFoundHandler<AppEnv> {
  return (c) => {
    const allowed = allowedMethods(new URL(c.req.url).pathname);
    if (allowed.length > 0) {
      c.header('Allow', allowed.join(', '));
      return respondWithError(c, new ApiError('METHOD_NOT_ALLOWED'));
    }
    return respondWithError(c, new ApiError('NOT_FOUND', { message: 'No such endpoint.' }));
  };
}
