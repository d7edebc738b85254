// What a publishable key's call must pass beyond authentication (docs/publishable-keys.md):
// a per-client limit (a page's visitor checks a few addresses, a script many), the customer's
// Turnstile when they turned it on, and the key's daily cap, which bounds what a leaked key
// can cost. Each is counted by its own KeyLimiter object.
import type { KeyLimiter } from '../../objects/key-limiter.ts';
import type { Db } from '../../storage/db.ts';
import { networkPrefix } from '../accounts/client-network.ts';
import { openStored } from '../accounts/secret-box.ts';
import {
  PUBLISHABLE_TURNSTILE_ACTION,
  type TurnstileConfig,
  turnstilePasses,
} from '../accounts/turnstile.ts';
import { DAY_MS, utcDayStart } from '../money/quotas.ts';
import { turnstileSecretPlace } from './api-keys.ts';

/**
 * Calls one client network may make with one publishable key per minute. The network is the
 * address for IPv4 and its /64 for IPv6 (one customer's allocation, accounts/client-network.ts).
 */
export const PUBLISHABLE_PER_CLIENT = { limit: 10, windowMs: 60_000 } as const;
/** The daily cap a new publishable key gets unless the customer sets another, and its bounds. */
export const DAILY_CAP = { default: 1_000, min: 1, max: 1_000_000 } as const;

export type Admission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Counts the call against the key's per-client-network limit. */
export async function admitPublishableClient(
  limiters: DurableObjectNamespace<KeyLimiter>,
  keyId: string,
  clientAddress: string | null,
): Promise<Admission> {
  const network = clientAddress === null ? 'unknown' : networkPrefix(clientAddress, { v4: 32, v6: 64 });
  const limiter = limiters.get(limiters.idFromName(`publishable:${keyId}:net:${network}`));
  const decision = await limiter.hit(PUBLISHABLE_PER_CLIENT.limit, PUBLISHABLE_PER_CLIENT.windowMs);
  return decision.allowed ? { allowed: true } : { allowed: false, retryAfterSeconds: decision.resetSeconds };
}

/**
 * Takes one verification from the key's cap for the UTC day. Atomic under any burst: the
 * key's day counter is one Durable Object, which admits calls one at a time.
 */
export async function takeFromDailyCap(
  limiters: DurableObjectNamespace<KeyLimiter>,
  keyId: string,
  cap: number,
  now: number,
): Promise<Admission & { cap: number; used: number }> {
  const day = utcDayStart(now);
  const decision = await limiters.get(limiters.idFromName(`publishable:${keyId}:day`)).takeDaily(cap, day);
  return decision.allowed
    ? { allowed: true, cap, used: decision.used }
    : {
        allowed: false,
        cap,
        used: decision.used,
        retryAfterSeconds: Math.max(1, Math.ceil((day + DAY_MS - now) / 1000)),
      };
}

/**
 * Whether `token` passes the customer's Turnstile (their secret key, sealed under
 * `secretsKey`), checked with Siteverify like rcpt's own sign-up form (accounts/turnstile.ts).
 */
export async function publishableTurnstilePasses(
  input: {
    db: Db;
    /** The key whose row holds the sealed secret. */
    keyId: string;
    sealedSecret: string;
    secretsKey: string | undefined;
    siteverifyUrl: string;
    token: string;
    clientAddress: string | null;
    /** The page's origin (one the key lists): the token must have been solved on its host. */
    origin: string;
  },
  fetcher: typeof fetch = fetch,
): Promise<boolean> {
  const config: TurnstileConfig = {
    // turnstilePasses asks Siteverify only when a site key is set; the customer's is on their page.
    TURNSTILE_SITE_KEY: 'customer',
    TURNSTILE_SECRET_KEY: await openStored(
      input.db,
      input.secretsKey,
      input.sealedSecret,
      turnstileSecretPlace(input.keyId),
    ),
    TURNSTILE_SITEVERIFY_URL: input.siteverifyUrl,
  };
  return turnstilePasses(
    config,
    input.token,
    input.clientAddress,
    { hostname: new URL(input.origin).hostname, action: PUBLISHABLE_TURNSTILE_ACTION },
    fetcher,
  );
}
