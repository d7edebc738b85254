// Email confirmation of dashboard sign-ups (docs/money.md): the free credits are granted only
// to an account whose owner followed the link sent to its address.
//
// The link is `/confirm-email?token=…`, a signed link (signed-links.ts) bound to one account
// and its address, which ends after CONFIRMATION_LINK_TTL_MS. It is good once: the confirmation and the grant are one
// conditional transaction (storage/ledger.ts), and any later use finds the account confirmed.
// The credits go once per mailbox (shared/src/verify/mailbox.ts): a second account of
// `me+2@example.com` is confirmed without them.

import { ApiError } from '@rcpt/shared/errors';
import { normaliseMailbox } from '@rcpt/shared/verify/mailbox';
import type { Config } from '../../config.ts';
import type { KeyLimiter } from '../../objects/key-limiter.ts';
import { confirmAccountEmail, findAccount } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { accountDb, type Shards } from '../../storage/shards.ts';
import { type AccountMailSender, confirmationSenderFor } from './confirmation-sender.ts';
import { SIGNUP_CREDITS } from './sign-in.ts';
import { linkMatches, parseLinkToken, signLink } from './signed-links.ts';

export const CONFIRMATION_LINK_TTL_MS = 24 * 3_600_000;
export const CONFIRMATION_PATH = '/confirm-email';
/**
 * Confirmation emails one mailbox (shared `normaliseMailbox`) receives, whichever path sends them
 * (a sign-up, a signed-in "send it again"), per window: enough for a lost message, too few to
 * mail-bomb an inbox through rcpt, however its address is spelt. Password reset emails have their
 * own bound (password-reset.ts), so that strangers signing up with an address cannot use this one
 * up to keep its owner from a reset link.
 */
export const CONFIRMATION_MAIL_LIMITS = [
  { limit: 3, windowMs: 3_600_000 },
  { limit: 6, windowMs: 86_400_000 },
] as const;

export type MailAdmission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Counts one account email to `email`'s mailbox, or says how long to wait. A sign-up
 * counts whether or not the address has an account already, so the answer tells nothing about
 * accounts. The shortest window is counted first: an attempt it refuses spends none of the
 * day's allowance, so hammering within the hour cannot use up the owner's day.
 */
export async function admitAccountMail(
  limiters: DurableObjectNamespace<KeyLimiter>,
  email: string,
): Promise<MailAdmission> {
  const mailbox = normaliseMailbox(email);
  for (const { limit, windowMs } of CONFIRMATION_MAIL_LIMITS) {
    const limiter = limiters.get(limiters.idFromName(`confirmation-mail:${windowMs}:${mailbox}`));
    const decision = await limiter.hit(limit, windowMs);
    if (!decision.allowed) return { allowed: false, retryAfterSeconds: decision.resetSeconds };
  }
  return { allowed: true };
}

/** The sentence of a refused confirmation email, the same for a sign-up and a resend. */
export function confirmationMailLimited(retryAfterSeconds: number): string {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return (
    `rcpt has sent as many confirmation emails to this mailbox as it will for now. ` +
    `Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`
  );
}

export type ConfirmationOutcome =
  /** `granted`: false when the mailbox had its free credits with another account already. */
  | { kind: 'confirmed'; creditBalance: number; granted: boolean }
  | { kind: 'already-confirmed' }
  | { kind: 'expired' }
  | { kind: 'invalid' };

/** The confirmation link of this account and address, good until `now + CONFIRMATION_LINK_TTL_MS`. */
export async function confirmationLink(
  secretsKey: string | undefined,
  input: { accountId: string; email: string; origin: string; now: number },
): Promise<{ link: string; expiresAt: number }> {
  const expiresAt = input.now + CONFIRMATION_LINK_TTL_MS;
  const token = await signLink(secretsKey, 'email confirmation', {
    accountId: input.accountId,
    boundTo: input.email,
    expiresAt,
  });
  return { link: `${input.origin}${CONFIRMATION_PATH}?token=${token}`, expiresAt };
}

