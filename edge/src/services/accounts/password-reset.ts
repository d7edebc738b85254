// "Forgot password?": a link by email to choose a new password. The link is a signed link
// (signed-links.ts) bound to the account's current password hash, so it works for
// PASSWORD_RESET_TTL_MS and once: the new password changes the hash, and with it the MAC every
// earlier link needs. The password is replaced only if the hash is still the one the link was
// checked against, so two uses of one link at once change it once. A reset ends every session
// of the account and has the keys page list the keys made before it. Asking for a link answers
// the same, at the same time, whether or not the address has an account (the email leaves after
// the answer); it is counted per client network.
//
// Anyone may ask for a link to anyone's address, so no allowance a request spends may stand
// between the owner and a link: reset emails are not counted with the confirmation emails (which
// strangers spend by signing up with the address), and a mailbox gets a new link at most every
// RESET_MAIL_INTERVAL_MS, half a link's life. A request in between sends nothing and answers as
// one that sent, because the mailbox holds a link sent since, good for at least half an hour
// more: whoever asks, and however often, the owner always has a working link in the inbox, and
// the mailbox receives at most two reset emails an hour.
import { normaliseMailbox } from '@rcpt/shared/verify/mailbox';
import { errorFields, log } from '../../logger.ts';
import { findAccount, findAccountByEmail } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { deleteAccountSessions, replacePasswordHash } from '../../storage/sessions.ts';
import { accountDb, type Shards } from '../../storage/shards.ts';
import { normaliseAccountEmail } from './account-email.ts';
import type { AccountMailDeps } from './email-confirmation.ts';
import { hashPassword } from './passwords.ts';
import { passwordProblem } from './sign-in.ts';
import { admitSignInAttempt } from './sign-in-limits.ts';
import { linkMatches, parseLinkToken, signLink } from './signed-links.ts';

export const PASSWORD_RESET_TTL_MS = 3_600_000;
/** A mailbox gets a new reset link at most this often: the last one then has half its life left. */
export const RESET_MAIL_INTERVAL_MS = PASSWORD_RESET_TTL_MS / 2;
export const PASSWORD_RESET_PATH = '/reset-password';

export type ResetRequestOutcome = { kind: 'sent' } | { kind: 'limited'; retryAfterSeconds: number };

/**
 * Asks for a reset link to `email`: counted per network before anything is looked up, then the
 * link is sent by `inBackground` (the Worker's `waitUntil`), off the request path for every
 * address. So the answer, its limits and its timing are the same whether or not the address has
 * an account, and whether or not its email could be sent.
 */
export async function requestPasswordReset(
  deps: AccountMailDeps & { shards: Shards },
  input: { email: string; clientIp: string; origin: string; now: number },
  inBackground: (work: Promise<unknown>) => void,
): Promise<ResetRequestOutcome> {
  const email = normaliseAccountEmail(input.email);
  const attempt = await admitSignInAttempt(deps.limiters, {
    action: 'reset',
    clientIp: input.clientIp,
    email,
  });
  if (!attempt.allowed) return { kind: 'limited', retryAfterSeconds: attempt.retryAfterSeconds };
  inBackground(
    sendResetLink(deps, { email, origin: input.origin, now: input.now }).catch((cause: unknown) => {
      log.error('password reset email not sent', errorFields(cause));
    }),
  );
  return { kind: 'sent' };
}

/** Sends a reset link to the account of `email`, if there is one and its mailbox may get one now. */
async function sendResetLink(
  deps: AccountMailDeps & { shards: Shards },
  input: { email: string; origin: string; now: number },
): Promise<void> {
  const account = (await findAccountByEmail(deps.shards, input.email))?.account;
  if (!account?.email || !account.passwordHash || !(await admitResetMail(deps.limiters, account.email)))
    return;
  const expiresAt = input.now + PASSWORD_RESET_TTL_MS;
  const token = await signLink(deps.secretsKey, 'password reset', {
    accountId: account.id,
    boundTo: account.passwordHash,
    expiresAt,
  });
  await deps.sender.send({
    kind: 'password-reset',
    to: account.email,
    link: `${input.origin}${PASSWORD_RESET_PATH}?token=${token}`,
    expiresAt,
  });
}

/** Whether the mailbox of `email` may get a new reset link now (RESET_MAIL_INTERVAL_MS). */
async function admitResetMail(limiters: AccountMailDeps['limiters'], email: string): Promise<boolean> {
  const limiter = limiters.get(limiters.idFromName(`reset-mail:${normaliseMailbox(email)}`));
  return (await limiter.hit(1, RESET_MAIL_INTERVAL_MS)).allowed;
}

export type ResetLink =
  | { kind: 'valid'; accountId: string; passwordHash: string; db: Db }
  | { kind: 'invalid' | 'expired' };

/** Whether a reset link may still be used: its MAC (in constant time), then its expiry. */
export async function checkResetLink(
  deps: { shards: Shards; secretsKey: string | undefined },
  token: string,
  now: number,
): Promise<ResetLink> {
  const link = parseLinkToken(token);
  if (!link) return { kind: 'invalid' };
  // The link names its account: its shard holds it (a bad id is in none, and matches no MAC).
  const db = await accountDb(deps.shards, link.accountId);
  const account = await findAccount(db, link.accountId);
  const boundTo = account?.passwordHash ?? '';
  if (!(await linkMatches(deps.secretsKey, 'password reset', link, boundTo)) || !account?.passwordHash)
    return { kind: 'invalid' };
  if (link.expiresAt <= now) return { kind: 'expired' };
  return { kind: 'valid', accountId: account.id, passwordHash: account.passwordHash, db };
}

export type ResetOutcome =
  | { kind: 'reset' }
  | { kind: 'invalid' | 'expired' }
  | { kind: 'problem'; message: string };

/**
 * Sets the new password through a valid link, ends every session of the account, and has the
 * keys page list the API keys made before it for review (docs/operations.md, "Account emails: sign-up confirmation and password reset").
 */
export async function resetPassword(
  deps: { shards: Shards; secretsKey: string | undefined },
  input: { token: string; newPassword: string; now: number },
): Promise<ResetOutcome> {
  const link = await checkResetLink(deps, input.token, input.now);
  if (link.kind !== 'valid') return link;
  const problem = passwordProblem(input.newPassword);
  if (problem) return { kind: 'problem', message: problem };
  const replaced = await replacePasswordHash(link.db, {
    accountId: link.accountId,
    current: link.passwordHash,
    next: await hashPassword(input.newPassword),
    // Whoever had the account before may have made keys: the keys page lists them for review.
    resetAt: input.now,
  });
  // Another use of the same link came first: this one is spent.
  if (!replaced) return { kind: 'invalid' };
  await deleteAccountSessions(link.db, link.accountId, null);
  return { kind: 'reset' };
}
