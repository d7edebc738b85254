import { describe, expect, it } from 'vitest';
import { readBounceDiagnostic } from './bounce-diagnostic.ts';

describe('readBounceDiagnostic', () => {
  it.each([
    // SES bouncedRecipients[].diagnosticCode, with the RFC 3464 type.
    ['smtp; 550 5.1.1 user unknown', 'mailbox', 'mailbox_not_found'],
    // Gmail's multi-line reply as Mailgun and SendGrid pass it on.
    [
      '550-5.1.1 The email account that you tried to reach does not exist. Please try\n' +
        '550 5.1.1  https://support.google.com/mail/?p=NoSuchUser a640c23a62f3a - gsmtp',
      'mailbox',
      'mailbox_not_found',
    ],
    [
      'smtp;550 5.7.1 Service unavailable; client [192.0.2.1] blocked using Spamhaus',
      'policy',
      'antispam_blocked',
    ],
    ['550 5.7.1 blocked', 'policy', 'antispam_blocked'],
    [
      'Remote host said: 550 5.1.1 <a@example.com>: Recipient address rejected',
      'mailbox',
      'mailbox_not_found',
    ],
    ['452 4.2.2 The email account that you tried to reach is over quota', 'other', 'mailbox_full'],
  ])('%s → %s', (diagnostic, kind, subStatus) => {
    expect(readBounceDiagnostic(diagnostic)).toEqual({ kind, subStatus });
  });

  it('reads no reply in text without a code, or no diagnostic', () => {
    expect(readBounceDiagnostic('Amazon SES has suppressed sending to this address')).toEqual({
      kind: 'other',
      subStatus: null,
    });
    expect(readBounceDiagnostic(null)).toEqual({ kind: 'other', subStatus: null });
  });
});
