import { and, desc, eq, isNull, lt, or } from 'drizzle-orm';
import { type Db, prepare } from './db.ts';
import { API_KEY_INSERT, API_KEY_VALUES, apiKeyParams, lookupInsert, type NewApiKey } from './inserts.ts';
import { accountLookups, accountShards, accounts, apiKeys } from './schema.ts';
import { addLookup, directoryOf, type Shards } from './shards.ts';

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
  // The directory finds the key's account before the key exists (storage/shards.ts); a lookup left
  // by a refused insert names an account that has no such key, and that key is refused there.
  const inDirectory = directoryOf(db) === db;
  if (!inDirectory) await addLookup(db, { kind: 'key', value: key.keyHash, accountId: key.accountId });
  const lookup = inDirectory ? [prepare(d1, lookupInsert('key', key.keyHash, key.accountId))] : [];
  const [count, insert] = await d1.batch([
    d1.prepare(`SELECT (${activeKeys('?1')}) AS active`).bind(key.accountId),
    d1
      .prepare(`${API_KEY_INSERT} SELECT ${API_KEY_VALUES} WHERE (${activeKeys('?2')}) < ?15 RETURNING id`)
      .bind(...apiKeyParams(key), maxActive),
    ...lookup,
  ]);
  return {
    inserted: (insert?.results.length ?? 0) > 0,
    active: (count?.results[0] as { active: number } | undefined)?.active ?? 0,
  };
}

/**
 * A key's row, its account's balance at lookup time, whether the shared fleet may probe for it,
 * and the shard holding the account (storage/shards.ts).
 */
export type ApiKeyRecord = ApiKeyRow & { creditBalance: number; sharedFleetFallback: number; shard: number };

/** What a key's record reads: the key, and of its account the balance and the shared fleet's fallback. */
const KEY_RECORD_COLUMNS = {
  key: apiKeys,
  creditBalance: accounts.creditBalance,
  sharedFleetFallback: accounts.sharedFleetFallback,
};

/**
 * The key with this hash wherever its account lives, its account's balance at lookup time and
 * whether the shared fleet may take the account's probes: one query to the directory, which
 * answers the whole record for an account of its own shard (0), and one more to the account's
 * shard for any other.
 */
export async function findApiKeyByHash(shards: Shards, keyHash: string): Promise<ApiKeyRecord | undefined> {
  const [found] = await shards.directory
    .select({ shard: accountShards.shard, ...KEY_RECORD_COLUMNS })
    .from(accountLookups)
    .leftJoin(accountShards, eq(accountShards.accountId, accountLookups.accountId))
    .leftJoin(apiKeys, eq(apiKeys.keyHash, accountLookups.value))
    .leftJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .where(and(eq(accountLookups.kind, 'key'), eq(accountLookups.value, keyHash)))
    .limit(1);
  if (!found) return undefined;
  const shard = found.shard ?? 0;
  const row = shard === 0 ? found : await keyInShard(shards.db(shard), keyHash);
  if (!row?.key || row.creditBalance === null || row.sharedFleetFallback === null) return undefined;
  return {
    ...row.key,
    creditBalance: row.creditBalance,
    sharedFleetFallback: row.sharedFleetFallback,
    shard,
  };
}

async function keyInShard(db: Db, keyHash: string) {
  const [row] = await db
    .select(KEY_RECORD_COLUMNS)
    .from(apiKeys)
    .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .where(eq(apiKeys.keyHash, keyHash))
    .limit(1);
  return row;
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
