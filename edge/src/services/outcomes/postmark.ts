// Postmark's webhooks (docs/verdicts.md, "Outcomes"): Postmark signs nothing; a webhook is
// protected with HTTP basic auth credentials in its URL (https://postmarkapp.com/email-webhooks,
// "secure them using HTTP Auth"; RFC 7617). rcpt makes the password, shows it once and keeps its
// SHA-256. Payloads: https://postmarkapp.com/developer/webhooks/bounce-webhook,
// …/delivery-webhook, …/spam-complaint-webhook — `RecordType` Bounce (with `ID`, `Type`,
// `Email`, `BouncedAt`, `Details`), Delivery (`MessageID`, `Recipient`, `DeliveredAt`,
// `Details`) and SpamComplaint (`ID`, `Email`, `BouncedAt`).
import { ApiError } from '@rcpt/shared/errors';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { z } from 'zod';
import type { OutcomeEvent } from './record.ts';

/** The user name in Postmark's webhook URL; the password is the credential. */
export const POSTMARK_USERNAME = 'rcpt';

function unauthorized(why: string): ApiError {
  return new ApiError('OUTCOME_HOOK_UNAUTHORIZED', { message: `Postmark: ${why}; nothing was recorded.` });
}

/** Checks the request's basic auth against the stored hash of the password, in constant time. */
export async function verifyPostmarkRequest(headers: Headers, passwordHash: string): Promise<void> {
  const authorization = headers.get('authorization') ?? '';
  const match = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(authorization);
  if (!match) throw unauthorized('the webhook URL carries no basic auth credentials');
  let decoded: string;
  try {
    decoded = atob(match[1] as string);
  } catch {
    throw unauthorized('the basic auth credentials are not base64');
  }
  const colon = decoded.indexOf(':');
  const username = decoded.slice(0, colon);
  const given = new TextEncoder().encode(await hashSecret(decoded.slice(colon + 1)));
  const expected = new TextEncoder().encode(passwordHash);
  // Both are SHA-256 hex: the same length, compared without an early exit.
  const same = given.byteLength === expected.byteLength && crypto.subtle.timingSafeEqual(given, expected);
  if (colon < 0 || !same || username !== POSTMARK_USERNAME)
    throw unauthorized('the credentials do not match');
}

const PostmarkRecord = z.discriminatedUnion('RecordType', [
  z.looseObject({
    RecordType: z.literal('Bounce'),
    ID: z.union([z.number(), z.string().min(1).max(100)]),
    Type: z.string().max(64),
    Email: z.string().max(512),
    BouncedAt: z.iso.datetime({ offset: true }),
    Details: z.string().max(4096).optional(),
  }),
  z.looseObject({
    RecordType: z.literal('SpamComplaint'),
    ID: z.union([z.number(), z.string().min(1).max(100)]),
    Email: z.string().max(512),
    BouncedAt: z.iso.datetime({ offset: true }),
  }),
  z.looseObject({
    RecordType: z.literal('Delivery'),
    MessageID: z.string().min(1).max(100),
    Recipient: z.string().max(512),
    DeliveredAt: z.iso.datetime({ offset: true }),
    Details: z.string().max(4096).optional(),
  }),
]);

// Postmark's bounce types (https://postmarkapp.com/developer/api/bounce-api#bounce-types) that are
// outcomes of a send: the rest (auto-responders, unsubscribes, challenges…) are not.
const HARD_BOUNCES = new Set(['HardBounce', 'BadEmailAddress', 'ManuallyDeactivated']);
const SOFT_BOUNCES = new Set(['SoftBounce', 'Transient', 'DnsError', 'Blocked', 'SMTPApiError']);

/** A verified request's outcome (Postmark posts one record a request); none for other records. */
export function postmarkOutcomes(body: string): OutcomeEvent[] {
  let json: { RecordType?: unknown };
  try {
    json = JSON.parse(body) as { RecordType?: unknown };
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'The body is not a Postmark webhook record (JSON).' });
  }
  if (!['Bounce', 'SpamComplaint', 'Delivery'].includes(String(json?.RecordType))) return [];
  const parsed = PostmarkRecord.safeParse(json);
  if (!parsed.success)
    throw new ApiError('VALIDATION_ERROR', {
      message: `The Postmark record is malformed: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
    });
  const record = parsed.data;
  // Postmark's IDs are 64-bit integers, past the precision of a JSON number in JavaScript: the id
  // is taken from the body's text, so two bounces never round to one event.
  const id = /"ID"\s*:\s*"?(\d{1,20})/.exec(body)?.[1] ?? ('ID' in record ? String(record.ID) : '');
  switch (record.RecordType) {
    case 'Bounce': {
      const outcome = HARD_BOUNCES.has(record.Type)
        ? 'hard_bounce'
        : SOFT_BOUNCES.has(record.Type)
          ? 'soft_bounce'
          : null;
      if (!outcome) return [];
      return [
        {
          eventKey: `postmark:bounce:${id}`,
          email: record.Email,
          outcome,
          at: Date.parse(record.BouncedAt),
          diagnostic: record.Details ?? null,
        },
      ];
    }
    case 'SpamComplaint':
      return [
        {
          eventKey: `postmark:bounce:${id}`,
          email: record.Email,
          outcome: 'complaint',
          at: Date.parse(record.BouncedAt),
          diagnostic: null,
        },
      ];
    case 'Delivery':
      return [
        {
          eventKey: `postmark:delivery:${record.MessageID}`,
          email: record.Recipient,
          outcome: 'delivered',
          at: Date.parse(record.DeliveredAt),
          diagnostic: record.Details ?? null,
        },
      ];
  }
}
