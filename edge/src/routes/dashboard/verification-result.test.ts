import type { LearntFact } from '@rcpt/shared/contract/api';
import type { Evidence } from '@rcpt/shared/contract/prober';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { jsx } from 'hono/jsx';
import { describe, expect, it } from 'vitest';
import { sandboxVerify } from '../../services/verify/sandbox.ts';
import { VerificationResultView } from './verification-result.tsx';

const NOTE = 'this answer came from the Microsoft 365';

async function rendered(verifiedVia: 'mx' | 'tenant' | 'sandbox' | null): Promise<string> {
  const result = sandboxVerify(checkSyntax('deliverable@example.com'), 0);
  return await jsx(VerificationResultView, {
    result: { ...result, meta: { ...result.meta, verifiedVia } },
  }).toString();
}

describe('a verification result in the dashboard', () => {
  it('says when the tenant behind a security gateway gave the answer', async () => {
    expect(await rendered('tenant')).toContain(NOTE);
  });

  it.each(['mx', 'sandbox', null] as const)(
    'says nothing of it when the answer came via %s',
    (verifiedVia) => {
      expect(rendered(verifiedVia)).not.toContain(NOTE);
    },
  );
});

describe('what outcomes taught, in a result of the dashboard', () => {
  const base = sandboxVerify(checkSyntax('ann@example.com'), 0);
  const view = (learnt: LearntFact) =>
    jsx(VerificationResultView, { result: { ...base, meta: { ...base.meta, learnt } } }).toString();

  it("names the account's own bounce, its date and the server's reply", async () => {
    const html = await view({
      kind: 'mailbox_bounce',
      bouncedAt: '2026-11-20T08:00:00.000Z',
      diagnostic: '550 5.1.1 <ann@example.com>: User unknown',
    });
    expect(html).toContain('data-learnt="mailbox_bounce"');
    expect(html).toContain('hard-bounced on 2026-11-20');
    expect(html).toContain('550 5.1.1 &lt;ann@example.com&gt;: User unknown');
  });

  it('names the domain that accepts then bounces with the counts behind it, and no address', async () => {
    const html = await view({
      kind: 'domain_accepts_then_bounces',
      bounces: 4,
      accounts: 2,
      lastBounceAt: '2026-11-21T08:00:00.000Z',
    });
    expect(html).toContain('data-learnt="domain_accepts_then_bounces"');
    expect(html).toContain('The mail servers of example.com accept addresses they bounce afterwards: 4');
    expect(html).toContain('by 2 accounts, the last on 2026-11-21');
  });

  it('says nothing of outcomes when none decided the answer', async () => {
    expect(await jsx(VerificationResultView, { result: base }).toString()).not.toContain('data-learnt');
  });
});

describe('the evidence of a result in the dashboard', () => {
  const evidence: Evidence = {
    mxHost: 'mx.example.com',
    mxIp: '192.0.2.25',
    egress: '198.51.100.7',
    region: 'eu',
    tls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384', certificateVerified: false },
    startedAt: '2026-11-26T12:00:00.000Z',
    durationMs: 40,
    dialogue: [
      {
        atMs: 0,
        command: null,
        reply: { code: 220, enhanced: null, text: 'mx.example.com ESMTP' },
        tookMs: 3,
      },
      {
        atMs: 10,
        command: 'RCPT TO:<deliverable@example.com>',
        reply: { code: 250, enhanced: '2.1.5', text: 'Ok' },
        tookMs: 2,
      },
      {
        atMs: 13,
        command: 'RCPT TO:<***@example.com>',
        reply: { code: 550, enhanced: '5.1.1', text: '<***@example.com>: User unknown' },
        tookMs: 2,
      },
    ],
    ended: null,
    omittedSteps: 2,
  };

  it('shows the session facts and the dialogue as a log, escaped', async () => {
    const result = sandboxVerify(checkSyntax('deliverable@example.com'), 0);
    const html = await jsx(VerificationResultView, { result: { ...result, evidence } }).toString();
    expect(html).toContain('mx.example.com [192.0.2.25]');
    expect(html).toContain('198.51.100.7 (region eu)');
    expect(html).toContain('TLSv1.3, TLS_AES_256_GCM_SHA384 (certificate not verified)');
    expect(html).toContain('+3 ms S: 220 mx.example.com ESMTP');
    expect(html).toContain('+10 ms C: RCPT TO:&lt;deliverable@example.com&gt;');
    expect(html).toContain('+12 ms S: 250 2.1.5 Ok');
    expect(html).toContain('+15 ms S: 550 5.1.1 &lt;***@example.com&gt;: User unknown');
    expect(html).toContain('2 steps left out');
    expect(html).not.toContain('<deliverable@');
  });

  it('shows no evidence section for a result without one', async () => {
    const html = await jsx(VerificationResultView, {
      result: sandboxVerify(checkSyntax('deliverable@example.com'), 0),
    }).toString();
    expect(html).not.toContain('SMTP evidence');
  });
});
