import { describe, expect, it } from 'vitest';
import type { ProbeRequest } from '../contract/prober.ts';
import type { DnsOutcome, ProbeOutcome } from './inputs.ts';
import { type ProbeGateway, type VerifyDeps, verifyAddress } from './verify-address.ts';

const ROUTE: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.example.com', preference: 10, ips: ['93.184.215.10'] }],
};

/** A prober that records what it was asked and answers `outcome`. */
function recordingProber(outcome: ProbeOutcome): ProbeGateway & { asked: [ProbeRequest, number][] } {
  const asked: [ProbeRequest, number][] = [];
  return {
    asked,
    probe: async (request, deadlineMs) => {
      asked.push([request, deadlineMs]);
      return outcome;
    },
  };
}

function depsWith(overrides: Partial<VerifyDeps>): VerifyDeps {
  let clock = 1_000;
  return {
    mailRoute: async () => ROUTE,
    prober: null,
    mailFrom: 'probe@verify.example',
    helo: 'verify.example',
    timeoutMs: 5_000,
    now: () => clock++,
    ...overrides,
  };
}

describe('verifyAddress', () => {
  it('probes the route within what is left of the budget, and says what it found', async () => {
    const prober = recordingProber({ kind: 'timeout' });
    const verification = await verifyAddress(depsWith({ prober, transcript: true }), ' Alice@Example.com ');
    expect(prober.asked).toEqual([
      [
        {
          emails: ['Alice@example.com'],
          domain: 'example.com',
          mx: ROUTE.kind === 'mx' ? ROUTE.mx : [],
          mailFrom: 'probe@verify.example',
          helo: 'verify.example',
          timeoutMs: 4_999,
          transcript: true,
        },
        4_999,
      ],
    ]);
    expect(verification.dns).toEqual(ROUTE);
    expect(verification.probe).toEqual({ kind: 'timeout' });
    expect(verification.result).toMatchObject({ status: 'unknown', subStatus: 'smtp_timeout' });
  });

  it.each<[string, Partial<VerifyDeps>, ProbeOutcome]>([
    ['SMTP disabled', {}, { kind: 'unavailable', message: 'SMTP probing is disabled' }],
    [
      'the budget spent on DNS',
      { timeoutMs: 1, prober: recordingProber({ kind: 'skipped' }) },
      { kind: 'timeout' },
    ],
  ])('does not probe with %s', async (_case, overrides, probe) => {
    const verification = await verifyAddress(depsWith(overrides), 'alice@example.com');
    expect(verification.probe).toEqual(probe);
  });

  it.each<[string, string, DnsOutcome | null]>([
    ['an invalid address', 'not an address', null],
    ['an IP literal', 'alice@[192.0.2.1]', null],
    ['a domain without a route', 'alice@example.com', { kind: 'null_mx' }],
  ])('asks no prober for %s', async (_case, email, dns) => {
    const prober = recordingProber({ kind: 'timeout' });
    const verification = await verifyAddress(
      depsWith({ prober, mailRoute: async () => ({ kind: 'null_mx' }) }),
      email,
    );
    expect(prober.asked).toEqual([]);
    expect(verification.dns).toEqual(dns);
    expect(verification.probe).toEqual({ kind: 'skipped' });
  });
});
