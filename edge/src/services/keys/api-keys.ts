import { parseCidr } from '@rcpt/shared/ip-ranges';
import { issueSecret } from '@rcpt/shared/secret-tokens';
import type { KeyLimiter, LimitDecision } from '../../objects/key-limiter.ts';
import {
  type DataMode,
  insertApiKeyWithin,
  markKeysReviewed as markReviewed,
  revokeApiKey,
  touchApiKey,
} from '../../storage/api-keys.ts';
import type { Db } from '../../storage/db.ts';
import type { NewApiKey } from '../../storage/inserts.ts';
import type { Shards } from '../../storage/shards.ts';
import { requireConfirmedEmail } from '../accounts/email-confirmation.ts';
import { type SealedPlace, seal } from '../accounts/secret-box.ts';
import { assertStoredWithin } from '../money/quotas.ts';
import { KEY_SCOPES, type KeyLimits, type KeyScope, keyLimitsOf } from './key-limits.ts';

// A key's limits are pure rules of their own (key-limits.ts): the key's object reads them too.
export { KEY_SCOPES, type KeyLimits, type KeyScope, keyHoldsScope, keyLimitsOf } from './key-limits.ts';

/** Who a request acts for: the account, the key it came with, and the key's mode. */
export interface Caller {
  accountId: string;
  /** The API key used; null for the dashboard (a signed-in person). */
  apiKeyId: string | null;
  mode: 'live' | 'test';
  /** The balance when the request was authenticated (a snapshot: charges read their own). */
  creditBalance: number;
  /**
   * Only the account's own probers may probe for it: it turned the shared fleet's fallback off
   * (docs/operations.md, "Customer-run probers"). Absent: the shared fleet may.
   */
  ownProbersOnly?: boolean;
}

export interface AuthenticatedKey {
  caller: Caller;
  /** The shard whose database holds the caller's account (storage/shards.ts). */
  shard: number;
  limits: KeyLimits;
  /** The request counted against the key's request rate, or null when it was not (see `admit`). */
  rate: LimitDecision | null;
}

/** Most address blocks and origins a key may list: each is checked on every request. */
export const MAX_KEY_LIST_ENTRIES = 50;

/**
 * The address blocks of a list typed by a person (one per line or comma-separated), in
 * canonical form, or the first problem found. An empty list is null: any address.
 */
export function parseAllowedCidrs(text: string): { blocks: string[] | null } | { problem: string } {
  const entries = listEntries(text);
  if (entries.length === 0) return { blocks: null };
  if (entries.length > MAX_KEY_LIST_ENTRIES)
    return { problem: `List at most ${MAX_KEY_LIST_ENTRIES} blocks.` };
  const blocks: string[] = [];
  for (const entry of entries) {
    const block = parseCidr(entry);
    if (!block) {
      return {
        problem: `“${entry}” is not an address block: write 203.0.113.0/24, 2001:db8::/32 or one address.`,
      };
    }
    if (!blocks.includes(block.text)) blocks.push(block.text);
  }
  return { blocks };
}

/**
 * The origins of a list typed by a person, each `https://host` or `http://host:port` as a
 * browser sends it in `Origin` (RFC 6454 §6.1: scheme, host and port, no path), or the first
 * problem found. At least one is needed.
 */
