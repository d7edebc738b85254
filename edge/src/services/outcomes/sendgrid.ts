// SendGrid's signed Event Webhook (docs/verdicts.md, "Outcomes"):
// https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features
// SendGrid signs `timestamp + payload` (the X-Twilio-Email-Event-Webhook-Timestamp header, then the
// raw body) with ECDSA P-256 over SHA-256, and sends the signature base64 in
// X-Twilio-Email-Event-Webhook-Signature. The verification key the account pastes is base64 of the
// DER SubjectPublicKeyInfo. The signature is DER (a SEQUENCE of the INTEGERs r and s, RFC 3279
// §2.2.3); WebCrypto verifies the IEEE P1363 form (r ‖ s, 32 bytes each), so it is converted.
// Events: https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event — each with
// `sg_event_id`, `email`, `timestamp` (Unix seconds), `event`; bounces with `type` (bounce |
// blocked), `status` and `reason`; deliveries with `response`.
import { ApiError } from '@rcpt/shared/errors';
import { z } from 'zod';
import { fromBase64 } from '../accounts/secret-box.ts';
import type { OutcomeEvent } from './record.ts';

export const SIGNATURE_HEADER = 'X-Twilio-Email-Event-Webhook-Signature';
export const TIMESTAMP_HEADER = 'X-Twilio-Email-Event-Webhook-Timestamp';

const P256_FIELD_BYTES = 32;

function unauthorized(why: string): ApiError {
  return new ApiError('OUTCOME_HOOK_UNAUTHORIZED', { message: `SendGrid: ${why}; nothing was recorded.` });
}

/** The verification key as WebCrypto's, or null when it is not a P-256 public key. */
export async function importSendgridKey(publicKey: string): Promise<CryptoKey | null> {
  try {
    return await crypto.subtle.importKey(
      'spki',
      fromBase64(publicKey.replace(/\s+/g, '')),
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['verify'],
    );
  } catch {
    return null;
  }
}

/** An ECDSA signature in DER (RFC 3279) as IEEE P1363 (r ‖ s), or null when it is not one. */
export function derToP1363(der: Uint8Array): Uint8Array | null {
  let offset = 0;
  const read = () => der[offset++];
  if (read() !== 0x30) return null;
  let length = read() ?? 0;
  if (length & 0x80) {
    if (length !== 0x81) return null;
    length = read() ?? 0;
  }
  if (offset + length !== der.length) return null;
  const integers: Uint8Array[] = [];
  for (let index = 0; index < 2; index++) {
    if (read() !== 0x02) return null;
    const size = read() ?? 0;
    let value = der.subarray(offset, offset + size);
    offset += size;
    if (value.length !== size || size === 0) return null;
    while (value.length > 1 && value[0] === 0) value = value.subarray(1);
    if (value.length > P256_FIELD_BYTES) return null;
    integers.push(value);
  }
  if (offset !== der.length) return null;
  const out = new Uint8Array(2 * P256_FIELD_BYTES);
  integers.forEach((value, index) => {
    out.set(value, (index + 1) * P256_FIELD_BYTES - value.length);
  });
  return out;
}

/** Verifies the request's signature with the endpoint's key, or throws 401. */
export async function verifySendgridRequest(
  request: { headers: Headers; body: string },
  publicKey: string,
): Promise<void> {
  const signature = request.headers.get(SIGNATURE_HEADER);
  const timestamp = request.headers.get(TIMESTAMP_HEADER);
  if (!signature || !timestamp)
    throw unauthorized(`${SIGNATURE_HEADER} and ${TIMESTAMP_HEADER} are required`);
  const key = await importSendgridKey(publicKey);
  if (!key) throw new Error('a stored SendGrid verification key does not import');
  let der: Uint8Array;
  try {
    der = fromBase64(signature);
  } catch {
    throw unauthorized('the signature is not base64');
  }
  const raw = derToP1363(der);
  if (!raw) throw unauthorized('the signature is not an ECDSA signature');
  const good = await crypto.subtle.verify(
    { name: 'ECDSA', hash: 'SHA-256' },
    key,
    raw,
    new TextEncoder().encode(timestamp + request.body),
  );
  if (!good) throw unauthorized('the signature does not match the body');
}

const SendgridEvent = z.looseObject({
  sg_event_id: z.string().min(1).max(200),
  email: z.string().max(512),
  timestamp: z.number().int().nonnegative(),
  event: z.string().max(64),
  type: z.string().max(64).optional(),
  reason: z.string().max(4096).optional(),
  response: z.string().max(4096).optional(),
});
const SendgridEvents = z.array(SendgridEvent).min(1).max(10_000);

/** The outcomes among a verified request's events: delivered, bounce, deferred, spamreport. */
export function sendgridOutcomes(body: string): OutcomeEvent[] {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'The body is not a SendGrid event list (JSON).' });
  }
  const parsed = SendgridEvents.safeParse(json);
  if (!parsed.success)
    throw new ApiError('VALIDATION_ERROR', {
      message: `The body is not a SendGrid event list: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
    });
  const events: OutcomeEvent[] = [];
  for (const event of parsed.data) {
    const base = {
      eventKey: `sendgrid:${event.sg_event_id}`,
      email: event.email,
      at: event.timestamp * 1000,
    };
    switch (event.event) {
      case 'delivered':
        events.push({ ...base, outcome: 'delivered', diagnostic: event.response ?? null });
        break;
      // `type: blocked` is a refusal SendGrid may get past later; `bounce` is final.
      case 'bounce':
        events.push({
          ...base,
          outcome: event.type === 'blocked' ? 'soft_bounce' : 'hard_bounce',
          diagnostic: event.reason ?? null,
        });
        break;
      case 'deferred':
        events.push({ ...base, outcome: 'soft_bounce', diagnostic: event.response ?? null });
        break;
      case 'spamreport':
        events.push({ ...base, outcome: 'complaint', diagnostic: null });
        break;
      default:
        // processed, dropped, open, click, unsubscribe…: not what the address did with a send.
        break;
    }
  }
  return events;
}
