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
  admitPublishableClient,
  publishableTurnstilePasses,
  takeFromDailyCap,
} from '../services/keys/publishable-keys.ts';
import { clientAddressOf } from './client-address.ts';

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
 * A publishable key's single verify: the per-client limit, then the customer's Turnstile (when
 * on), then the daily cap, in that order so that a refused call takes nothing from the cap.
 * Called by the handler, after the request is validated (route middleware runs before the
 * validators), so a malformed call costs nothing either. Other keys pass.
 */
export async function admitPublishableVerification(c: Context<AppEnv>): Promise<void> {
  const limits = c.get('keyLimits');
  const { apiKeyId } = c.get('caller');
  if (limits.kind !== 'publishable' || apiKeyId === null) return;
  const clientAddress = clientAddressOf(c);
  const perClient = await admitPublishableClient(c.get('services').limiters, apiKeyId, clientAddress);
  if (!perClient.allowed) {
    throw new ApiError('RATE_LIMITED', {
      message:
        'Too many checks from this client with this publishable key; retry after the time in Retry-After.',
      details: { retryAfterSeconds: perClient.retryAfterSeconds },
      retryAfterSeconds: perClient.retryAfterSeconds,
    });
  }
  if (limits.turnstileSecret) {
    const config = c.get('config');
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
  const day = await takeFromDailyCap(c.get('services').limiters, apiKeyId, limits.dailyCap ?? 0, Date.now());
  if (!day.allowed) {
    throw new ApiError('DAILY_CAP_REACHED', {
      details: { cap: day.cap, retryAfterSeconds: day.retryAfterSeconds },
      retryAfterSeconds: day.retryAfterSeconds,
    });
  }
}
