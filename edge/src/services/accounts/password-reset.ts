// "Forgot password?": a link by email to choose a new password. The link is a signed link
// (signed-links.ts) bound to the account's current password hash, so it works for
// PASSWORD_RESET_TTL_MS and once: the new password changes the hash, and with it the MAC every
// earlier link needs. The password is replaced only if the hash is still the one the link was
// checked against, so two uses of one link at once change it once. A reset ends every session
// of the account. Asking for a link answers the same whether or not the address has an
// account; it is counted per client network and, with the confirmation emails, per mailbox.
import { findAccount, findAccountByEmail } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { deleteAccountSessions, replacePasswordHash } from '../../storage/sessions.ts';
import { type AccountMailDeps, admitAccountMail } from './email-confirmation.ts';
import { hashPassword } from './passwords.ts';
import { normaliseAccountEmail, passwordProblem } from './sign-in.ts';
import { admitSignInAttempt } from './sign-in-limits.ts';
import { linkMatches, parseLinkToken, signLink } from './signed-links.ts';

export const PASSWORD_RESET_TTL_MS = 3_600_000;
export const PASSWORD_RESET_PATH = '/reset-password';

export type ResetRequestOutcome = { kind: 'sent' } | { kind: 'limited'; retryAfterSeconds: number };

/**
 * Sends a reset link to the account of `email`, if there is one. Counted per network and per
 * mailbox before anything is looked up, so the answer and the limits tell nothing about accounts.
 */
export async function requestPasswordReset(
  deps: AccountMailDeps,
  input: { email: string; clientIp: string; origin: string; now: number },
): Promise<ResetRequestOutcome> {
  const email = normaliseAccountEmail(input.email);
  const attempt = await admitSignInAttempt(deps.limiters, {
    action: 'reset',
    clientIp: input.clientIp,
    email,
  });
  if (!attempt.allowed) return { kind: 'limited', retryAfterSeconds: attempt.retryAfterSeconds };
  const mail = await admitAccountMail(deps.limiters, email);
  if (!mail.allowed) return { kind: 'limited', retryAfterSeconds: mail.retryAfterSeconds };
  const account = await findAccountByEmail(deps.db, email);
  if (account?.email && account.passwordHash) {
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
  return { kind: 'sent' };
}

export type ResetLink =
  | { kind: 'valid'; accountId: string; passwordHash: string }
  | { kind: 'invalid' | 'expired' };

/** Whether a reset link may still be used: its MAC (in constant time), then its expiry. */
export async function checkResetLink(
  deps: { db: Db; secretsKey: string | undefined },
  token: string,
  now: number,
): Promise<ResetLink> {
  const link = parseLinkToken(token);
  if (!link) return { kind: 'invalid' };
  const account = await findAccount(deps.db, link.accountId);
  const boundTo = account?.passwordHash ?? '';
  if (!(await linkMatches(deps.secretsKey, 'password reset', link, boundTo)) || !account?.passwordHash)
    return { kind: 'invalid' };
  if (link.expiresAt <= now) return { kind: 'expired' };
  return { kind: 'valid', accountId: account.id, passwordHash: account.passwordHash };
}

export type ResetOutcome =
  | { kind: 'reset' }
  | { kind: 'invalid' | 'expired' }
  | { kind: 'problem'; message: string };

/** Sets the new password through a valid link and ends every session of the account. */
export async function resetPassword(
  deps: { db: Db; secretsKey: string | undefined },
  input: { token: string; newPassword: string; now: number },
): Promise<ResetOutcome> {
  const link = await checkResetLink(deps, input.token, input.now);
  if (link.kind !== 'valid') return link;
  const problem = passwordProblem(input.newPassword);
  if (problem) return { kind: 'problem', message: problem };
  const replaced = await replacePasswordHash(deps.db, {
    accountId: link.accountId,
    current: link.passwordHash,
    next: await hashPassword(input.newPassword),
  });
  // Another use of the same link came first: this one is spent.
  if (!replaced) return { kind: 'invalid' };
  await deleteAccountSessions(deps.db, link.accountId, null);
  return { kind: 'reset' };
}
