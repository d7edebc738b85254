// A sign-up claims its email in the directory before it writes its account in the account's shard
// (docs/architecture.md, "Sharding what still grows"). A Worker that dies between the two writes
// (its isolate evicted, a deploy, a CPU limit) leaves a claim naming an account that never came:
// the email would be taken for good, and no one could sign in with it. The next sign-up of the
// email frees such a claim and goes on as a new one.
import { and, eq } from 'drizzle-orm';
import type { Db } from './db.ts';
import { accountLookups, accountShards, accounts } from './schema.ts';
import type { Shards } from './shards.ts';

/**
 * How old an email's claim must be before its missing account is taken for one that never comes.
 * Between its claim and its account's row a sign-up makes two D1 writes, each cut at D1's 30 s
 * query limit (developers.cloudflare.com/d1/platform/limits/): ten minutes is far past any
 * sign-up still running, so a claim younger than this may yet be followed by its row, and is
 * taken.
 */
export const ABANDONED_EMAIL_CLAIM_MS = 10 * 60_000;

/** An email's claim as read from the directory: the account it names and when it was made. */
export interface EmailClaim {
  accountId: string;
  createdAt: number | null;
}

/**
 * The claim on `email` if it is abandoned: older than ABANDONED_EMAIL_CLAIM_MS, and the account it
 * names has no row in its shard (`account_shards`, shard 0 when it names none). Null otherwise.
 */
export async function abandonedEmailClaim(
  shards: Shards,
  email: string,
  now: number,
): Promise<EmailClaim | null> {
  const [claim] = await shards.directory
    .select({
      accountId: accountLookups.accountId,
      createdAt: accountLookups.createdAt,
      shard: accountShards.shard,
    })
    .from(accountLookups)
    .leftJoin(accountShards, eq(accountShards.accountId, accountLookups.accountId))
    .where(and(eq(accountLookups.kind, 'email'), eq(accountLookups.value, email)))
    .limit(1);
  if (!claim) return null;
  // A claim without a time was written by the directory's migration, from an account that existed.
  if (claim.createdAt !== null && now - claim.createdAt < ABANDONED_EMAIL_CLAIM_MS) return null;
  const shard = claim.shard ?? 0;
  if (shard >= shards.count) return null;
  const [account] = await shards
    .db(shard)
    .select({ id: accounts.id })
    .from(accounts)
    .where(eq(accounts.id, claim.accountId))
    .limit(1);
  return account ? null : { accountId: claim.accountId, createdAt: claim.createdAt };
}

/**
 * Deletes the abandoned `claim` on `email` if the directory still holds it as read (the same
 * account, the same `created_at`): of two sign-ups freeing one claim, one frees it, and both then
 * claim the email as a new one, which one alone can do; a sign-up that read the claim before
 * another took the email over deletes nothing. The dead account's `account_shards` row goes with
 * it (a sign-up in another shard writes it before the account). Whether this call freed it.
 */
export async function freeEmailClaim(directory: Db, email: string, claim: EmailClaim): Promise<boolean> {
  const d1 = directory.$client;
  const [freed] = await d1.batch([
    d1
      .prepare(
        "DELETE FROM account_lookups WHERE kind = 'email' AND value = ?1 AND account_id = ?2 AND created_at IS ?3",
      )
      .bind(email, claim.accountId, claim.createdAt),
    // Nothing else names the dead account: its sign-up wrote only the claim and this row.
    d1.prepare('DELETE FROM account_shards WHERE account_id = ?1').bind(claim.accountId),
  ]);
  return freed?.meta.changes === 1;
}

/** Frees the claim on `email` if it is abandoned (abandonedEmailClaim, freeEmailClaim); whether this call did. */
export async function releaseAbandonedEmailClaim(
  shards: Shards,
  email: string,
  now: number,
): Promise<boolean> {
  const claim = await abandonedEmailClaim(shards, email, now);
  return claim !== null && freeEmailClaim(shards.directory, email, claim);
}
