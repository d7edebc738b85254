// Credit balances. Movements are built in ledger.ts and run in their callers' batches.
import type { Db } from './db.ts';

export async function readBalance(db: Db, accountId: string): Promise<number | null> {
  const row = await db.$client
    .prepare('SELECT credit_balance FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ credit_balance: number }>();
  return row?.credit_balance ?? null;
}