export function parseAllowedOrigins(text: string): { origins: string[] } | { problem: string } {
  const entries = listEntries(text);
  if (entries.length === 0) return { problem: 'List at least one origin, e.g. https://www.example.com.' };
  if (entries.length > MAX_KEY_LIST_ENTRIES)
    return { problem: `List at most ${MAX_KEY_LIST_ENTRIES} origins.` };
  const origins: string[] = [];
  for (const entry of entries) {
    const origin = originOf(entry);
    if (!origin) {
      return {
        problem: `“${entry}” is not an origin: write the scheme, host and port only, e.g. https://shop.example.com.`,
      };
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  return { origins };
}

/** The serialised origin `entry` names, or null when it names more (a path, a query) or no web origin. */
function originOf(entry: string): string | null {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return null;
  }
  const bare = url.pathname === '/' && url.search === '' && url.hash === '' && !url.username && !url.password;
  const web = url.protocol === 'https:' || url.protocol === 'http:';
  return bare && web ? url.origin : null;
}

function listEntries(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/**
 * The KeyLimiter object that keeps the record of the key whose hash is `keyHash`
 * (objects/key-limiter.ts): the hash, not the key's id, since a request brings only the key.
 */
export function keyRecordKeeper(limiters: KeyLimiters, keyHash: string): DurableObjectStub<KeyLimiter> {
  return limiters.getByName(`api-key:${keyHash}`);
}

type KeyLimiters = DurableObjectNamespace<KeyLimiter>;

/**
 * The caller behind a key hash, or null for an unknown or revoked key. The key's record comes
 * from its KeyLimiter object, which reads D1 only when it holds none (or an old one), and which
 * counts the request against the key's request rate in the same call when the key may be used
 * from `request.clientAddress` (objects/key-limiter.ts, `admit`).
 */
export async function authenticateApiKey(
  deps: { shards: Shards; limiters: KeyLimiters },
  keyHash: string,
  now: number,
  inBackground: (task: Promise<unknown>) => void,
  request: { clientAddress: string | null },
): Promise<AuthenticatedKey | null> {
  const {
    record: key,
    touch,
    rate,
  } = await keyRecordKeeper(deps.limiters, keyHash).admit(keyHash, now, request);
  if (!key || key.revokedAt !== null || !constantTimeEqual(key.keyHash, keyHash)) return null;
  // "Last used" is kept to the minute: a busy key costs no write per request.
  // A record kept by the key's object from before the directory has no shard: its account is in
  // shard 0, as every account then was.
  const shard = key.shard ?? 0;
  if (touch) inBackground(touchApiKey(deps.shards.db(shard), key.id, now));
  return {
    shard,
    caller: {
      accountId: key.accountId,
      apiKeyId: key.id,
      mode: key.mode,
      creditBalance: key.creditBalance,
      ownProbersOnly: key.sharedFleetFallback === 0,
    },
    limits: keyLimitsOf(key),
    rate,
  };
}

/**
 * The data a caller sees: an API key only its own mode's jobs and history; the dashboard (a
 * signed-in person, no key) every mode's.
 */
export function dataModeOf(caller: Caller): DataMode | undefined {
  return caller.apiKeyId === null ? undefined : caller.mode;
}

export interface CreatedApiKey {
  id: string;
  secret: string; // shown once
  prefix: string;
}

/**
 * A new key, unless the account already has `maxActiveKeys` active ones (429 QUOTA_EXCEEDED). A
 * live key needs the account's email confirmed (403 EMAIL_NOT_CONFIRMED); a test key does not.
 */
export async function createApiKey(
  db: Db,
  input: {
    accountId: string;
    name: string;
    mode: 'live' | 'test';
    maxActiveKeys: number;
    now: number;
    /** The scopes it holds (from parseAllowed… callers); omitted or null: every scope. */
    scopes?: readonly KeyScope[] | null;
    /** Canonical address blocks (parseAllowedCidrs); omitted or null: any address. */
    allowedCidrs?: readonly string[] | null;
  },
): Promise<CreatedApiKey> {
  if (input.mode === 'live') await requireConfirmedEmail(db, input.accountId);
  const issued = await issueSecret(input.mode === 'live' ? 'liveKey' : 'testKey');
  const everyScope = !input.scopes || KEY_SCOPES.every((scope) => input.scopes?.includes(scope));
  return insertKey(
    db,
    {
      accountId: input.accountId,
      name: input.name,
      mode: input.mode,
      keyHash: issued.hash,
      prefix: issued.prefix,
      createdAt: input.now,
      scopes: everyScope ? null : JSON.stringify(KEY_SCOPES.filter((scope) => input.scopes?.includes(scope))),
      allowedCidrs: input.allowedCidrs?.length ? JSON.stringify(input.allowedCidrs) : null,
    },
    issued.secret,
    input,
  );
}

/**
 * A publishable key (`rk_pub_…`, docs/publishable-keys.md): live, the single verify only, from
 * `allowedOrigins` only, at most `dailyCap` verifications a UTC day; with `turnstileSecret`
 * (the customer's Turnstile secret key, sealed under `secretsKey`) every call needs a token.
 */
export async function createPublishableKey(
  db: Db,
  input: {
    accountId: string;
    name: string;
    allowedOrigins: readonly string[];
    dailyCap: number;
    turnstileSecret: string | null;
    secretsKey: string | undefined;
    maxActiveKeys: number;
    now: number;
  },
): Promise<CreatedApiKey> {
  await requireConfirmedEmail(db, input.accountId);
  const issued = await issueSecret('publishableKey');
  // Made first: the sealed Turnstile secret is bound to the key's row.
  const id = crypto.randomUUID();
  return insertKey(
    db,
    {
      id,
      accountId: input.accountId,
      name: input.name,
      mode: 'live',
      keyHash: issued.hash,
      prefix: issued.prefix,
      createdAt: input.now,
      kind: 'publishable',
      scopes: JSON.stringify(['verify']),
      allowedOrigins: JSON.stringify(input.allowedOrigins),
      dailyCap: input.dailyCap,
      publishableKey: issued.secret,
      turnstileSecret: input.turnstileSecret
        ? await seal(input.secretsKey, input.turnstileSecret, turnstileSecretPlace(id))
        : null,
    },
    issued.secret,
    input,
  );
}

/** Where a publishable key's Turnstile secret is stored, sealed. */
export function turnstileSecretPlace(keyId: string): SealedPlace {
  return { table: 'api_keys', column: 'turnstile_secret', rowId: keyId };
}

async function insertKey(
  db: Db,
  key: Omit<NewApiKey, 'id'> & { id?: string },
  secret: string,
  input: { maxActiveKeys: number; now: number },
): Promise<CreatedApiKey> {
  const id = key.id ?? crypto.randomUUID();
  const outcome = await insertApiKeyWithin(db, { id, ...key }, input.maxActiveKeys);
  assertStoredWithin(outcome, { quota: 'api_keys', limit: input.maxActiveKeys, now: input.now });
  return { id, secret, prefix: key.prefix };
}

function constantTimeEqual(a: string, b: string): boolean {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  return left.byteLength === right.byteLength && crypto.subtle.timingSafeEqual(left, right);
}

/**
 * Revokes the account's key `keyId`: D1 first, then the key's KeyLimiter object forgets its
 * record, so the very next request reads D1 and fails. False if it was not live.
 */
export async function revokeKey(
  deps: { db: Db; limiters: KeyLimiters },
  accountId: string,
  keyId: string,
  now: number,
): Promise<boolean> {
  const keyHash = await revokeApiKey(deps.db, accountId, keyId, now);
  if (keyHash === null) return false;
  await forgetKeyRecords(deps.limiters, [keyHash]);
  return true;
}

/** Has the KeyLimiter objects of these key hashes forget their records (after a revocation). */
export async function forgetKeyRecords(limiters: KeyLimiters, keyHashes: readonly string[]): Promise<void> {
  await Promise.all(keyHashes.map((keyHash) => keyRecordKeeper(limiters, keyHash).forget()));
}

/**
 * Marks the account's keys reviewed after a password reset: the keys page stops listing the keys
 * made before the reset at `before` (only the reset the page showed; a later one is listed again).
 */
export function markKeysReviewed(db: Db, accountId: string, before: number): Promise<void> {
  return markReviewed(db, accountId, before);
}
