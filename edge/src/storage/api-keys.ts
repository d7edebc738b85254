import { and, desc, eq, isNull, lt, or } from 'drizzle-orm';
import type { Db } from './db.ts';
import { API_KEY_INSERT, API_KEY_VALUES, apiKeyParams, type NewApiKey } from './inserts.ts';
import { accounts, apiKeys } from './schema.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** Whose data a request sees: a key sees its own mode's jobs and history (as Stripe separates test data). */
export type DataMode = 'live' | 'test';

/**
 * SQL condition on a table's `api_key_id` column for `mode`: test data is what test keys made;
 * live data is what live keys and the dashboard (no key) made.
 */
export function dataModeSql(mode: DataMode): string {
  return mode === 'test'
    ? "api_key_id IN (SELECT id FROM api_keys WHERE mode = 'test')"
    : "(api_key_id IS NULL OR api_key_id IN (SELECT id FROM api_keys WHERE mode = 'live'))";
}

/**
 * Inserts the key only while the account has fewer than `maxActive` active keys, the count
 * and the insert in one transaction (so two concurrent creations cannot both take the last
 * slot). Returns the number of active keys before the insert, and whether it happened.
 */
export async function insertApiKeyWithin(
  db: Db,
  key: NewApiKey,
  maxActive: number,
): Promise<{ inserted: boolean; active: number }> {
  const d1 = db.$client;
  const activeKeys = (account: string) =>
    `SELECT COUNT(*) FROM api_keys WHERE account_id = ${account} AND revoked_at IS NULL`;
  const [count, insert] = await d1.batch([
    d1.prepare(`SELECT (${activeKeys('?1')}) AS active`).bind(key.accountId),
    d1
      .prepare(`${API_KEY_INSERT} SELECT ${API_KEY_VALUES} WHERE (${activeKeys('?2')}) < ?15 RETURNING id`)
      .bind(...apiKeyParams(key), maxActive),
  ]);
  return {
    inserted: (insert?.results.length ?? 0) > 0,
    active: (count?.results[0] as { active: number } | undefined)?.active ?? 0,
  };
}

/** A key's row, its account's balance at lookup time and whether the shared fleet may probe for it. */
export type ApiKeyRecord = ApiKeyRow & { creditBalance: number; sharedFleetFallback: number };

/**
 * The key with this hash, its account's balance at lookup time and whether the shared fleet may
 * take the account's probes, in one query.
 */
export async function findApiKeyByHash(db: Db, keyHash: string): Promise<ApiKeyRecord | undefined> {
  const [row] = await db
    .select({
      key: apiKeys,
      creditBalance: accounts.creditBalance,
      sharedFleetFallback: accounts.sharedFleetFallback,
    })
    .from(apiKeys)
    .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .where(eq(apiKeys.keyHash, keyHash))
    .limit(1);
  return row
    ? { ...row.key, creditBalance: row.creditBalance, sharedFleetFallback: row.sharedFleetFallback }
    : undefined;
}

export async function listApiKeys(db: Db, accountId: string): Promise<ApiKeyRow[]> {
  return db.query.apiKeys.findMany({
    where: eq(apiKeys.accountId, accountId),
    orderBy: desc(apiKeys.createdAt),
  });
}

/** Revokes a key of this account; returns its hash, or null when there is no such live key. */
export async function revokeApiKey(
  db: Db,
  accountId: string,
  keyId: string,
  now: number,
): Promise<string | null> {
  const revoked = await db
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)))
    .returning({ keyHash: apiKeys.keyHash });
  return revoked[0]?.keyHash ?? null;
}

export const LAST_USED_RESOLUTION_MS = 60_000;

/** Records use at most once a minute per key, so a busy key costs no write per request. */
export async function touchApiKey(db: Db, keyId: string, now: number): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: now })
    .where(
      and(
        eq(apiKeys.id, keyId),
        or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, now - LAST_USED_RESOLUTION_MS)),
      ),
    );
}

/** The owner has looked at the keys made before a password reset: the keys page stops listing them. */
export async function markKeysReviewed(db: Db, accountId: string, reviewedBefore: number): Promise<void> {
  await db.$client
    .prepare('UPDATE accounts SET keys_review_before = NULL WHERE id = ?1 AND keys_review_before <= ?2')
    .bind(accountId, reviewedBefore)
    .run();
}
