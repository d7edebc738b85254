import { describe, expect, it } from 'vitest';
import { VerificationResult } from '../contract/api.ts';
import type { SmtpReply } from '../contract/prober.ts';
import type { DnsOutcome } from './inputs.ts';
import {
  ACCEPTED_BOUNCES_WINDOW_MS,
  acceptsThenBounces,
  answerFromBounce,
  LEARNT_RISK_FACTORS,
  withAcceptsThenBounces,
} from './learnt.ts';
import { SCORE_BANDS } from './score.ts';
import { checkSyntax } from './syntax.ts';
import { verdictFromFacts } from './verdict.ts';

const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const MX: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.example.com', preference: 10, ips: ['192.0.2.1'] }],
};
const OK: SmtpReply = { code: 250, enhanced: '2.1.5', text: 'OK' };
const UNKNOWN_USER: SmtpReply = { code: 550, enhanced: '5.1.1', text: 'User unknown' };

function probed(email: string, rcpt: SmtpReply, catchAll: SmtpReply = UNKNOWN_USER): VerificationResult {
  return verdictFromFacts({
    address: checkSyntax(email),
    dns: MX,
    probe: {
      kind: 'report',
      report: {
        perAddress: [{ email, reply: rcpt, failure: null }],
        catchAllReply: catchAll,
        session: {
          mxHost: 'mx.example.com',
          mxIp: '192.0.2.1',
          tls: true,
          tlsError: null,
          smtputf8: false,
          durationMs: 40,
        },
      },
    },
    verifiedAt: new Date(NOW).toISOString(),
    processingTimeMs: 40,
  }).result;
}

const LEARNT = { bounces: 3, accounts: 2, lastBounceAt: NOW - 86_400_000 };

describe('answerFromBounce', () => {
  const base = verdictFromFacts({
    address: checkSyntax('gone@example.com'),
    dns: MX,
    probe: { kind: 'skipped' },
    verifiedAt: new Date(NOW).toISOString(),
    processingTimeMs: 3,
  }).result;

  it("answers undeliverable with the bounce's own sub-status, its date and diagnostic in meta", () => {
    const diagnostic = 'smtp; 550 5.2.1 The email account that you tried to reach is disabled';
    const at = Date.parse('2026-03-01T08:00:00.000Z');
    const result = answerFromBounce(base, { at, subStatus: 'mailbox_disabled', diagnostic });
    expect(VerificationResult.parse(result)).toEqual(result);
    expect(result).toMatchObject({
      status: 'undeliverable',
      subStatus: 'mailbox_disabled',
      isDeliverable: false,
      checks: { smtpValid: false, mxRecords: true },
      meta: {
        verifiedVia: null,
        learnt: { kind: 'mailbox_bounce', bouncedAt: '2026-03-01T08:00:00.000Z', diagnostic },
      },
    });
    expect(result.riskFactors).toContain(LEARNT_RISK_FACTORS.mailboxBounce('2026-03-01'));
    expect(result.score).toBeLessThanOrEqual(SCORE_BANDS.undeliverable.max);
  });

  it('answers mailbox_not_found when the bounce carried no undeliverable sub-status', () => {
    for (const subStatus of [null, 'antispam_blocked', 'not_a_sub_status']) {
      expect(answerFromBounce(base, { at: NOW, subStatus, diagnostic: null }).subStatus).toBe(
        'mailbox_not_found',
      );
    }
  });
});

describe('withAcceptsThenBounces', () => {
  it('turns an accepted mailbox of a learnt domain risky, with the fact in meta', () => {
    const accepted = probed('ann@example.com', OK);
    expect(accepted.status).toBe('deliverable');
    const result = withAcceptsThenBounces(accepted, LEARNT, NOW);
    expect(VerificationResult.parse(result)).toEqual(result);
    expect(result).toMatchObject({
      status: 'risky',
      subStatus: 'accepts_then_bounces',
      isDeliverable: false,
      meta: {
        learnt: {
          kind: 'domain_accepts_then_bounces',
          bounces: 3,
          accounts: 2,
          lastBounceAt: new Date(LEARNT.lastBounceAt).toISOString(),
        },
      },
    });
    expect(result.score).toBeGreaterThanOrEqual(SCORE_BANDS.risky.min);
    expect(result.score).toBeLessThanOrEqual(SCORE_BANDS.risky.max);
  });

  it('leaves a refused mailbox, and any verdict of a domain not learnt, as it was', () => {
    const refused = probed('bob@example.com', UNKNOWN_USER);
    expect(withAcceptsThenBounces(refused, LEARNT, NOW)).toBe(refused);
    const accepted = probed('ann@example.com', OK);
    expect(withAcceptsThenBounces(accepted, null, NOW)).toBe(accepted);
  });

  it('needs two accounts, three bounces, and a bounce within the window', () => {
    expect(acceptsThenBounces(LEARNT, NOW)).toBe(true);
    expect(acceptsThenBounces({ ...LEARNT, accounts: 1, bounces: 50 }, NOW)).toBe(false);
    expect(acceptsThenBounces({ ...LEARNT, bounces: 2 }, NOW)).toBe(false);
    expect(acceptsThenBounces({ ...LEARNT, lastBounceAt: NOW - ACCEPTED_BOUNCES_WINDOW_MS }, NOW)).toBe(
      false,
    );
  });
});
