// How an account's emails (a sign-up's confirmation link, a password reset link) reach their
// owner. One small interface, two senders, chosen by EMAIL_SENDER (docs/operations.md):
// - `console` (development, `npm start`): the link as one plain line on the Worker's console.
//   It refuses any link that is not for a loopback host, so a deployment misconfigured with
//   it fails closed instead of writing secret-bearing links into production logs.
// - `cloudflare` (production, the default): Cloudflare Email Service through a `send_email`
//   binding named EMAIL (https://developers.cloudflare.com/email-service/api/send-emails/workers-api/:
//   `env.EMAIL.send({ from, to, subject, text })`). It never logs the link.
import { ApiError } from '@rcpt/shared/errors';

export interface AccountEmail {
  kind: 'email-confirmation' | 'password-reset';
  to: string;
  /** The secret-bearing link: never logged outside local development. */
  link: string;
  expiresAt: number;
}

export interface AccountMailSender {
  send(email: AccountEmail): Promise<void>;
}

/** The prefix of the console sender's line of each kind, which `npm start` and the tests look for. */
export const CONSOLE_LINK_LINE = 'rcpt: confirm the email of the new account';
export const CONSOLE_RESET_LINE = 'rcpt: choose a new password for the account';

const CONSOLE_LINES: Record<AccountEmail['kind'], string> = {
  'email-confirmation': CONSOLE_LINK_LINE,
  'password-reset': CONSOLE_RESET_LINE,
};

/** Subject and text of each kind of email. */
const MESSAGES: Record<
  AccountEmail['kind'],
  (link: string, expiresIn: string) => { subject: string; text: string }
> = {
  'email-confirmation': (link, expiresIn) => ({
    subject: 'Confirm your email address for rcpt',
    text: [
      'Welcome to rcpt.',
      '',
      'Follow this link to confirm your email address and receive your free credits:',
      '',
      link,
      '',
      `The link works for ${expiresIn}. If you did not create an rcpt account, ignore this message.`,
    ].join('\n'),
  }),
  'password-reset': (link, expiresIn) => ({
    subject: 'Choose a new password for rcpt',
    text: [
      'Someone asked to reset the password of your rcpt account.',
      '',
      'Follow this link to choose a new one; every session of the account is signed out when you do:',
      '',
      link,
      '',
      `The link works once, for ${expiresIn}. If you did not ask for it, ignore this message: your password stays as it is.`,
    ].join('\n'),
  }),
};

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

export const consoleSender: AccountMailSender = {
  async send(email) {
    if (!LOOPBACK_HOST.test(new URL(email.link).hostname)) {
      throw new ApiError('SERVICE_UNAVAILABLE', {
        message: 'Account emails are not configured on this deployment (EMAIL_SENDER).',
      });
    }
    console.log(`${CONSOLE_LINES[email.kind]} ${email.to}: ${email.link}`);
  },
};

/** The Cloudflare Email Service binding: only the part of `SendEmail` this sender uses. */
export interface EmailBinding {
  send(message: { from: string; to: string; subject: string; text: string }): Promise<unknown>;
}

export function cloudflareEmailSender(binding: EmailBinding, from: string): AccountMailSender {
  return {
    async send(email) {
      const minutes = Math.round((email.expiresAt - Date.now()) / 60_000);
      const expiresIn = minutes >= 120 ? `${Math.round(minutes / 60)} hours` : `${minutes} minutes`;
      await binding.send({ from, to: email.to, ...MESSAGES[email.kind](email.link, expiresIn) });
    },
  };
}

/** The sender this deployment is configured with; a clear 503 when it cannot send. */
export function confirmationSenderFor(
  config: { EMAIL_SENDER: 'console' | 'cloudflare'; EMAIL_FROM?: string | undefined },
  env: object,
): AccountMailSender {
  if (config.EMAIL_SENDER === 'console') return consoleSender;
  const { binding, from } = emailServiceOf(config, env, 'Account emails');
  return cloudflareEmailSender(binding, from);
}

/** The Email Service binding and From address; a clear 503 naming `what` when either is missing. */
function emailServiceOf(
  config: { EMAIL_FROM?: string | undefined },
  env: object,
  what: string,
): { binding: EmailBinding; from: string } {
  // The binding is added to wrangler.toml by the operator who sets up Email Service, so the
  // generated Env type does not know it.
  const binding = (env as { EMAIL?: EmailBinding }).EMAIL;
  if (!binding || !config.EMAIL_FROM) {
    throw new ApiError('SERVICE_UNAVAILABLE', {
      message: `${what} are not configured on this deployment (EMAIL binding, EMAIL_FROM).`,
    });
  }
  return { binding, from: config.EMAIL_FROM };
}

/** A plain notice to an account's owner (the low-balance email): no secret in it. */
export interface NoticeEmail {
  to: string;
  subject: string;
  text: string;
}

export interface NoticeSender {
  send(email: NoticeEmail): Promise<void>;
}

/** The prefix of the console sender's line for a notice, which `npm start` and the tests look for. */
export const CONSOLE_NOTICE_LINE = 'rcpt: email to';

/**
 * The sender of notices, through the same transport as account emails (EMAIL_SENDER): the
 * console prints `rcpt: email to <to>: <subject>`; Cloudflare Email Service sends it.
 */
export function noticeSenderFor(
  config: { EMAIL_SENDER: 'console' | 'cloudflare'; EMAIL_FROM?: string | undefined },
  env: object,
): NoticeSender {
  if (config.EMAIL_SENDER === 'console') {
    return {
      async send(email) {
        console.log(`${CONSOLE_NOTICE_LINE} ${email.to}: ${email.subject}`);
      },
    };
  }
  const { binding, from } = emailServiceOf(config, env, 'Low-balance emails');
  return {
    async send(email) {
      await binding.send({ from, to: email.to, subject: email.subject, text: email.text });
    },
  };
}
