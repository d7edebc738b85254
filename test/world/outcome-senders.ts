// The sending services as they post their event webhooks, with real signatures and the payload
// shapes of their documentation (docs/verdicts.md, "Outcomes"): Amazon SES through SNS (an RSA
// certificate served over HTTP on 127.0.0.1, the edge's SNS_TEST_ORIGIN), SendGrid's signed Event
// Webhook (ECDSA P-256), Postmark (basic auth in the URL) and Mailgun (HMAC-SHA256). Keys are made
// fresh per world: nothing secret is committed.
import { createHmac, createSign, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSelfSignedCertificate } from './self-signed-certificate.ts';

/** Amazon SNS: signs as https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html says. */
export interface FakeSns {
  /** The origin its certificate and subscription links are served from. */
  origin: string;
  topicArn: string;
  /** How many times a SubscribeURL was visited. */
  confirmations: number;
  /** An SNS Notification carrying SES's `message` (https://docs.aws.amazon.com/ses/latest/dg/notification-contents.html). */
  notification(message: unknown, options?: { signatureVersion?: '1' | '2' }): Record<string, string>;
  subscriptionConfirmation(): Record<string, string>;
  close(): Promise<void>;
}

export async function startFakeSns(): Promise<FakeSns> {
  const { key, cert } = createSelfSignedCertificate(['sns.us-east-1.amazonaws.com'], 'rsa');
  const certPath = `/SimpleNotificationService-${randomBytes(16).toString('hex')}.pem`;
  const topicArn = 'arn:aws:sns:us-east-1:123456789012:ses-outcomes';
  let confirmations = 0;
  const server: Server = createServer((request, response) => {
    if (request.url === certPath) {
      response.writeHead(200, { 'content-type': 'application/x-x509-ca-cert' }).end(cert);
    } else if (request.url?.startsWith('/?Action=ConfirmSubscription')) {
      confirmations++;
      response.writeHead(200, { 'content-type': 'text/xml' }).end('<ConfirmSubscriptionResponse/>');
    } else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signed = (fields: Record<string, string>, order: readonly string[], version: '1' | '2') => {
    let text = '';
    for (const name of order) if (fields[name] !== undefined) text += `${name}\n${fields[name]}\n`;
    const signer = createSign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256');
    signer.update(text);
    return {
      ...fields,
      SignatureVersion: version,
      Signature: signer.sign(key, 'base64'),
      SigningCertURL: `${origin}${certPath}`,
    };
  };
  return {
    origin,
    topicArn,
    get confirmations() {
      return confirmations;
    },
    notification(message, options = {}) {
      return signed(
        {
          Type: 'Notification',
          MessageId: randomUUID(),
          TopicArn: topicArn,
          Message: JSON.stringify(message),
          Timestamp: new Date().toISOString(),
          UnsubscribeURL: `${origin}/?Action=Unsubscribe`,
        },
        ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
        options.signatureVersion ?? '2',
      );
    },
    subscriptionConfirmation() {
      const token = randomBytes(32).toString('hex');
      return signed(
        {
          Type: 'SubscriptionConfirmation',
          MessageId: randomUUID(),
          Token: token,
          TopicArn: topicArn,
          Message: `You have chosen to subscribe to the topic ${topicArn}.`,
          SubscribeURL: `${origin}/?Action=ConfirmSubscription&TopicArn=${topicArn}&Token=${token}`,
          Timestamp: new Date().toISOString(),
        },
        ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
        '1',
      );
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** SES's bounce notification for one recipient (notification-contents.html, "Bounce object"). */
export function sesBounce(email: string, diagnosticCode: string, at: Date): unknown {
  return {
    notificationType: 'Bounce',
    bounce: {
      feedbackId: `${randomUUID()}-000000`,
      bounceType: 'Permanent',
      bounceSubType: 'General',
      bouncedRecipients: [{ emailAddress: email, action: 'failed', status: '5.1.1', diagnosticCode }],
      timestamp: at.toISOString(),
      reportingMTA: 'dsn; a27-23.smtp-out.us-west-2.amazonses.com',
    },
    mail: {
      timestamp: at.toISOString(),
      source: 'sender@example.com',
      messageId: randomUUID(),
      destination: [email],
    },
  };
}

/** SendGrid: https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features */
export function sendgridSender() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    /** The verification key as SendGrid's settings show it: base64 of the DER public key. */
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    /** The headers SendGrid sends with `body`: an ECDSA signature (DER, base64) of timestamp + body. */
    headers(body: string): Record<string, string> {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = sign('sha256', Buffer.from(timestamp + body), privateKey).toString('base64');
      return {
        'content-type': 'application/json',
        'X-Twilio-Email-Event-Webhook-Signature': signature,
        'X-Twilio-Email-Event-Webhook-Timestamp': timestamp,
      };
    },
  };
}

/** A SendGrid bounce event (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event). */
export function sendgridBounce(email: string, reason: string, at: Date) {
  return sendgridEvent(email, at, { event: 'bounce', reason, status: '5.1.1', type: 'bounce' });
}

/** A SendGrid delivered event: the receiving server took the message (same page). */
export function sendgridDelivered(email: string, at: Date) {
  return sendgridEvent(email, at, { event: 'delivered', response: '250 2.0.0 OK' });
}

/** The fields every SendGrid event carries, with those of its kind. */
function sendgridEvent<Fields extends { event: string }>(email: string, at: Date, fields: Fields) {
  return {
    email,
    timestamp: Math.floor(at.getTime() / 1000),
    'smtp-id': `<${randomUUID()}@example.com>`,
    category: ['newsletter'],
    sg_event_id: randomBytes(16).toString('base64url'),
    sg_message_id: `${randomBytes(11).toString('base64url')}.filter0001.16648.5515E0B88.0`,
    ...fields,
  };
}

/** A Postmark bounce record (https://postmarkapp.com/developer/webhooks/bounce-webhook). */
export function postmarkBounce(email: string, details: string, at: Date) {
  return {
    RecordType: 'Bounce',
    MessageStream: 'outbound',
    ID: Math.floor(Math.random() * 1e10),
    Type: 'HardBounce',
    TypeCode: 1,
    Name: 'Hard bounce',
    Tag: 'Test',
    MessageID: randomUUID(),
    ServerID: 23,
    Description: 'The server was unable to deliver your message (ex: unknown user, mailbox not found).',
    Details: details,
    Email: email,
    From: 'sender@example.com',
    BouncedAt: at.toISOString(),
    DumpAvailable: true,
    Inactive: true,
    CanActivate: true,
    Subject: 'Test subject',
    Metadata: {},
  };
}

/** Mailgun: https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks */
export function mailgunSender() {
  const signingKey = randomBytes(24).toString('hex');
  return {
    signingKey,
    /** A `failed` event for `email`, signed with a fresh token. */
    failed(email: string, code: number, message: string, at: Date) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const token = randomBytes(25).toString('hex');
      return {
        signature: {
          timestamp,
          token,
          signature: createHmac('sha256', signingKey)
            .update(timestamp + token)
            .digest('hex'),
        },
        'event-data': {
          id: randomBytes(16).toString('base64url'),
          event: 'failed',
          severity: 'permanent',
          reason: 'bounce',
          timestamp: at.getTime() / 1000,
          recipient: email,
          'log-level': 'error',
          'delivery-status': { code, message, description: '', 'attempt-no': 1 },
          message: { headers: { 'message-id': `${randomUUID()}@example.com` } },
        },
      };
    },
  };
}
