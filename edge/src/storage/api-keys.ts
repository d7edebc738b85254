import { and, desc, eq, isNull, lt, or } from 'drizzle-orm';
import type { Db } from './db.ts';
import { apiKeys } from './schema.ts';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export async function insertApiKey(db: Db, key: typeof apiKeys.$inferInsert): Promise<void> {
  await db.insert(apiKeys).values(key);
}

export async function findApiKeyByHash(db: Db, keyHash: string): Promise<ApiKeyRow | undefined> {
  return db.query.apiKeys.findFirst({ where: eq(apiKeys.keyHash, keyHash) });
}

export async function listApiKeys(db: Db, accountId: string): Promise<ApiKeyRow[]> {
  return db.query.apiKeys.findMany({
    where: eq(apiKeys.accountId, accountId),
    orderBy: desc(apiKeys.createdAt),
  });
}

/** Revokes a key of this account; returns false when there is no such live key. */
export async function revokeApiKey(db: Db, accountId: string, keyId: string, now: number): Promise<boolean> {
  const revoked = await db
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.accountId, accountId), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return revoked.length > 0;
}

/** Records use at most once a minute per key, so a busy key costs no write per request. */
export async function touchApiKey(db: Db, keyId: string, now: number): Promise<void> {
  await db
    .update(apiKeys)
    .set({ lastUsedAt: now })
    .where(and(eq(apiKeys.id, keyId), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, now - 60_000))));
}
