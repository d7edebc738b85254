import { eq } from 'drizzle-orm';
import {
  type AccountSettingsChange,
  accountSettingsOf,
  accountSettingsUpdate,
  liveKeyHashesSelect,
  type StoredAccountSettings,
} from './account-settings.ts';
import { type Db, prepare } from './db.ts';
import { accountCreation, accountShardInsert, type NewAccount } from './inserts.ts';
import { signupGrantOnConfirmation } from './ledger.ts';
import { accounts } from './schema.ts';
import { directoryOf, placeAccount } from './shards.ts';

/**
 * Runs `accountCreation` in one batch, in `db`'s shard (storage/shards.ts): the directory's row
 * for the account is in the same batch when `db` is the directory's, else written first.
 */
export async function insertAccount(db: Db, account: NewAccount): Promise<void> {
  const d1 = db.$client;
  const inDirectory = directoryOf(db) === db;
  if (!inDirectory) await placeAccount(db, account.id);
  const statements = [
    ...(inDirectory ? [accountShardInsert(account.id, 0)] : []),
    ...accountCreation(account),
  ];
  await d1.batch(statements.map((statement) => prepare(d1, statement)));
}

/** A dashboard sign-up: no credits and no confirmation until the owner follows the emailed link. */
export async function insertUnconfirmedAccount(
  db: Db,
  account: { id: string; email: string; passwordHash: string; now: number },
): Promise<void> {
  // Sign-ups stay in shard 0 (the directory's database) until the sign-up's cross-account rules
  // (one email, one sign-up grant a mailbox) are kept across shards (docs/architecture.md).
  const d1 = db.$client;
  await d1.batch([
    prepare(d1, accountShardInsert(account.id, 0)),
    d1
      .prepare(
        'INSERT INTO accounts (id, email, password_hash, credit_balance, created_at) VALUES (?1, ?2, ?3, 0, ?4)',
      )
      .bind(account.id, account.email, account.passwordHash, account.now),
  ]);
}

/**
 * Confirms the account's email and grants its sign-up credits in one transaction, if the
 * account still has this email and is not confirmed yet, and no other account has had the
 * grant of the same mailbox (ledger.ts `signupGrantOnConfirmation`). Null when it was already
 * confirmed (or is gone): nothing moved.
 */
export async function confirmAccountEmail(
  db: Db,
  confirmation: { accountId: string; email: string; mailbox: string; credits: number; now: number },
): Promise<{ creditBalance: number; granted: boolean } | null> {
  const d1 = db.$client;
  const grant = signupGrantOnConfirmation({
    accountId: confirmation.accountId,
    email: confirmation.email,
    mailbox: confirmation.mailbox,
    amount: confirmation.credits,
    now: confirmation.now,
  });
  const [, , balance] = await d1.batch<{ credit_balance: number; granted: number }>([
    prepare(d1, grant.claim),
    prepare(d1, grant.entry),
    prepare(d1, grant.balance),
  ]);
  const row = balance?.results[0];
  return row ? { creditBalance: row.credit_balance, granted: row.granted === 1 } : null;
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
         (SELECT COALESCE(-SUM(delta), 0) FROM credit_ledger WHERE account_id = ?1 AND reason IN ('verify', 'bulk_charge', 'recheck_charge')) AS creditsSpent,
         (SELECT COALESCE(SUM(delta), 0) FROM credit_ledger WHERE account_id = ?1 AND reason IN ('verify_refund', 'bulk_refund')) AS creditsRefunded`,
    )
    .bind(accountId)
    .first<AccountUsage>();
  return row ?? { singleVerifications: 0, batchJobs: 0, creditsSpent: 0, creditsRefunded: 0 };
}

/**
 * Changes the account's settings given (AccountSettings in the API) and returns them all with the
 * hashes of the account's live keys, in one round trip; null: no such account.
 */
export async function updateAccountSettings(db: Db, accountId: string, changes: AccountSettingsChange) {
  const d1 = db.$client;
  const [updated, keys] = await d1.batch([
    prepare(d1, accountSettingsUpdate(accountId, changes)),
    prepare(d1, liveKeyHashesSelect(accountId)),
  ]);
  const row = (updated?.results as StoredAccountSettings[] | undefined)?.[0];
  if (!row) return null;
  const keyHashes = ((keys?.results ?? []) as { keyHash: string }[]).map((key) => key.keyHash);
  return { settings: accountSettingsOf(row), keyHashes };
}

/** The account's credit balance (movements are built in ledger.ts and run in their callers' batches). */
export async function readBalance(db: Db, accountId: string): Promise<number | null> {
  const row = await db.$client
    .prepare('SELECT credit_balance FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ credit_balance: number }>();
  return row?.credit_balance ?? null;
}
