import { issueSecret } from '@rcpt/shared/secret-tokens';
import type { Caller } from '../app-env.ts';
import {
  type DataMode,
  findApiKeyByHash,
  insertApiKeyWithin,
  LAST_USED_RESOLUTION_MS,
  touchApiKey,
} from '../storage/api-keys.ts';
import type { Db } from '../storage/db.ts';
import { requireConfirmedEmail } from './email-confirmation.ts';
import { quotaExceeded } from './quotas.ts';

/** The caller behind a key hash, or null for an unknown or revoked key. */
export async function authenticateApiKey(
  db: Db,
  keyHash: string,
  now: number,
  inBackground: (task: Promise<unknown>) => void,
): Promise<Caller | null> {
  const key = await findApiKeyByHash(db, keyHash);
  if (!key || key.revokedAt !== null || !constantTimeEqual(key.keyHash, keyHash)) return null;
  // "Last used" is kept to the minute: a busy key costs no write per request.
  if (key.lastUsedAt === null || now - key.lastUsedAt > LAST_USED_RESOLUTION_MS)
    inBackground(touchApiKey(db, key.id, now));
  return { accountId: key.accountId, apiKeyId: key.id, mode: key.mode, creditBalance: key.creditBalance };
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
  input: { accountId: string; name: string; mode: 'live' | 'test'; maxActiveKeys: number; now: number },
): Promise<CreatedApiKey> {
  if (input.mode === 'live') await requireConfirmedEmail(db, input.accountId);
  const issued = await issueSecret(input.mode === 'live' ? 'liveKey' : 'testKey');
  const id = crypto.randomUUID();
  const outcome = await insertApiKeyWithin(
    db,
    {
      id,
      accountId: input.accountId,
      name: input.name,
      mode: input.mode,
      keyHash: issued.hash,
      prefix: issued.prefix,
      createdAt: input.now,
    },
    input.maxActiveKeys,
  );
  if (!outcome.inserted) {
    throw quotaExceeded({
      quota: 'api_keys',
      limit: input.maxActiveKeys,
      used: outcome.active,
      requested: 1,
      now: input.now,
    });
  }
  return { id, secret: issued.secret, prefix: issued.prefix };
}

function constantTimeEqual(a: string, b: string): boolean {
  const left = new TextEncoder().encode(a);
  const right = new TextEncoder().encode(b);
  return left.byteLength === right.byteLength && crypto.subtle.timingSafeEqual(left, right);
}
