// The sending services' schemes at the service level, with real keys made here: each good,
// tampered and replayed; and SNS's string to sign and certificate host pin.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { db, newCaller, quotas } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { createOutcomeEndpoint } from './endpoints.ts';
import { type HookDeps, receiveOutcomeHook } from './hooks.ts';
import { derToP1363 } from './sendgrid.ts';
import { isSnsUrl, snsStringToSign } from './ses-sns.ts';

const deps = (): HookDeps => ({
  db: db(),
  quotas: quotas(),
  secretsKey: configOf(env).SECRETS_KEY,
  fetch: () => Promise.reject(new Error('no fetch in these tests')),
  snsTestOrigin: undefined,
  now: Date.now(),
});

const base64 = (bytes: ArrayBuffer | Uint8Array) => btoa(String.fromCharCode(...new Uint8Array(bytes)));
const hex = (bytes: ArrayBuffer) =>
  [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, '0')).join('');

async function endpointFor(request: Parameters<typeof createOutcomeEndpoint>[2]) {
  const { accountId } = await newCaller();
  const created = await createOutcomeEndpoint(
    { db: db(), secretsKey: configOf(env).SECRETS_KEY, origin: 'https://edge.test', now: Date.now() },
    accountId,
    request,
  );
  return { accountId, ...created };
}

function receive(
  endpoint: { id: string },
  provider: string,
  body: string,
  headers: Record<string, string> = {},
) {
  return receiveOutcomeHook(deps(), {
    provider,
    endpointId: endpoint.id,
    headers: new Headers(headers),
    body,
  });
}

async function rowsOf(accountId: string) {
  const { results } = await env.DB.prepare(
    'SELECT email, outcome, bounce_kind FROM outcomes WHERE account_id = ?1',
  )
    .bind(accountId)
    .all();
  return results;
}

/** A DER ECDSA signature (RFC 3279) from WebCrypto's P1363 one, as SendGrid sends it. */
function p1363ToDer(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let value = bytes;
    while (value.length > 1 && value[0] === 0 && (value[1] as number) < 0x80) value = value.subarray(1);
    if ((value[0] as number) >= 0x80) value = Uint8Array.from([0, ...value]);
    return [0x02, value.length, ...value];
  };
  const body = [...integer(raw.subarray(0, 32)), ...integer(raw.subarray(32))];
  return Uint8Array.from([0x30, body.length, ...body]);
}

describe('SendGrid', () => {
  it('takes a signed event list once, refuses a tampered one', async () => {
    const pair = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as CryptoKeyPair;
    const publicKey = base64((await crypto.subtle.exportKey('spki', pair.publicKey)) as ArrayBuffer);
    const { accountId, endpoint } = await endpointFor({ provider: 'sendgrid', publicKey });
    const body = JSON.stringify([
      {
        email: 'a@example.com',
        timestamp: 1_700_000_000,
        event: 'bounce',
        type: 'bounce',
        sg_event_id: 'e1',
        reason: '550 5.1.1 no such user',
      },
      { email: 'a@example.com', timestamp: 1_700_000_000, event: 'open', sg_event_id: 'e2' },
    ]);
    const timestamp = '1700000100';
    const raw = new Uint8Array(
      await crypto.subtle.sign(
        { name: 'ECDSA', hash: 'SHA-256' },
        pair.privateKey,
        new TextEncoder().encode(timestamp + body),
      ),
    );
    const headers = {
      'X-Twilio-Email-Event-Webhook-Signature': base64(p1363ToDer(raw)),
      'X-Twilio-Email-Event-Webhook-Timestamp': timestamp,
    };
    expect(await receive(endpoint, 'sendgrid', body, headers)).toMatchObject({ recorded: 1, duplicates: 0 });
    expect(await receive(endpoint, 'sendgrid', body, headers)).toMatchObject({ recorded: 0, duplicates: 1 });
    await expect(receive(endpoint, 'sendgrid', body.replace('a@', 'b@'), headers)).rejects.toMatchObject({
      code: 'OUTCOME_HOOK_UNAUTHORIZED',
    });
    await expect(
      receive(endpoint, 'sendgrid', body, {
        ...headers,
        'X-Twilio-Email-Event-Webhook-Timestamp': '1700000101',
      }),
    ).rejects.toMatchObject({ code: 'OUTCOME_HOOK_UNAUTHORIZED' });
    expect(await rowsOf(accountId)).toEqual([
      { email: 'a@example.com', outcome: 'hard_bounce', bounce_kind: 'mailbox' },
    ]);
  });

  it('reads DER signatures with and without leading zeros, and refuses what is not one', () => {
    const raw = Uint8Array.from({ length: 64 }, (_, index) => (index === 0 || index === 32 ? 0x80 : index));
    expect(derToP1363(p1363ToDer(raw))).toEqual(raw);
    const small = new Uint8Array(64).fill(1);
    small[0] = 0;
    expect(derToP1363(p1363ToDer(small))).toEqual(small);
    expect(derToP1363(Uint8Array.from([0x30, 0x02, 0x02, 0x00]))).toBeNull();
  });
});

