import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from './db.ts';
import { proberTokens } from './schema.ts';

export type ProberTokenRow = typeof proberTokens.$inferSelect;

export async function findLiveProberToken(db: Db, tokenHash: string): Promise<ProberTokenRow | undefined> {
  return db.query.proberTokens.findFirst({
    where: and(eq(proberTokens.tokenHash, tokenHash), isNull(proberTokens.revokedAt)),
  });
}

export async function insertProberToken(db: Db, token: typeof proberTokens.$inferInsert): Promise<void> {
  await db.insert(proberTokens).values(token);
}

export async function touchProberToken(db: Db, tokenId: string, now: number): Promise<void> {
  await db.update(proberTokens).set({ lastSeenAt: now }).where(eq(proberTokens.id, tokenId));
}
