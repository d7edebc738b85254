// Mailgun's webhooks (docs/verdicts.md, "Outcomes"):
// https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks — the body
// carries `signature: { timestamp, token, signature }`, the signature being hex HMAC-SHA256 of
// `timestamp + token` under the account's webhook signing key. The HMAC covers neither the event
// nor the body, so a token is good once: a token seen again with another body is a replay and is
// refused (with the same body it is a redelivery, counted once), and a timestamp older than
// MAILGUN_MAX_AGE_MS is refused, so a token need be remembered only that long.
// Events: https://documentation.mailgun.com/docs/mailgun/user-manual/events — `event-data` with
// `id`, `event` (delivered, failed with `severity` permanent | temporary, complained), `recipient`,
// `timestamp` (Unix seconds) and `delivery-status` (`code`, `message`, `description`).
import { ApiError } from '@rcpt/shared/errors';
import { z } from 'zod';
import type { OutcomeEvent } from './record.ts';

/**
 * The oldest signature taken: Mailgun retries a failed delivery for 8 hours, so 12 hours takes
 * every retry; tokens are kept a day (retention.ts), longer than this.
 */
export const MAILGUN_MAX_AGE_MS = 12 * 3_600_000;

function unauthorized(why: string): ApiError {
  return new ApiError('OUTCOME_HOOK_UNAUTHORIZED', { message: `Mailgun: ${why}; nothing was recorded.` });
}

const MailgunBody = z.object({
  signature: z.object({
    timestamp: z.string().regex(/^\d{1,12}$/),
    token: z.string().min(1).max(200),
    signature: z.string().regex(/^[0-9a-fA-F]{64}$/),
  }),
  'event-data': z.looseObject({
    id: z.string().min(1).max(200),
    event: z.string().max(64),
    recipient: z.string().max(512).optional(),
    timestamp: z.number().nonnegative(),
    severity: z.string().max(64).optional(),
    'delivery-status': z
      .looseObject({
        code: z.union([z.number(), z.string()]).optional(),
        message: z.string().max(4096).optional(),
        description: z.string().max(4096).optional(),
      })
      .optional(),
  }),
});
export type MailgunBody = z.infer<typeof MailgunBody>;

export function parseMailgunBody(body: string): MailgunBody {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'The body is not a Mailgun webhook (JSON).' });
  }
  const parsed = MailgunBody.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // Without a well-formed signature nothing of the body can be trusted, not even its shape.
    if (issue?.path[0] === 'signature' || issue?.path.length === 0)
      throw unauthorized('the signature is missing or malformed');
    throw new ApiError('VALIDATION_ERROR', {
      message: `The Mailgun webhook is malformed: ${issue?.path.join('.')} ${issue?.message}`,
    });
  }
  return parsed.data;
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16));
}

/** Checks the HMAC and the timestamp's age (the token's reuse is the caller's, with storage). */
export async function verifyMailgunSignature(
  body: MailgunBody,
  signingKey: string,
  now: number,
): Promise<void> {
  const { timestamp, token, signature } = body.signature;
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(signingKey),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  // crypto.subtle.verify compares in constant time.
  const good = await crypto.subtle.verify(
    'HMAC',
    key,
    hexBytes(signature),
    new TextEncoder().encode(timestamp + token),
  );
  if (!good) throw unauthorized('the signature does not match');
  const age = now - Number(timestamp) * 1000;
  if (age > MAILGUN_MAX_AGE_MS || age < -MAILGUN_MAX_AGE_MS) throw unauthorized('the signature is too old');
}

/** The outcome of a verified request's event; none for events that are not one. */
export function mailgunOutcomes(body: MailgunBody): OutcomeEvent[] {
  const event = body['event-data'];
  const status = event['delivery-status'];
  const diagnostic =
    [status?.code, status?.message || status?.description]
      .filter((part) => part !== undefined && part !== '')
      .join(' ') || null;
  const outcome =
    event.event === 'delivered'
      ? 'delivered'
      : event.event === 'failed'
        ? event.severity === 'temporary'
          ? 'soft_bounce'
          : 'hard_bounce'
        : event.event === 'complained'
          ? 'complaint'
          : null;
  if (!outcome) return [];
  if (!event.recipient)
    throw new ApiError('VALIDATION_ERROR', { message: 'The Mailgun event has no recipient.' });
  return [
    {
      eventKey: `mailgun:${event.id}`,
      email: event.recipient,
      outcome,
      at: Math.round(event.timestamp * 1000),
      diagnostic: outcome === 'complaint' ? null : diagnostic,
    },
  ];
}
