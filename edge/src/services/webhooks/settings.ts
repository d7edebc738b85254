// The account's webhook settings (docs/operations.md, "Webhook targets"): its default URL,
// which must be https and public, and its `whsec_` signing secret, shown once and stored sealed.
// Every setting needs the account's email confirmed (403 EMAIL_NOT_CONFIRMED).
import { ApiError } from '@rcpt/shared/errors';
import { isSpecialPurposeAddress } from '@rcpt/shared/ip-ranges';
import type { Db } from '../../storage/db.ts';
import { setAccountWebhook } from '../../storage/webhooks.ts';
import { requireConfirmedEmail } from '../accounts/email-confirmation.ts';
import { type SealedPlace, seal, toBase64 } from '../accounts/secret-box.ts';

/** What every signing secret starts with (Standard Webhooks' `whsec_`). */
export const SECRET_PREFIX = 'whsec_';

/** Whether `host` (brackets removed) is an IPv4 or IPv6 literal rather than a name. */
export function isIP(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':');
}

/**
 * A webhook URL must be https; plain http is allowed only to loopback hosts when the
 * deployment allows private targets (development). Private addresses are refused otherwise.
 */
export function validateWebhookUrl(raw: string, allowPrivateTargets: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'webhookUrl is not a URL.' });
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = host === 'localhost' || /^127\./.test(host) || host === '::1';
  // An IP literal in a special-purpose range (RFC 6890: private, loopback, link-local …).
  const privateLiteral = isIP(host) && isSpecialPurposeAddress(host);
  if (url.username || url.password)
    throw new ApiError('VALIDATION_ERROR', { message: 'webhookUrl must not carry credentials.' });
  if ((loopback || privateLiteral) && !allowPrivateTargets) {
    throw new ApiError('VALIDATION_ERROR', {
      message: 'webhookUrl must not point at a private or loopback address.',
    });
  }
  if (url.protocol === 'https:') return url.toString();
  if (url.protocol === 'http:' && loopback && allowPrivateTargets) return url.toString();
  throw new ApiError('VALIDATION_ERROR', { message: 'webhookUrl must use https.' });
}

/**
 * Sets (or, with null, removes) the account's default webhook URL; the stored URL. Like every
 * webhook setting it needs the account's email confirmed (403 EMAIL_NOT_CONFIRMED).
 */
export async function setDefaultWebhookUrl(
  db: Db,
  accountId: string,
  url: string | null,
  allowPrivateTargets: boolean,
): Promise<string | null> {
  const webhookUrl = url === null ? null : validateWebhookUrl(url, allowPrivateTargets);
  await requireConfirmedEmail(db, accountId);
  await setAccountWebhook(db, accountId, { webhookUrl });
  return webhookUrl;
}

/** Where an account's webhook signing secret is stored, sealed. */
export function webhookSecretPlace(accountId: string): SealedPlace {
  return { table: 'accounts', column: 'webhook_secret', rowId: accountId };
}

/** A new signing secret for the account; the previous one stops working. Shown once. */
export async function rotateWebhookSecret(
  db: Db,
  accountId: string,
  secretsKey: string | undefined,
): Promise<string> {
  await requireConfirmedEmail(db, accountId);
  const secret = `${SECRET_PREFIX}${toBase64(crypto.getRandomValues(new Uint8Array(32)))}`;
  const sealed = await seal(secretsKey, secret, webhookSecretPlace(accountId));
  await setAccountWebhook(db, accountId, { webhookSecret: sealed });
  return secret;
}
