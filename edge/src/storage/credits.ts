// Credit movements. Every change of a balance is a conditional UPDATE in the same D1 batch
// (one transaction) as its ledger row: never read-modify-write in code.
import type { Db } from './db.ts';

export type LedgerReason = 'signup_grant' | 'grant' | 'verify' | 'bulk_charge' | 'bulk_refund';

export interface CreditMovement {
  accountId: string;
  amount: number; // > 0
  reason: LedgerReason;
  reference: string;
  now: number;
}

/**
 * Takes `amount` credits if the balance covers it. Returns the new balance, or null (and
 * changes nothing) when it does not.
 */
export async function debitCredits(db: Db, movement: CreditMovement): Promise<number | null> {
  const d1 = db.$client;
  const { accountId, amount, reason, reference, now } = movement;
  // Both statements carry the same condition and run in one transaction, so either both
  // apply or neither does.
  const [, update] = await d1.batch<{ credit_balance: number }>([
    d1
      .prepare(
        `INSERT INTO credit_ledger (account_id, delta, balance_after, reason, reference, created_at)
         SELECT id, -?2, credit_balance - ?2, ?3, ?4, ?5 FROM accounts WHERE id = ?1 AND credit_balance >= ?2`,
      )
      .bind(accountId, amount, reason, reference, now),
    d1
      .prepare(
        'UPDATE accounts SET credit_balance = credit_balance - ?2 WHERE id = ?1 AND credit_balance >= ?2 RETURNING credit_balance',
      )
      .bind(accountId, amount),
  ]);
  return update?.results[0]?.credit_balance ?? null;
}

/** Adds credits (grant or refund). Returns the new balance, or null if the account does not exist. */
export async function creditCredits(db: Db, movement: CreditMovement): Promise<number | null> {
  const d1 = db.$client;
  const { accountId, amount, reason, reference, now } = movement;
  const [, update] = await d1.batch<{ credit_balance: number }>([
    d1
      .prepare(
        `INSERT INTO credit_ledger (account_id, delta, balance_after, reason, reference, created_at)
         SELECT id, ?2, credit_balance + ?2, ?3, ?4, ?5 FROM accounts WHERE id = ?1`,
      )
      .bind(accountId, amount, reason, reference, now),
    d1
      .prepare(
        'UPDATE accounts SET credit_balance = credit_balance + ?2 WHERE id = ?1 RETURNING credit_balance',
      )
      .bind(accountId, amount),
  ]);
  return update?.results[0]?.credit_balance ?? null;
}

export async function readBalance(db: Db, accountId: string): Promise<number | null> {
  const row = await db.$client
    .prepare('SELECT credit_balance FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ credit_balance: number }>();
  return row?.credit_balance ?? null;
}
