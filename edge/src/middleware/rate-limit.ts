// 100 requests per minute per API key (services/keys/request-rate.ts); a publishable key's calls
// per client network first (docs/publishable-keys.md); and the dashboard's account changes,
// counted per account (services/accounts/sign-in-limits.ts).
import { ApiError } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import type { LimitDecision } from '../objects/key-limiter.ts';
import { admitAccountChange } from '../services/accounts/sign-in-limits.ts';
import { admitPublishableClient, clientNetworkOf } from '../services/keys/publishable-keys.ts';
import { hitRequestRate } from '../services/keys/request-rate.ts';
import { clientAddressOf } from './client-address.ts';

/**
 * A secret key's request counts against the key's limit here. A publishable key's callers are
 * the visitors of its pages: here each call counts against its client network's share of the key
 * only, and against the key's own limit once it passed its validation and Turnstile
 * (`countAgainstKey`, from the handler), so that one network's flood refuses only that network.
 */
export const apiKeyRateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const { apiKeyId } = c.get('caller');
  // The dashboard's spending forms come here too, without a key.
  if (c.get('keyLimits')?.kind === 'publishable' && apiKeyId !== null) {
    const network = clientNetworkOf(clientAddressOf(c));
    enforce(c, await admitPublishableClient(c.get('services').limiters, apiKeyId, network), {
      message:
        'Too many checks from this client network with this publishable key; retry after the time in Retry-After.',
    });
  } else {
    await countAgainstKey(c);
  }
  await next();
});

/**
 * Counts the request against its key's (or, without one, its account's) 100 a minute. A
 * publishable key's answer keeps the headers of its client network's share: the key's own count
 * is no business of a page's visitor.
 */
export async function countAgainstKey(c: Context<AppEnv>): Promise<void> {
  // A secret key's request was counted with its record (apiKeyAuth): one call to its object.
  const decision = c.get('keyRate') ?? (await hitRequestRate(c.get('services').limiters, c.get('caller')));
  enforce(c, decision, { headers: c.get('keyLimits')?.kind !== 'publishable' });
}

/** The decision's X-RateLimit-* headers, and 429 RATE_LIMITED with Retry-After when it refused. */
function enforce(
  c: Context,
  decision: LimitDecision,
  refusal: { message?: string; headers?: boolean } = {},
): void {
  if (refusal.headers !== false) {
    // X-RateLimit-Reset: seconds until the oldest counted request leaves the window.
    c.header('X-RateLimit-Limit', String(decision.limit));
    c.header('X-RateLimit-Remaining', String(decision.remaining));
    c.header('X-RateLimit-Reset', String(decision.resetSeconds));
  }
  if (!decision.allowed) {
    throw new ApiError('RATE_LIMITED', {
      ...(refusal.message ? { message: refusal.message } : {}),
      details: { retryAfterSeconds: decision.resetSeconds },
      retryAfterSeconds: decision.resetSeconds,
    });
  }
}

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