describe('Postmark', () => {
  it('takes the right credentials, refuses others, counts a redelivery once', async () => {
    const { accountId, endpoint, basicAuth } = await endpointFor({ provider: 'postmark' });
    if (!basicAuth) throw new Error('no credentials');
    // Postmark's ids are 64-bit: past a JSON number's precision in JavaScript.
    const body = JSON.stringify({
      RecordType: 'Bounce',
      ID: 'ID_PLACEHOLDER',
      Type: 'HardBounce',
      Email: 'b@example.com',
      BouncedAt: '2026-01-02T03:04:05.123-05:00',
      Details: 'smtp;550 5.7.1 blocked',
    }).replace('"ID_PLACEHOLDER"', '4323372036854775807');
    const auth = (password: string) => ({
      authorization: `Basic ${btoa(`${basicAuth.username}:${password}`)}`,
    });
    expect(await receive(endpoint, 'postmark', body, auth(basicAuth.password))).toMatchObject({
      recorded: 1,
    });
    expect(await receive(endpoint, 'postmark', body, auth(basicAuth.password))).toMatchObject({
      duplicates: 1,
    });
    await expect(receive(endpoint, 'postmark', body, auth('rkh_wrong'))).rejects.toMatchObject({
      code: 'OUTCOME_HOOK_UNAUTHORIZED',
    });
    // A policy bounce reads as policy, not as the mailbox.
    expect(await rowsOf(accountId)).toEqual([
      { email: 'b@example.com', outcome: 'hard_bounce', bounce_kind: 'policy' },
    ]);
  });
});

describe('Mailgun', () => {
  it('takes a signed event once, refuses a forged one and a token replayed with another body', async () => {
    const signingKey = 'key-0123456789abcdef0123456789abcdef';
    const { accountId, endpoint } = await endpointFor({ provider: 'mailgun', signingKey });
    const hmacKey = await crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(signingKey),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    );
    const signed = async (recipient: string, token: string) => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = hex(
        await crypto.subtle.sign('HMAC', hmacKey, new TextEncoder().encode(timestamp + token)),
      );
      return JSON.stringify({
        signature: { timestamp, token, signature },
        'event-data': {
          id: `ev-${recipient}`,
          event: 'failed',
          severity: 'permanent',
          recipient,
          timestamp: Date.now() / 1000,
          'delivery-status': { code: 550, message: '5.1.1 mailbox unavailable' },
        },
      });
    };
    const body = await signed('c@example.com', 't'.repeat(50));
    expect(await receive(endpoint, 'mailgun', body)).toMatchObject({ recorded: 1 });
    expect(await receive(endpoint, 'mailgun', body)).toMatchObject({ duplicates: 1 });
    const other = await signed('d@example.com', 'u'.repeat(50));
    const replay = JSON.stringify({ ...JSON.parse(other), signature: JSON.parse(body).signature });
    await expect(receive(endpoint, 'mailgun', replay)).rejects.toMatchObject({
      code: 'OUTCOME_HOOK_UNAUTHORIZED',
    });
    const forged = other.replace(/"signature":"[0-9a-f]{64}"/, `"signature":"${'0'.repeat(64)}"`);
    await expect(receive(endpoint, 'mailgun', forged)).rejects.toMatchObject({
      code: 'OUTCOME_HOOK_UNAUTHORIZED',
    });
    expect(await rowsOf(accountId)).toEqual([
      { email: 'c@example.com', outcome: 'hard_bounce', bounce_kind: 'mailbox' },
    ]);
  });
});

