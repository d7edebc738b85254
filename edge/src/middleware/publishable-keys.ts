// CORS for publishable keys (docs/publishable-keys.md), by the Fetch standard's CORS protocol
// (fetch.spec.whatwg.org/#http-cors-protocol). A page's `fetch` with `X-API-Key` and a JSON
// body is not a simple request, so the browser first sends a preflight `OPTIONS` without the
// key: it cannot say which origins the key lists, so the preflight is answered for any origin
// and only says which method and headers the real request may use. The real request carries
// the key and its `Origin`; auth.ts checks that origin against the key's list and only then
// does the answer carry `Access-Control-Allow-Origin`, without which the browser shows the page
// nothing. Hono's `cors` middleware decides the allowed origin before the key is known, so it
// cannot make the second decision; these few headers are written here instead.
import { ApiError } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import {
  clientNetworkOf,
  PUBLISHABLE_CALL_BYTES,
  publishableTurnstilePasses,
  takeFromKeyDay,
} from '../services/keys/publishable-keys.ts';
import { quotaExceeded, quotasOf } from '../services/money/quotas.ts';
import { clientAddressOf } from './client-address.ts';
import { countAgainstKey } from './rate-limit.ts';

/** The header a page sends its visitor's Turnstile token in, when the key asks for one. */
export const TURNSTILE_TOKEN_HEADER = 'x-turnstile-token';
/** The request headers a publishable key's call may carry. */
const ALLOWED_HEADERS = ['content-type', 'x-api-key', TURNSTILE_TOKEN_HEADER, 'idempotency-key'];
/** The answer headers the page may read: rate limits, Retry-After and the request id. */
const EXPOSED_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
];
/** How long a browser may reuse a preflight answer; Chromium caps it at 7,200 s. */
const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** Answers the preflight of a call a publishable key may make (the single verify). */
export const publishableCorsPreflight = createMiddleware(async (c, next) => {
  const origin = c.req.header('origin');
  if (c.req.method !== 'OPTIONS' || !origin || !c.req.header('access-control-request-method')) {
    await next();
    return;
  }
  return c.body(null, 204, {
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Allow-Methods': 'POST',
    'Access-Control-Allow-Headers': ALLOWED_HEADERS.join(', '),
    'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE_SECONDS),
    Vary: 'Origin',
  });
});

/** Lets the page of `origin` (one the key lists) read this answer, errors included. */
export function allowPublishableOrigin(c: Context, origin: string): void {
  c.header('Access-Control-Allow-Origin', origin);
  c.header('Access-Control-Expose-Headers', EXPOSED_HEADERS.join(', '));
  c.header('Vary', 'Origin');
}

/**
 * A publishable key's single verify, past its client network's share (rate-limit.ts) and its
 * validation (the handler calls this once the body is valid): the customer's Turnstile when on,
 * then the key's 100 a minute, then its day (the daily cap and the key's storage budget), in that
 * order, so that a call refused earlier takes nothing from what the key's other visitors share.
 * Returns what is left of the cap, the page's `creditsRemaining`; null for other keys, which pass.
 */
export async function admitPublishableVerification(c: Context<AppEnv>): Promise<{ capLeft: number } | null> {
  const limits = c.get('keyLimits');
  const { apiKeyId } = c.get('caller');
  if (limits.kind !== 'publishable' || apiKeyId === null) return null;
  const clientAddress = clientAddressOf(c);
  const config = c.get('config');
  if (limits.turnstileSecret) {
    const passes = await publishableTurnstilePasses({
      db: c.get('db'),
      keyId: apiKeyId,
      sealedSecret: limits.turnstileSecret,
      secretsKey: config.SECRETS_KEY,
      siteverifyUrl: config.TURNSTILE_SITEVERIFY_URL,
      token: c.req.header(TURNSTILE_TOKEN_HEADER) ?? '',
      clientAddress,
      // apiKeyAuth admitted the call only with an Origin the key lists.
      origin: c.req.header('origin') ?? '',
    });
    if (!passes) {
      throw new ApiError('CHALLENGE_FAILED', {
        message: `This publishable key needs a valid Turnstile token in ${TURNSTILE_TOKEN_HEADER}; each token is good once.`,
      });
    }
  }
  await countAgainstKey(c);
  const now = Date.now();
  const storageLimit = quotasOf(config).publishableStorageBytesPerDay;
  const day = await takeFromKeyDay(c.get('services').limiters, {
    keyId: apiKeyId,
    cap: limits.dailyCap ?? 0,
    network: clientNetworkOf(clientAddress),
    storageLimit,
    now,
  });
  if (day.allowed) return { capLeft: day.capLeft };
  if (day.refused === 'storage') {
    throw quotaExceeded({
      quota: 'publishable_storage_bytes_per_day',
      limit: storageLimit,
      used: day.use.bytes,
      requested: PUBLISHABLE_CALL_BYTES,
      now,
    });
  }
  throw new ApiError('DAILY_CAP_REACHED', {
    details: { cap: limits.dailyCap ?? 0, retryAfterSeconds: day.retryAfterSeconds },
    retryAfterSeconds: day.retryAfterSeconds,
  });
}
