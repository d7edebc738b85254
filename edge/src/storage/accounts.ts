import { eq } from 'drizzle-orm';
import type { Db } from './db.ts';
import { accounts, creditLedger } from './schema.ts';

export interface NewAccount {
  id: string;
  email: string | null;
  passwordHash: string | null;
  initialCredits: number;
  now: number;
}

/** Creates an account and its opening ledger row in one batch. */
export async function insertAccount(db: Db, account: NewAccount): Promise<void> {
  await db.batch([
    db.insert(accounts).values({
      id: account.id,
      email: account.email,
      passwordHash: account.passwordHash,
      creditBalance: account.initialCredits,
      createdAt: account.now,
    }),
    db.insert(creditLedger).values({
      accountId: account.id,
      delta: account.initialCredits,
      balanceAfter: account.initialCredits,
      reason: 'signup_grant',
      reference: account.id,
      createdAt: account.now,
    }),
  ]);
}

export async function findAccount(db: Db, accountId: string) {
  return db.query.accounts.findFirst({ where: eq(accounts.id, accountId) });
}

export async function findAccountByEmail(db: Db, email: string) {
  return db.query.accounts.findFirst({ where: eq(accounts.email, email) });
}

export interface AccountUsage {
  singleVerifications: number;
  batchJobs: number;
  creditsSpent: number;
  creditsRefunded: number;
}

export async function accountUsage(db: Db, accountId: string): Promise<AccountUsage> {
  const row = await db.$client
    .prepare(
      `SELECT
         (SELECT COUNT(*) FROM verifications WHERE account_id = ?1 AND kind = 'single') AS singleVerifications,
         (SELECT COUNT(*) FROM jobs WHERE account_id = ?1) AS batchJobs,
         (SELECT COALESCE(-SUM(delta), 0) FROM credit_ledger WHERE account_id = ?1 AND reason IN ('verify', 'bulk_charge')) AS creditsSpent,
         (SELECT COALESCE(SUM(delta), 0) FROM credit_ledger WHERE account_id = ?1 AND reason = 'bulk_refund') AS creditsRefunded`,
    )
    .bind(accountId)
    .first<AccountUsage>();
  return row ?? { singleVerifications: 0, batchJobs: 0, creditsSpent: 0, creditsRefunded: 0 };
}