describe('SNS', () => {
  it('pins certificate URLs to SNS hosts on https', () => {
    expect(isSnsUrl('https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem', undefined)).toBe(
      true,
    );
    expect(isSnsUrl('https://sns.cn-north-1.amazonaws.com.cn/x.pem', undefined)).toBe(true);
    for (const url of [
      'http://sns.us-east-1.amazonaws.com/x.pem',
      'https://sns.us-east-1.amazonaws.com.evil.example/x.pem',
      'https://evilsns.us-east-1.amazonaws.com/x.pem',
      'https://sns.us-east-1.amazonaws.com:8443/x.pem',
      'http://127.0.0.1:9000/x.pem',
    ])
      expect(isSnsUrl(url, undefined), url).toBe(false);
    expect(isSnsUrl('http://127.0.0.1:9000/x.pem', 'http://127.0.0.1:9000')).toBe(true);
  });

  it('signs the fields of each message type in their documented order', () => {
    const common = {
      MessageId: 'm',
      TopicArn: 'arn:aws:sns:us-east-1:123456789012:t',
      Message: 'hello',
      Timestamp: '2026-01-01T00:00:00.000Z',
      SignatureVersion: '2' as const,
      Signature: 'x',
      SigningCertURL: 'https://sns.us-east-1.amazonaws.com/c.pem',
    };
    expect(snsStringToSign({ ...common, Type: 'Notification' })).toBe(
      'Message\nhello\nMessageId\nm\nTimestamp\n2026-01-01T00:00:00.000Z\nTopicArn\narn:aws:sns:us-east-1:123456789012:t\nType\nNotification\n',
    );
    expect(
      snsStringToSign({ ...common, Type: 'SubscriptionConfirmation', SubscribeURL: 'https://s', Token: 'k' }),
    ).toBe(
      'Message\nhello\nMessageId\nm\nSubscribeURL\nhttps://s\nTimestamp\n2026-01-01T00:00:00.000Z\nToken\nk\nTopicArn\narn:aws:sns:us-east-1:123456789012:t\nType\nSubscriptionConfirmation\n',
    );
  });

  it("refuses a message whose certificate is not SNS's, before fetching anything", async () => {
    const { endpoint } = await endpointFor({
      provider: 'ses',
      topicArn: 'arn:aws:sns:us-east-1:123456789012:t',
    });
    const body = JSON.stringify({
      Type: 'Notification',
      MessageId: 'm',
      TopicArn: 'arn:aws:sns:us-east-1:123456789012:t',
      Message: '{}',
      Timestamp: '2026-01-01T00:00:00.000Z',
      SignatureVersion: '2',
      Signature: 'eA==',
      SigningCertURL: 'https://attacker.example/cert.pem',
    });
    await expect(receive(endpoint, 'ses', body)).rejects.toMatchObject({ code: 'OUTCOME_HOOK_UNAUTHORIZED' });
  });
});

describe('endpoints', () => {
  it('answer 404 for an unknown id or the wrong service', async () => {
    const { endpoint } = await endpointFor({ provider: 'postmark' });
    await expect(receive(endpoint, 'mailgun', '{}')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(receive({ id: 'oe_nothing' }, 'postmark', '{}')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });
});
