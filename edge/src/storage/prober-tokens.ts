import { and, eq, isNull } from 'drizzle-orm';
import { type Db, prepare } from './db.ts';
import { type NewProberToken, proberTokenInsert } from './inserts.ts';
import { proberTokens } from './schema.ts';

export type ProberTokenRow = typeof proberTokens.$inferSelect;

export async function findLiveProberToken(db: Db, tokenHash: string): Promise<ProberTokenRow | undefined> {
  return db.query.proberTokens.findFirst({
    where: and(eq(proberTokens.tokenHash, tokenHash), isNull(proberTokens.revokedAt)),
  });
}

export async function insertProberToken(db: Db, token: NewProberToken): Promise<void> {
  await prepare(db.$client, proberTokenInsert(token)).run();
}

export async function touchProberToken(db: Db, tokenId: string, now: number): Promise<void> {
  await db.update(proberTokens).set({ lastSeenAt: now }).where(eq(proberTokens.id, tokenId));
}

/** Which of `tokenIds` are still live (not revoked, not deleted). */
export async function liveProberTokenIds(db: Db, tokenIds: readonly string[]): Promise<Set<string>> {
  const { results } = await db.$client
    .prepare(
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
