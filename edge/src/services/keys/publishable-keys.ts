// What a publishable key's call must pass beyond authentication (docs/publishable-keys.md), in
// this order: its client network's share (counted before anything else, so that one network
// exhausts only its own), the request's shape, the customer's Turnstile when on, then the
// key-wide rate limit and the key's day — its daily cap and its storage budget — so that only
// a call that passed everything before takes from what the key's other visitors share. Each is
// counted by its own KeyLimiter object; what a page learns from the answer is `pageAnswer`.
import {
  MAX_EMAIL_INPUT_LENGTH,
  type VerificationResult,
  type VerifyResponse,
} from '@rcpt/shared/contract/api';
import type { KeyLimiter, LimitDecision, PublishableDay } from '../../objects/key-limiter.ts';
import type { Db } from '../../storage/db.ts';
import { RESULT_BYTES, ROW_OVERHEAD_BYTES } from '../../storage/storage-budget.ts';
import { HOLDER_NETWORK, networkPrefix } from '../accounts/client-network.ts';
import { openStored } from '../accounts/secret-box.ts';
import {
  PUBLISHABLE_TURNSTILE_ACTION,
  type TurnstileConfig,
  turnstilePasses,
} from '../accounts/turnstile.ts';
import { DAY_MS, utcDayStart } from '../money/quotas.ts';
import { turnstileSecretPlace } from './api-keys.ts';

/** Calls one client network (accounts/client-network.ts, HOLDER_NETWORK) may make with one publishable key per minute. */
export const PUBLISHABLE_PER_CLIENT = { limit: 10, windowMs: 60_000 } as const;
/** The daily cap a new publishable key gets unless the customer sets another, and its bounds. */
export const DAILY_CAP = { default: 1_000, min: 1, max: 1_000_000 } as const;
/** The client networks the key's dashboard page names, busiest first. */
export const TOP_NETWORKS_SHOWN = 10;

export type Admission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** The client network a call is counted under: its HOLDER_NETWORK, or `unknown` without an address. */
export function clientNetworkOf(clientAddress: string | null): string {
  return clientAddress === null ? 'unknown' : networkPrefix(clientAddress, HOLDER_NETWORK);
}

/** Counts the call against its client network's share of the key, before anything else is read. */
export async function admitPublishableClient(
  limiters: DurableObjectNamespace<KeyLimiter>,
  keyId: string,
  network: string,
): Promise<LimitDecision> {
  const limiter = limiters.get(limiters.idFromName(`publishable:${keyId}:net:${network}`));
  return limiter.hit(PUBLISHABLE_PER_CLIENT.limit, PUBLISHABLE_PER_CLIENT.windowMs);
}

/**
 * The most one publishable call stores, booked against the key's storage budget when it is
 * admitted (docs/publishable-keys.md): its history row and, sent with an Idempotency-Key, the
 * answer kept for its retries; each a row, a result without evidence (which a publishable call
 * never asks for) and the address at most twice.
 */
export const PUBLISHABLE_CALL_BYTES = 2 * (ROW_OVERHEAD_BYTES + RESULT_BYTES + 2 * MAX_EMAIL_INPUT_LENGTH);

export type DayAdmission =
  | { allowed: true; capLeft: number }
  | { allowed: false; refused: 'cap' | 'storage'; use: PublishableDay; retryAfterSeconds: number };

/**
 * Takes one call from the key's day: its cap and its storage budget (`storageLimit` bytes).
 * Atomic under any burst: the key's day is one Durable Object, which admits calls one at a time.
 */
export async function takeFromKeyDay(
  limiters: DurableObjectNamespace<KeyLimiter>,
  call: { keyId: string; cap: number; network: string; storageLimit: number; now: number },
): Promise<DayAdmission> {
  const day = utcDayStart(call.now);
  const decision = await dayOf(limiters, call.keyId).takePublishableDay({
    day,
    cap: call.cap,
    network: call.network,
    bytes: PUBLISHABLE_CALL_BYTES,
    storageLimit: call.storageLimit,
  });
  if (decision.refused === null) return { allowed: true, capLeft: Math.max(0, call.cap - decision.use.used) };
  return {
    allowed: false,
    refused: decision.refused,
    use: decision.use,
    retryAfterSeconds: Math.max(1, Math.ceil((day + DAY_MS - call.now) / 1000)),
  };
}

/** The key's day so far, for its dashboard page: calls and bytes taken, and the busiest client networks. */
export async function publishableKeyDay(
  limiters: DurableObjectNamespace<KeyLimiter>,
  keyId: string,
  now: number,
): Promise<{ used: number; bytes: number; topNetworks: { network: string; calls: number }[] }> {
  const use = await dayOf(limiters, keyId).publishableDayOf(utcDayStart(now));
  const topNetworks = Object.entries(use.networks)
    .map(([network, calls]) => ({ network, calls }))
    .sort((a, b) => b.calls - a.calls || a.network.localeCompare(b.network))
    .slice(0, TOP_NETWORKS_SHOWN);
  return { used: use.used, bytes: use.bytes, topNetworks };
}

function dayOf(limiters: DurableObjectNamespace<KeyLimiter>, keyId: string) {
  return limiters.get(limiters.idFromName(`publishable:${keyId}:day`));
}

/**
 * What a page's visitor is told (docs/publishable-keys.md, "What the page sees"): the verdict
 * without its evidence (the SMTP dialogue, rcpt's egress) or `meta.cached`, and, as
 * `creditsRemaining`, what is left of the key's daily cap, never the account's balance.
 */
export function pageAnswer(result: VerificationResult, capLeft: number): VerifyResponse {
  const { evidence: _evidence, ...verdict } = result;
  const { cached: _cached, ...meta } = verdict.meta;
  return { success: true, data: { ...verdict, meta }, creditsRemaining: capLeft };
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
