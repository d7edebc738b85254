import { eq } from 'drizzle-orm';
import {
  type AccountSettingsChange,
  accountSettingsOf,
  accountSettingsUpdate,
  liveKeyHashesSelect,
  type StoredAccountSettings,
} from './account-settings.ts';
import { type Db, prepare } from './db.ts';
import { accountCreation, accountDirectoryEntries, accountShardInsert, type NewAccount } from './inserts.ts';
import { claimSignupMailbox, signupGrantOnConfirmation } from './ledger.ts';
import { accounts } from './schema.ts';
import {
  addLookup,
  directoryOf,
  findLookup,
  knowShard,
  placeAccount,
  removeLookup,
  type Shards,
  shardNumberOf,
} from './shards.ts';

/**
 * Runs `accountCreation` in one batch, in `db`'s shard (storage/shards.ts), after its
 * `accountDirectoryEntries` (in the same batch when `db` is the directory's). Throws, having written
 * nothing, when the email belongs to another account of any shard.
 */
export async function insertAccount(db: Db, account: NewAccount): Promise<void> {
  const d1 = db.$client;
  const directory = directoryOf(db);
  const entries = accountDirectoryEntries(account, shardNumberOf(db));
  if (directory === db) {
    const statements = [...entries, ...accountCreation(account)];
    await d1.batch(statements.map((statement) => prepare(d1, statement)));
    return;
  }
  const directoryD1 = directory.$client;
  await directoryD1.batch(entries.map((statement) => prepare(directoryD1, statement)));
  knowShard(account.id, shardNumberOf(db));
  await d1.batch(accountCreation(account).map((statement) => prepare(d1, statement)));
}

/**
 * A dashboard sign-up in `db`'s shard: no credits and no confirmation until the owner follows the
 * emailed link. The email is claimed in the directory first (docs/architecture.md, "Sharding what
 * still grows"); false when another account holds it, and nothing is written.
 */
export async function insertUnconfirmedAccount(
  db: Db,
  account: { id: string; email: string; passwordHash: string; now: number },
): Promise<boolean> {
  const claim = {
    kind: 'email' as const,
    value: account.email,
    accountId: account.id,
    createdAt: account.now,
  };
  if (!(await addLookup(db, claim))) return false;
  const d1 = db.$client;
  const row = d1
    .prepare(
      'INSERT INTO accounts (id, email, password_hash, credit_balance, created_at) VALUES (?1, ?2, ?3, 0, ?4)',
    )
    .bind(account.id, account.email, account.passwordHash, account.now);
  try {
    if (directoryOf(db) === db) await d1.batch([prepare(d1, accountShardInsert(account.id, 0)), row]);
    else {
      await placeAccount(db, account.id);
      await row.run();
    }
  } catch (error) {
    // The email stays free for another try: the claim goes with the account that did not come.
    await removeLookup(db, claim);
    throw error;
  }
  return true;
}

/**
 * Confirms the account's email and grants its sign-up credits, if the account still has this
 * email and is not confirmed yet, and no other account has had the grant of the same mailbox
 * (ledger.ts `signupGrantOnConfirmation`): one transaction when `db` is the directory's; for
 * another shard the mailbox is claimed in the directory first, and the shard's transaction
 * grants only if the claim is this account's (a retry after a failure in between finds it so).
 * Null when it was already confirmed (or is gone): nothing moved.
 */
export async function confirmAccountEmail(
  db: Db,
  confirmation: { accountId: string; email: string; mailbox: string; credits: number; now: number },
): Promise<{ creditBalance: number; granted: boolean } | null> {
  const d1 = db.$client;
  let amount = confirmation.credits;
  if (directoryOf(db) !== db && amount > 0) {
    const holder = await claimMailboxInDirectory(directoryOf(db), confirmation);
    if (holder !== confirmation.accountId) amount = 0;
  }
  const grant = signupGrantOnConfirmation({
    accountId: confirmation.accountId,
    email: confirmation.email,
    mailbox: confirmation.mailbox,
    amount,
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

/** Claims the mailbox's sign-up grant in the directory for the account unless another holds it; the holder. */
async function claimMailboxInDirectory(
  directory: Db,
  claim: { accountId: string; email: string; mailbox: string; credits: number; now: number },
): Promise<string | undefined> {
  const d1 = directory.$client;
  const statements = claimSignupMailbox({ ...claim, amount: claim.credits });
  const [, holder] = await d1.batch<{ account_id: string }>([
    ...statements.map((statement) => prepare(d1, statement)),
    d1.prepare('SELECT account_id FROM signup_grant_mailboxes WHERE mailbox = ?1').bind(claim.mailbox),
  ]);
  return holder?.results[0]?.account_id;
}

export async function findAccount(db: Db, accountId: string) {
  return db.query.accounts.findFirst({ where: eq(accounts.id, accountId) });
}

/** The account whose stored email is `email`, in whichever shard it lives (its lookup first), and that shard. */
export async function findAccountByEmail(shards: Shards, email: string) {
  const found = await findLookup(shards, 'email', email);
  const db = found && shards.db(found.shard);
  const account = found && db ? await findAccount(db, found.accountId) : undefined;
  return account?.email === email && db ? { account, db } : null;
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
