// Prober tokens: the shared fleet's and customers' own (docs/operations.md, "Customer-run probers").
// The hub finds them across accounts, so they live in the directory's database whatever database
// the caller holds (storage/shards.ts); the account's own setting of the shared fleet's fallback
// is read where its account lives.
import { and, desc, eq, isNull } from 'drizzle-orm';
import { type Db, prepare } from './db.ts';
import { type NewProberToken, proberTokenInsert } from './inserts.ts';
import { proberTokens } from './schema.ts';
import { directoryOf } from './shards.ts';

export type ProberTokenRow = typeof proberTokens.$inferSelect;

export async function findLiveProberToken(db: Db, tokenHash: string): Promise<ProberTokenRow | undefined> {
  return directoryOf(db).query.proberTokens.findFirst({
    where: and(eq(proberTokens.tokenHash, tokenHash), isNull(proberTokens.revokedAt)),
  });
}

export async function insertProberToken(db: Db, token: NewProberToken): Promise<void> {
  await prepare(directoryOf(db).$client, proberTokenInsert(token)).run();
}

/**
 * Stores an account's token only while the account has fewer than `maxActive` live ones (one
 * statement, so two concurrent creations cannot both take the last slot). Returns whether it
 * did, and how many live tokens the account had.
 */
export async function insertProberTokenWithin(
  db: Db,
  token: NewProberToken & { accountId: string },
  maxActive: number,
): Promise<{ inserted: boolean; active: number }> {
  const d1 = directoryOf(db).$client;
  const [count, insert] = await d1.batch([
    d1
      .prepare('SELECT COUNT(*) AS active FROM prober_tokens WHERE account_id = ?1 AND revoked_at IS NULL')
      .bind(token.accountId),
    prepare(d1, proberTokenInsert(token, maxActive)),
  ]);
  return {
    inserted: (insert?.results.length ?? 0) > 0,
    active: (count?.results[0] as { active: number } | undefined)?.active ?? 0,
  };
}

/** The account's prober tokens, revoked ones too, the newest first. */
export async function listAccountProberTokens(db: Db, accountId: string): Promise<ProberTokenRow[]> {
  return directoryOf(db).query.proberTokens.findMany({
    where: eq(proberTokens.accountId, accountId),
    orderBy: [desc(proberTokens.createdAt)],
  });
}

/** The regions the account's live tokens are for: where its own probers link. */
export async function accountProberRegions(db: Db, accountId: string): Promise<string[]> {
  const rows = await directoryOf(db)
    .selectDistinct({ region: proberTokens.region })
    .from(proberTokens)
    .where(and(eq(proberTokens.accountId, accountId), isNull(proberTokens.revokedAt)));
  return rows.map((row) => row.region).sort();
}

/** Revokes the account's live token `tokenId`; false when it has no such live token. */
export async function revokeAccountProberToken(
  db: Db,
  accountId: string,
  tokenId: string,
  now: number,
): Promise<boolean> {
  const revoked = await directoryOf(db)
    .update(proberTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(proberTokens.id, tokenId),
        eq(proberTokens.accountId, accountId),
        isNull(proberTokens.revokedAt),
      ),
    )
    .returning({ id: proberTokens.id });
  return revoked.length > 0;
}

export async function touchProberToken(db: Db, tokenId: string, now: number): Promise<void> {
  await directoryOf(db).update(proberTokens).set({ lastSeenAt: now }).where(eq(proberTokens.id, tokenId));
}

/** Which of `tokenIds` are still live (not revoked, not deleted). */
export async function liveProberTokenIds(db: Db, tokenIds: readonly string[]): Promise<Set<string>> {
  const { results } = await directoryOf(db)
    .$client.prepare(
      'SELECT id FROM prober_tokens WHERE id IN (SELECT value FROM json_each(?1)) AND revoked_at IS NULL',
    )
    .bind(JSON.stringify(tokenIds))
    .all<{ id: string }>();
  return new Set(results.map((row) => row.id));
}

/**
 * Which of `accountIds` turned the shared fleet's fallback off: only their own probers probe for
 * them (docs/operations.md, "Customer-run probers").
 */
export async function ownProbersOnlyAccounts(db: Db, accountIds: readonly string[]): Promise<Set<string>> {
  if (accountIds.length === 0) return new Set();
  const { results } = await db.$client
    .prepare(
      'SELECT id FROM accounts WHERE id IN (SELECT value FROM json_each(?1)) AND shared_fleet_fallback = 0',
    )
    .bind(JSON.stringify(accountIds))
    .all<{ id: string }>();
  return new Set(results.map((row) => row.id));
}
