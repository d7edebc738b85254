// Amazon SES outcomes through Amazon SNS (docs/verdicts.md, "Outcomes"). SES publishes bounce,
// complaint and delivery notifications to an SNS topic, and SNS posts them to the endpoint, signed:
// https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html
//
// - The string to sign is `Name\nValue\n` for each of these fields in this order — Notification:
//   Message, MessageId, Subject (only if present), Timestamp, TopicArn, Type;
//   SubscriptionConfirmation and UnsubscribeConfirmation: Message, MessageId, SubscribeURL,
//   Timestamp, Token, TopicArn, Type
//   (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message-verify-message-signature.html).
// - SignatureVersion 1 is RSA PKCS #1 v1.5 over SHA-1, 2 over SHA-256, with the public key of the
//   X.509 certificate at SigningCertURL. That URL is trusted only on https and an SNS host,
//   `sns.<region>.amazonaws.com` (`.amazonaws.com.cn` in China): a certificate from anywhere else
//   would let anyone sign. The certificate is parsed with `jose` (importX509).
// - Only the endpoint's own topic is taken ("Reject any message with an unexpected TopicArn").
// - A SubscriptionConfirmation is confirmed by visiting its SubscribeURL (same host rule).
// The message of a Notification is SES's JSON: `notificationType` (or `eventType` for event
// publishing) Bounce, Complaint or Delivery
// (https://docs.aws.amazon.com/ses/latest/dg/notification-contents.html).
import { ApiError } from '@rcpt/shared/errors';
import { importX509 } from 'jose';
import { z } from 'zod';
import { fromBase64 } from '../accounts/secret-box.ts';
import type { OutcomeEvent } from './record.ts';

const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?$/;

const SnsMessage = z.object({
  Type: z.enum(['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation']),
  MessageId: z.string().min(1).max(200),
  TopicArn: z.string().min(1).max(400),
  Message: z.string().max(256 * 1024),
  Timestamp: z.string().min(1).max(64),
  Subject: z.string().max(200).optional(),
  SubscribeURL: z.string().max(2048).optional(),
  Token: z.string().max(2048).optional(),
  SignatureVersion: z.enum(['1', '2']),
  Signature: z.string().min(1).max(2048),
  SigningCertURL: z.string().max(2048),
});
type SnsMessage = z.infer<typeof SnsMessage>;

export interface SnsDeps {
  fetch: typeof fetch;
  /** Tests only (config SNS_TEST_ORIGIN): an origin trusted besides SNS's hosts. */
  testOrigin: string | undefined;
}

function unauthorized(why: string): ApiError {
  return new ApiError('OUTCOME_HOOK_UNAUTHORIZED', { message: `SNS: ${why}; nothing was recorded.` });
}

/** Whether `url` is an SNS host's https URL (or the tests' own origin). */
export function isSnsUrl(url: string, testOrigin: string | undefined): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (testOrigin !== undefined && parsed.origin === testOrigin) return true;
  return parsed.protocol === 'https:' && parsed.port === '' && SNS_HOST.test(parsed.hostname);
}

export function snsStringToSign(message: SnsMessage): string {
  const fields =
    message.Type === 'Notification'
      ? (['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'] as const)
      : (['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'] as const);
  let text = '';
  for (const field of fields) {
    const value = message[field];
    if (value === undefined) {
      if (field === 'Subject') continue;
      throw unauthorized(`the ${message.Type} has no ${field}`);
    }
    text += `${field}\n${value}\n`;
  }
  return text;
}

/** Certificates by URL for the isolate's life: SNS signs with one for months. */
const certificates = new Map<string, Promise<ArrayBuffer>>();
const MAX_CERTIFICATES = 32;

async function signingKeySpki(url: string, deps: SnsDeps): Promise<ArrayBuffer> {
  let spki = certificates.get(url);
  if (!spki) {
    spki = (async () => {
      // A redirect is not followed (the Workers runtime has no redirect: 'error'): it could leave SNS.
      const response = await deps.fetch(url, { redirect: 'manual' });
      if (!response.ok)
        throw unauthorized(`the signing certificate could not be fetched (${response.status})`);
      const pem = (await response.text()).trim();
      // jose reads the certificate's SubjectPublicKeyInfo; the key is exported to be imported
      // again with the hash the message's SignatureVersion names.
      const key = await importX509(pem, 'RS256', { extractable: true }).catch(() => {
        throw unauthorized('the signing certificate is not an RSA X.509 certificate');
      });
      return crypto.subtle.exportKey('spki', key as CryptoKey) as Promise<ArrayBuffer>;
    })();
    spki.catch(() => certificates.delete(url));
    if (certificates.size >= MAX_CERTIFICATES)
      certificates.delete(certificates.keys().next().value as string);
    certificates.set(url, spki);
  }
  return spki;
}

