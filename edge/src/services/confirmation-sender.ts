// How a sign-up's confirmation link reaches its owner. One small interface, two senders,
// chosen by EMAIL_SENDER (docs/operations.md):
// - `console` (development, `npm start`): the link as one plain line on the Worker's console.
//   It refuses any link that is not for a loopback host, so a deployment misconfigured with
//   it fails closed instead of writing secret-bearing links into production logs.
// - `cloudflare` (production, the default): Cloudflare Email Service through a `send_email`
//   binding named EMAIL (https://developers.cloudflare.com/email-service/api/send-emails/workers-api/:
//   `env.EMAIL.send({ from, to, subject, text })`). It never logs the link.
import { ApiError } from '@rcpt/shared/errors';

export interface ConfirmationEmail {
  to: string;
  /** The secret-bearing link: never logged outside local development. */
  link: string;
  expiresAt: number;
}

export interface ConfirmationSender {
  send(email: ConfirmationEmail): Promise<void>;
}

/** The prefix of the console sender's line, which `npm start` and the tests look for. */
export const CONSOLE_LINK_LINE = 'rcpt: confirm the email of the new account';

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

export const consoleSender: ConfirmationSender = {
  async send(email) {
    if (!LOOPBACK_HOST.test(new URL(email.link).hostname)) {
      throw new ApiError('SERVICE_UNAVAILABLE', {
        message: 'Email confirmation is not configured on this deployment (EMAIL_SENDER).',
      });
    }
    console.log(`${CONSOLE_LINK_LINE} ${email.to}: ${email.link}`);
  },
};

/** The Cloudflare Email Service binding: only the part of `SendEmail` this sender uses. */
export interface EmailBinding {
  send(message: { from: string; to: string; subject: string; text: string }): Promise<unknown>;
}

export function cloudflareEmailSender(binding: EmailBinding, from: string): ConfirmationSender {
  return {
    async send(email) {
      const hours = Math.round((email.expiresAt - Date.now()) / 3_600_000);
      await binding.send({
        from,
        to: email.to,
        subject: 'Confirm your email address for rcpt',
        text: [
          'Welcome to rcpt.',
          '',
          'Follow this link to confirm your email address and receive your free credits:',
          '',
          email.link,
          '',
          `The link works for ${hours} hours. If you did not create an rcpt account, ignore this message.`,
        ].join('\n'),
      });
    },
  };
}

/** The sender this deployment is configured with; a clear 503 when it cannot send. */
export function confirmationSenderFor(
  config: { EMAIL_SENDER: 'console' | 'cloudflare'; EMAIL_FROM?: string | undefined },
  env: object,
): ConfirmationSender {
  if (config.EMAIL_SENDER === 'console') return consoleSender;
  const { binding, from } = emailServiceOf(config, env, 'Email confirmation');
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
      message: `${what} is not configured on this deployment (EMAIL binding, EMAIL_FROM).`,
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
 * The sender of notices, through the same transport as confirmation links (EMAIL_SENDER): the
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
  const { binding, from } = emailServiceOf(config, env, 'Email');
  return {
    async send(email) {
      await binding.send({ from, to: email.to, subject: email.subject, text: email.text });
    },
  };
}
