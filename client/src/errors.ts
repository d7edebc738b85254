// What the client throws: the API's own errors carry its stable `code` and the request id to
// quote to support; a connection that never got an answer, and a job that failed, are their own kinds.
import type { components } from './openapi.d.ts';

export type ErrorCode = components['schemas']['Error']['code'];

/** The API answered with an error body (`{ success: false, code, message, requestId, details? }`). */
export class RcptError extends Error {
  override readonly name: string = 'RcptError';
  readonly status: number;
  readonly code: ErrorCode;
  /** Quote it to support: it names the request in rcpt's logs and ledger. */
  readonly requestId: string | null;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    requestId: string | null,
    details: Record<string, unknown> | undefined,
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
    this.details = details;
  }
}

export type QuotaName = 'storage_bytes_per_day' | 'jobs_in_flight' | 'api_keys';

/**
 * 429 `QUOTA_EXCEEDED`: an account quota is used up. Waiting a minute does not help: the daily
 * quota frees at `resetAt`, the others when a job finishes or a key is revoked (`resetAt` null).
 */
export class RcptQuotaError extends RcptError {
  override readonly name: string = 'RcptQuotaError';
  readonly quota: QuotaName;
  readonly limit: number;
  readonly used: number;
  /** What the refused request would have added (rows, a job, a key). */
  readonly requested: number;
  readonly resetAt: Date | null;

  constructor(status: number, message: string, requestId: string | null, details: Record<string, unknown>) {
    super(status, 'QUOTA_EXCEEDED', message, requestId, details);
    this.quota = details.quota as QuotaName;
    this.limit = Number(details.limit);
    this.used = Number(details.used);
    this.requested = Number(details.requested);
    this.resetAt = typeof details.resetAt === 'string' ? new Date(details.resetAt) : null;
  }
}

/** No answer from the API after the retries (network down, DNS, connection refused). */
export class RcptConnectionError extends Error {
  override readonly name = 'RcptConnectionError';
}

/** A batch job ended `failed`; `job.failureReason` says why, and what was not verified was refunded. */
export class RcptJobFailedError extends Error {
  override readonly name = 'RcptJobFailedError';
  readonly job: components['schemas']['Job'];

  constructor(job: components['schemas']['Job']) {
    super(`job ${job.id} failed: ${job.failureReason ?? 'no reason given'}`);
    this.job = job;
  }
}

/** The error an API answer stands for, from its parsed body; a body not in the API's error shape still gives one. */
export function errorOf(response: Response, body: unknown): RcptError {
  const requestId = response.headers.get('x-request-id');
  const error = body as Partial<components['schemas']['Error']> | null | undefined;
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    if (error.code === 'QUOTA_EXCEEDED' && error.details) {
      return new RcptQuotaError(response.status, error.message, error.requestId ?? requestId, error.details);
    }
    return new RcptError(
      response.status,
      error.code,
      error.message,
      error.requestId ?? requestId,
      error.details,
    );
  }
  const code: ErrorCode = response.status >= 500 ? 'INTERNAL_ERROR' : 'VALIDATION_ERROR';
  return new RcptError(
    response.status,
    code,
    `HTTP ${response.status} without an error body`,
    requestId,
    undefined,
  );
}

/** The client was set up in a way it refuses to work with (a base URL that would send the key in clear). */
export class RcptConfigurationError extends Error {
  override readonly name = 'RcptConfigurationError';
}
