import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from './db.ts';
import { operatorTokens, proberTokens } from './schema.ts';

export type OperatorTokenRow = typeof operatorTokens.$inferSelect;

export async function findLiveOperatorToken(
  db: Db,
  tokenHash: string,
): Promise<OperatorTokenRow | undefined> {
  return db.query.operatorTokens.findFirst({
    where: and(eq(operatorTokens.tokenHash, tokenHash), isNull(operatorTokens.revokedAt)),
  });
}

export async function touchOperatorToken(db: Db, tokenId: string, now: number): Promise<void> {
  await db.update(operatorTokens).set({ lastSeenAt: now }).where(eq(operatorTokens.id, tokenId));
}

/** The regions live prober tokens are issued for: where probers can link, so where hubs are. */
export async function proberRegions(db: Db): Promise<string[]> {
  const rows = await db
    .selectDistinct({ region: proberTokens.region })
    .from(proberTokens)
    .where(isNull(proberTokens.revokedAt));
  return rows.map((row) => row.region).sort();
}
