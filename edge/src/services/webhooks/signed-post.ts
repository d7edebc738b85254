// One signed event posted (docs/api.md, "Webhooks"): signed per Standard Webhooks —
// `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256(secret,
// "id.timestamp.body")>` — sent to the address that was checked (target.ts), and the retry rule
// of what failed. Customers' job events (delivery.ts) and the operator's alerts
// (fleet/alerts.ts) both go out through here.
import { isSpecialPurposeAddress } from '@rcpt/shared/ip-ranges';
import type { Config } from '../../config.ts';
import { isDnsFailure } from '../../dns/doh-client.ts';
import { dohClientFor } from '../../dns/resolvers.ts';
import { fromBase64, toBase64 } from '../accounts/secret-box.ts';
import { isIP, SECRET_PREFIX } from './settings.ts';
import { type PinnedOutcome, postToCheckedTarget, type TargetPolicy } from './target.ts';

/** Attempts an event gets before it is failed. */
export const WEBHOOK_MAX_ATTEMPTS = 8;
const FIRST_RETRY_SECONDS = 30;
const DELIVERY_TIMEOUT_MS = 10_000;

export async function signWebhook(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    fromBase64(secret.slice(SECRET_PREFIX.length)),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const signature = await crypto.subtle.sign(
    'HMAC',
    key,
    new TextEncoder().encode(`${id}.${timestamp}.${body}`),
  );
  return `v1,${toBase64(new Uint8Array(signature))}`;
}

/**
 * Posts one event signed the Standard Webhooks way with `secret`: the status it was answered
 * with, or why there was none. Customers' job events and the operator's alerts (fleet/alerts.ts)
 * both go out through here.
 */
export async function postSignedEvent(
  url: string,
  event: { id: string; payload: string; secret: string },
  config: Config,
  now: number,
): Promise<{ status: number | null; error: string | null }> {
  const timestamp = Math.floor(now / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'rcpt-webhooks/1',
    'webhook-id': event.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': await signWebhook(event.secret, event.id, timestamp, event.payload),
  };
  const sent = await sendDelivery(url, headers, event.payload, config);
  if ('status' in sent) return { status: sent.status, error: null };
  return { status: null, error: 'refusal' in sent ? sent.refusal : sent.error };
}

/**
 * What an attempt that got `status` (null: none) leaves: delivered on a 2xx, failed after
 * `maxAttempts`, else pending, due again after FIRST_RETRY_SECONDS doubled per attempt made.
 */
export function attemptOutcome(
  status: number | null,
  attempts: number,
  maxAttempts: number,
  now: number,
): { state: 'pending' | 'delivered' | 'failed'; nextAttemptAt: number | null } {
  if (status !== null && status >= 200 && status < 300) return { state: 'delivered', nextAttemptAt: null };
  if (attempts >= maxAttempts) return { state: 'failed', nextAttemptAt: null };
  return { state: 'pending', nextAttemptAt: now + FIRST_RETRY_SECONDS * 1000 * 2 ** (attempts - 1) };
}

/**
 * Sends one attempt. Where private targets are refused (every deployment but development), the
 * host is resolved once, every address checked (RFC 6890: private, loopback, link-local …), and
 * the request goes to a checked address and no other (target.ts): no DNS rebinding
 * between the check and the call. Where the deployment allows private targets nothing is
 * refused, so nothing needs pinning, and the platform's `fetch` sends it. Redirects are never
 * followed either way.
 */
async function sendDelivery(
  url: string,
  headers: Record<string, string>,
  body: string,
  config: Config,
): Promise<PinnedOutcome> {
  if (!config.ALLOW_PRIVATE_TARGETS) {
    return postToCheckedTarget(
      new URL(url),
      { headers, body, timeoutMs: DELIVERY_TIMEOUT_MS },
      targetPolicyOf(config),
    );
  }
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body,
    signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    redirect: 'manual',
  });
  await response.body?.cancel();
  return { status: response.status, address: new URL(url).hostname };
}

/** The deployment's view of a webhook host: its addresses by DNS over HTTPS, special-purpose ones refused. */
export function targetPolicyOf(config: Config): TargetPolicy {
  return {
    async resolve(host) {
      if (isIP(host)) return [host];
      const doh = dohClientFor(config);
      const addresses: string[] = [];
      for (const answer of await Promise.all([doh.query(host, 'A'), doh.query(host, 'AAAA')])) {
        if (isDnsFailure(answer)) return { failure: `${host} could not be resolved (${answer.rcode})` };
        for (const record of answer.answers) if ('address' in record) addresses.push(record.address);
      }
      return addresses;
    },
    refuse(address, host) {
      if (!isSpecialPurposeAddress(address)) return null;
      return address === host
        ? `${host} is a private or reserved address`
        : `${host} resolves to a private or reserved address (${address})`;
    },
  };
}
