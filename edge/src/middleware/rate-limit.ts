// 100 requests per minute per API key (services/keys/request-rate.ts); and the dashboard's
// account changes, counted per account (services/accounts/sign-in-limits.ts).
import { ApiError } from '@rcpt/shared/errors';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { admitAccountChange } from '../services/accounts/sign-in-limits.ts';
import { hitRequestRate } from '../services/keys/request-rate.ts';

export const apiKeyRateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const decision = await hitRequestRate(c.get('services').limiters, c.get('caller'));
  // X-RateLimit-Reset: seconds until the oldest counted request leaves the window.
  c.header('X-RateLimit-Limit', String(decision.limit));
  c.header('X-RateLimit-Remaining', String(decision.remaining));
  c.header('X-RateLimit-Reset', String(decision.resetSeconds));
  if (!decision.allowed) {
    c.header('Retry-After', String(decision.resetSeconds));
    throw new ApiError('RATE_LIMITED', { details: { retryAfterSeconds: decision.resetSeconds } });
  }
  await next();
});

/** A dashboard form that changes the signed-in account: 429 past ACCOUNT_CHANGE_LIMITS. */
export const accountChangeRateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const admission = await admitAccountChange(c.get('services').limiters, c.get('caller').accountId);
  if (!admission.allowed) {
    throw new ApiError('RATE_LIMITED', {
      details: { retryAfterSeconds: admission.retryAfterSeconds },
      retryAfterSeconds: admission.retryAfterSeconds,
    });
  }
  await next();
});
