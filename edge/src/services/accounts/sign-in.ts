// Dashboard sign-up, sign-in and password change. Sign-in answers the same way, after the
// same work, whether the email is unknown or the password wrong (no account enumeration).
import { ApiError } from '@rcpt/shared/errors';
import { findAccount, findAccountByEmail, insertUnconfirmedAccount } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { releaseAbandonedEmailClaim } from '../../storage/email-claims.ts';
import { deleteAccountSessions, setPasswordHash } from '../../storage/sessions.ts';
import { type Shards, shardForNewAccount, shardNumberOf } from '../../storage/shards.ts';
import { normaliseAccountEmail } from './account-email.ts';
import {
  DECOY_HASH,
  hashPassword,
  MAX_PASSWORD_LENGTH,
  MIN_PASSWORD_LENGTH,
  verifyPassword,
} from './passwords.ts';

/** Every account gets 100 free credits, no card, once its email is confirmed (docs/money.md). */
export const SIGNUP_CREDITS = 100;

export const INVALID_CREDENTIALS = 'That email and password do not match an account.';

export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `Use at least ${MIN_PASSWORD_LENGTH} characters.`;
  if (password.length > MAX_PASSWORD_LENGTH) return `Use at most ${MAX_PASSWORD_LENGTH} characters.`;
  return null;
}

/** What is wrong with a sign-up form, or null. */
export function signUpProblem(input: { email: string; password: string }): string | null {
  const email = normaliseAccountEmail(input.email);
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) return 'Enter a valid email address.';
  return passwordProblem(input.password);
}

/**
 * The shard a dashboard sign-up goes to: the one with the fewest accounts (docs/architecture.md,
 * "Sharding what still grows"), so a shard bound later fills first.
 */
export function signUpShard(shards: Shards): Promise<number> {
  return shardForNewAccount(shards);
}

/**
 * Creates the account in shard `shard`, unconfirmed and without credits (email-confirmation.ts
 * grants them); null when the email is taken (its claim in the directory decides, whichever shard
 * holds the other account). The caller must answer both the same way (no account enumeration), so
 * a taken email costs the same password hashing too.
 */
export async function signUp(
  shards: Shards,
  shard: number,
  input: { email: string; password: string; now: number },
): Promise<{ accountId: string; email: string } | null> {
  const email = normaliseAccountEmail(input.email);
  const problem = signUpProblem(input);
  if (problem) throw new ApiError('VALIDATION_ERROR', { message: problem });
  const passwordHash = await hashPassword(input.password);
  const id = crypto.randomUUID();
  if (!(await insertSignUp(shards, shard, { id, email, passwordHash, now: input.now }))) return null;
  return { accountId: id, email };
}

/**
 * insertUnconfirmedAccount in shard `shard`, tried once more when the email's claim was left by
 * a sign-up that died before its account's row (storage/email-claims.ts) and this one freed it.
 */
async function insertSignUp(
  shards: Shards,
  shard: number,
  account: { id: string; email: string; passwordHash: string; now: number },
): Promise<boolean> {
  const db = shards.db(shard);
  if (await insertUnconfirmedAccount(db, account)) return true;
  return (
    (await releaseAbandonedEmailClaim(shards, account.email, account.now)) &&
    insertUnconfirmedAccount(db, account)
  );
}

/**
 * The account for these credentials and the shard that holds it, or null — after a full hash
 * check either way.
 */
export async function signIn(
  shards: Shards,
  input: { email: string; password: string },
): Promise<{ accountId: string; shard: number } | null> {
  const found = await findAccountByEmail(shards, normaliseAccountEmail(input.email));
  const valid = await verifyPassword(
    input.password.slice(0, MAX_PASSWORD_LENGTH),
    found?.account.passwordHash ?? DECOY_HASH,
  );
  return valid && found ? { accountId: found.account.id, shard: shardNumberOf(found.db) } : null;
}

/** Changes the password and ends every other session of the account. */
export async function changePassword(
  db: Db,
  input: { accountId: string; currentPassword: string; newPassword: string; keepSessionHash: string },
): Promise<void> {
  const account = await findAccount(db, input.accountId);
  if (!account?.passwordHash || !(await verifyPassword(input.currentPassword, account.passwordHash))) {
    throw new ApiError('VALIDATION_ERROR', { message: 'The current password is not right.' });
  }
  const problem = passwordProblem(input.newPassword);
  if (problem) throw new ApiError('VALIDATION_ERROR', { message: problem });
  await setPasswordHash(db, input.accountId, await hashPassword(input.newPassword));
  await deleteAccountSessions(db, input.accountId, input.keepSessionHash);
}
