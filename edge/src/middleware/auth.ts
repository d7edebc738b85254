// X-API-Key → the caller. Keys are looked up by their SHA-256 hash, so the secret is never
// compared byte by byte (no timing signal), and a revoked key fails on the very next request.
// A key limited to client address blocks is refused from any other address, and a publishable
// key from any page origin it does not list (docs/publishable-keys.md).

import { ApiError } from '@rcpt/shared/errors';
import { hashSecret, isWellFormedSecret } from '@rcpt/shared/secret-tokens';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { authenticateApiKey, type KeyScope, keyHoldsScope } from '../services/keys/api-keys.ts';
import { addressAdmitted } from '../services/keys/key-limits.ts';
import { learnKey, unlearnKey } from '../services/keys/known-keys.ts';
import { clientAddressOf } from './client-address.ts';
import { allowPublishableOrigin } from './publishable-keys.ts';
import { enterAccountShard } from './services.ts';

export const apiKeyAuth = createMiddleware<AppEnv>(async (c, next) => {
  const presented = c.req.header('x-api-key');
  if (presented === undefined || presented === '') throw new ApiError('UNAUTHORIZED');
  // A key with surrounding whitespace, or two X-API-Key headers (joined with ", "), is not a key.
  if (!isWellFormedSecret(presented)) throw new ApiError('INVALID_API_KEY');
  const address = clientAddressOf(c);
  const keyHash = await presentedKeyHash(c, presented);
  const key = await authenticateApiKey(
    { shards: c.get('shards'), limiters: c.get('services').limiters },
    keyHash,
    Date.now(),
    c.get('services').inBackground,
    { clientAddress: address },
  );
  if (!key) {
    unlearnKey(keyHash);
    throw new ApiError('INVALID_API_KEY');
  }
  learnKey(keyHash, {
    caller: { accountId: key.caller.accountId, apiKeyId: key.caller.apiKeyId, mode: key.caller.mode },
    limits: { kind: key.limits.kind, scopes: key.limits.scopes, allowedCidrs: key.limits.allowedCidrs },
  });
  const { allowedOrigins } = key.limits;
  if (!addressAdmitted(key.limits, address)) {
    throw new ApiError('KEY_ADDRESS_DENIED', { details: { clientAddress: address } });
  }
  if (key.limits.kind === 'publishable') {
    const origin = c.req.header('origin');
    // Exact serialised origins (RFC 6454 §6.1): scheme, host and port, as the browser sends them.
    if (origin === undefined || !allowedOrigins?.includes(origin)) {
      throw new ApiError('ORIGIN_NOT_ALLOWED', { details: { origin: origin ?? null } });
    }
    allowPublishableOrigin(c, origin);
  }
  enterAccountShard(c, key.shard);
  c.set('caller', key.caller);
  c.set('keyLimits', key.limits);
  // Taken with the key's record, in the same call to its object: apiKeyRateLimit enforces it.
  if (key.rate) c.set('keyRate', key.rate);
  await next();
});

/** The SHA-256 of the request's API key, hashed once for every reader of the request. */
export function presentedKeyHash(c: Context<AppEnv>, presented: string): Promise<string> {
  let hash = c.get('keyHash');
  if (!hash) {
    hash = hashSecret(presented);
    c.set('keyHash', hash);
  }
  return hash;
}

/**
 * The scopes that open an operation (any one of them), declared at its route. A publishable
 * key is refused unless the route says it takes them (only the single verify does).
 */
export function requireScope(anyOf: readonly KeyScope[], options: { publishableKeys?: true } = {}) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const limits = c.get('keyLimits');
    if (!keyHoldsScope(limits, anyOf, { publishableKeys: options.publishableKeys === true })) {
      throw new ApiError('KEY_SCOPE_DENIED', {
        details: {
          required: anyOf,
          held: limits.kind === 'publishable' ? ['publishable'] : limits.scopes,
        },
      });
    }
    await next();
  });
}

/**
 * Settings that reach live data (the account's webhook, fired by every live job): a test key
 * is 403 FORBIDDEN, a key limited to some scopes (or a publishable key) 403 KEY_SCOPE_DENIED;
 * a live key with every scope, or the dashboard, manages them.
 */
export const settingsKeyOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.get('caller').mode !== 'live') {
    throw new ApiError('FORBIDDEN', {
      message: "The account's settings and webhooks need a live key (rk_live_…) or the dashboard.",
    });
  }
  const limits = c.get('keyLimits');
  if (limits.kind === 'publishable' || limits.scopes !== null) {
    throw new ApiError('KEY_SCOPE_DENIED', {
      message: "The account's settings and webhooks need a key with every scope, or the dashboard.",
      details: {
        required: 'every scope',
        held: limits.kind === 'publishable' ? ['publishable'] : limits.scopes,
      },
    });
  }
  await next();
});