/** Verifies the message's signature, or throws 401 OUTCOME_HOOK_UNAUTHORIZED. */
export async function verifySnsMessage(message: SnsMessage, deps: SnsDeps): Promise<void> {
  if (!isSnsUrl(message.SigningCertURL, deps.testOrigin) || !message.SigningCertURL.endsWith('.pem'))
    throw unauthorized('SigningCertURL is not an Amazon SNS certificate URL');
  const hash = message.SignatureVersion === '1' ? 'SHA-1' : 'SHA-256';
  const key = await crypto.subtle.importKey(
    'spki',
    await signingKeySpki(message.SigningCertURL, deps),
    { name: 'RSASSA-PKCS1-v1_5', hash },
    false,
    ['verify'],
  );
  let signature: Uint8Array;
  try {
    signature = fromBase64(message.Signature);
  } catch {
    throw unauthorized('the Signature is not base64');
  }
  const good = await crypto.subtle.verify(
    'RSASSA-PKCS1-v1_5',
    key,
    signature,
    new TextEncoder().encode(snsStringToSign(message)),
  );
  if (!good) throw unauthorized('the signature does not match the message');
}

export function parseSnsMessage(body: string): SnsMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'The body is not an SNS message (JSON).' });
  }
  const parsed = SnsMessage.safeParse(json);
  if (!parsed.success)
    throw new ApiError('VALIDATION_ERROR', {
      message: `The body is not an SNS message: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
    });
  return parsed.data;
}

const Recipient = z.object({
  emailAddress: z.string(),
  diagnosticCode: z.string().optional(),
});
const SesNotification = z.union([
  z.object({
    kind: z.literal('Bounce'),
    bounce: z.object({
      bounceType: z.enum(['Permanent', 'Transient', 'Undetermined']),
      bouncedRecipients: z.array(Recipient).min(1),
      timestamp: z.iso.datetime({ offset: true }),
    }),
  }),
  z.object({
    kind: z.literal('Complaint'),
    complaint: z.object({
      complainedRecipients: z.array(z.object({ emailAddress: z.string() })).min(1),
      timestamp: z.iso.datetime({ offset: true }),
    }),
  }),
  z.object({
    kind: z.literal('Delivery'),
    delivery: z.object({
      recipients: z.array(z.string()).min(1),
      timestamp: z.iso.datetime({ offset: true }),
      smtpResponse: z.string().optional(),
    }),
  }),
]);

/** SES's notification in a verified Notification: its outcomes (none for other kinds). */
export function sesOutcomes(message: SnsMessage): OutcomeEvent[] {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(message.Message) as Record<string, unknown>;
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'The SNS Message is not an SES notification (JSON).' });
  }
  const kind = json?.notificationType ?? json?.eventType;
  if (kind !== 'Bounce' && kind !== 'Complaint' && kind !== 'Delivery') return [];
  const parsed = SesNotification.safeParse({ ...json, kind });
  if (!parsed.success)
    throw new ApiError('VALIDATION_ERROR', {
      message: `The SES ${kind} notification is malformed: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
    });
  const eventKey = `ses:${message.MessageId}`;
  const notification = parsed.data;
  switch (notification.kind) {
    case 'Bounce': {
      const { bounce } = notification;
      // SES: Permanent is a hard bounce; Transient and Undetermined may succeed later.
      const outcome = bounce.bounceType === 'Permanent' ? 'hard_bounce' : 'soft_bounce';
      return bounce.bouncedRecipients.map((recipient) => ({
        eventKey,
        email: recipient.emailAddress,
        outcome,
        at: Date.parse(bounce.timestamp),
        diagnostic: recipient.diagnosticCode ?? null,
      }));
    }
    case 'Complaint':
      return notification.complaint.complainedRecipients.map((recipient) => ({
        eventKey,
        email: recipient.emailAddress,
        outcome: 'complaint',
        at: Date.parse(notification.complaint.timestamp),
        diagnostic: null,
      }));
    case 'Delivery':
      return notification.delivery.recipients.map((email) => ({
        eventKey,
        email,
        outcome: 'delivered',
        at: Date.parse(notification.delivery.timestamp),
        diagnostic: notification.delivery.smtpResponse ?? null,
      }));
  }
}

/** Confirms a verified SubscriptionConfirmation by visiting its SubscribeURL. */
export async function confirmSnsSubscription(message: SnsMessage, deps: SnsDeps): Promise<void> {
  if (!message.SubscribeURL || !isSnsUrl(message.SubscribeURL, deps.testOrigin))
    throw unauthorized('SubscribeURL is not an Amazon SNS URL');
  const response = await deps.fetch(message.SubscribeURL, { redirect: 'manual' });
  if (!response.ok) {
    throw new ApiError('SERVICE_UNAVAILABLE', {
      message: `SNS did not take the subscription's confirmation (${response.status}); it will send it again.`,
    });
  }
}