/** Sends the confirmation link of a new (or still unconfirmed) account. */
export async function sendConfirmation(
  deps: { secretsKey: string | undefined; sender: AccountMailSender },
  input: { accountId: string; email: string; origin: string; now: number },
): Promise<void> {
  const { link, expiresAt } = await confirmationLink(deps.secretsKey, input);
  await deps.sender.send({ kind: 'email-confirmation', to: input.email, link, expiresAt });
}

/**
 * Follows a confirmation link: checks its MAC in constant time against the account's current
 * email, then its expiry, then confirms and grants the free credits once.
 */
export async function confirmEmail(
  deps: { shards: Shards; secretsKey: string | undefined },
  token: string,
  now: number,
): Promise<ConfirmationOutcome> {
  const link = parseLinkToken(token);
  if (!link) return { kind: 'invalid' };
  const { accountId } = link;
  // The link names its account: its shard holds it (a bad id is in none, and matches no MAC).
  const db = await accountDb(deps.shards, accountId);
  const account = await findAccount(db, accountId);
  const valid = await linkMatches(deps.secretsKey, 'email confirmation', link, account?.email ?? '');
  if (!valid || !account?.email) return { kind: 'invalid' };
  if (account.emailConfirmedAt !== null) return { kind: 'already-confirmed' };
  if (link.expiresAt <= now) return { kind: 'expired' };
  const confirmed = await confirmAccountEmail(db, {
    accountId,
    email: account.email,
    mailbox: normaliseMailbox(account.email),
    credits: SIGNUP_CREDITS,
    now,
  });
  return confirmed === null ? { kind: 'already-confirmed' } : { kind: 'confirmed', ...confirmed };
}

/**
 * Throws 403 EMAIL_NOT_CONFIRMED unless the account's email is confirmed: what live keys and
 * webhook settings need (docs/money.md, "Free credits"), so that an address nobody owns cannot
 * spend credits or send webhooks. Confirmation is never undone, so a check before the write is
 * enough.
 */
export async function requireConfirmedEmail(db: Db, accountId: string): Promise<void> {
  const account = await findAccount(db, accountId);
  if (account?.emailConfirmedAt == null) throw new ApiError('EMAIL_NOT_CONFIRMED');
}

/** What sending an account email (a confirmation or a reset link) takes. */
export interface AccountMailDeps {
  db: Db;
  /** The per-mailbox limits on account emails (CONFIRMATION_MAIL_LIMITS). */
  limiters: DurableObjectNamespace<KeyLimiter>;
  /** Signs the link. */
  secretsKey: string | undefined;
  sender: AccountMailSender;
}

export function accountMailDepsOf(db: Db, config: Config, env: Env): AccountMailDeps {
  return {
    db,
    limiters: env.KEY_LIMITER,
    secretsKey: config.SECRETS_KEY,
    sender: confirmationSenderFor(config, env),
  };
}

export type ResendOutcome =
  | { kind: 'sent'; to: string }
  | { kind: 'already-confirmed' }
  | { kind: 'limited'; retryAfterSeconds: number };

/** Sends the link again to a signed-in, unconfirmed account, within CONFIRMATION_MAIL_LIMITS. */
export async function resendConfirmation(
  deps: AccountMailDeps,
  input: { accountId: string; origin: string; now: number },
): Promise<ResendOutcome> {
  const account = await findAccount(deps.db, input.accountId);
  if (!account?.email || account.emailConfirmedAt !== null) return { kind: 'already-confirmed' };
  const admission = await admitAccountMail(deps.limiters, account.email);
  if (!admission.allowed) return { kind: 'limited', retryAfterSeconds: admission.retryAfterSeconds };
  await sendConfirmation(deps, {
    accountId: account.id,
    email: account.email,
    origin: input.origin,
    now: input.now,
  });
  return { kind: 'sent', to: account.email };
}
