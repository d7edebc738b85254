// Credit balances: movements are built in ledger.ts; this runs a lone movement and reads.
import { type Db, prepare } from './db.ts';
import { type CreditMovement, debit } from './ledger.ts';

/**
 * Takes `amount` credits if the balance covers it, with its ledger row. Returns the new
 * balance, or null (and changes nothing) when it does not.
 */
export async function debitCredits(db: Db, movement: CreditMovement): Promise<number | null> {
  const d1 = db.$client;
  const { entry, balance } = debit(movement);
  const [, update] = await d1.batch<{ credit_balance: number }>([prepare(d1, entry), prepare(d1, balance)]);
  return update?.results[0]?.credit_balance ?? null;
}

export async function readBalance(db: Db, accountId: string): Promise<number | null> {
  const row = await db.$client
    .prepare('SELECT credit_balance FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ credit_balance: number }>();
  return row?.credit_balance ?? null;
}
