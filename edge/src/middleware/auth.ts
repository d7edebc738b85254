// X-API-Key → the caller. Keys are looked up by their SHA-256 hash, so the secret is never
// compared byte by byte (no timing signal), and a revoked key fails on the very next request.

import { ApiError } from '@rcpt/shared/errors';
import { hashSecret, isWellFormedSecret } from '@rcpt/shared/secret-tokens';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { authenticateApiKey } from '../services/api-keys.ts';

export const apiKeyAuth = createMiddleware<AppEnv>(async (c, next) => {
  const presented = c.req.header('x-api-key');
  if (presented === undefined || presented === '') throw new ApiError('UNAUTHORIZED');
  // A key with surrounding whitespace, or two X-API-Key headers (joined with ", "), is not a key.
  if (!isWellFormedSecret(presented)) throw new ApiError('INVALID_API_KEY');
  const caller = await authenticateApiKey(c.get('db'), await hashSecret(presented), Date.now(), (task) =>
    c.executionCtx.waitUntil(task),
  );
  if (!caller) throw new ApiError('INVALID_API_KEY');
  c.set('caller', caller);
  await next();
});

/**
 * Settings that reach live data (the account's webhook, fired by every live job): a test key
 * is 403; a live key or the dashboard manages them.
 */
export const liveKeyOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.get('caller').mode !== 'live') {
    throw new ApiError('FORBIDDEN', {
      message: "The account's settings and webhooks need a live key (rk_live_…) or the dashboard.",
    });
  }
  await next();
});
