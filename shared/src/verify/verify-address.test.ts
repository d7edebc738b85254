import { describe, expect, it } from 'vitest';
import type { ProbeRequest } from '../contract/prober.ts';
import type { DnsOutcome, ProbeOutcome } from './inputs.ts';
import { checkSyntax } from './syntax.ts';
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
    const verification = await verifyAddress(
      depsWith({ prober, transcript: true }),
      checkSyntax(' Alice@Example.com '),
    );
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
        // What is left when the probe is asked: this clock ticks on every read.
        4_998,
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
      { kind: 'unavailable', message: 'no time was left for the SMTP check' },
    ],
  ])('does not probe with %s', async (_case, overrides, probe) => {
    const verification = await verifyAddress(depsWith(overrides), checkSyntax('alice@example.com'));
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
      checkSyntax(email),
    );
    expect(prober.asked).toEqual([]);
    expect(verification.dns).toEqual(dns);
    expect(verification.probe).toEqual({ kind: 'skipped' });
  });
});

/** A step that answers only when the test lets it: what is slower than any budget. */
function heldBack<Value>(): { promise: Promise<Value>; release: (value: Value) => void } {
  let release: (value: Value) => void = () => {};
  const promise = new Promise<Value>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

describe("verifyAddress within the caller's budget (answerBy)", () => {
  const ACCEPTED_REPORT: ProbeOutcome = {
    kind: 'report',
    report: {
      perAddress: [
        { email: 'alice@example.com', reply: { code: 250, enhanced: '2.1.5', text: 'OK' }, failure: null },
      ],
      catchAllReply: { code: 550, enhanced: '5.1.1', text: 'User unknown' },
      session: {
        mxHost: 'mx.example.com',
        mxIp: null,
        tls: false,
        tlsError: null,
        smtputf8: false,
        durationMs: 5,
      },
    },
  };

  it('answers timeout_exceeded with the route when the probe is still running, and goes on to the verdict', async () => {
    const probe = heldBack<ProbeOutcome>();
    const deps = depsWith({ prober: { probe: () => probe.promise } });
    const verification = await verifyAddress(deps, checkSyntax('alice@example.com'), { answerBy: 1_020 });
    expect(verification.result).toMatchObject({
      status: 'unknown',
      subStatus: 'timeout_exceeded',
      checks: { mxRecords: true, smtpValid: null },
      meta: { mxHost: 'mx.example.com' },
    });
    expect(verification.probe).toEqual({ kind: 'over_budget' });
    expect(verification.completion).toBeDefined();
    probe.release(ACCEPTED_REPORT);
    const completed = await verification.completion;
    expect(completed?.result).toMatchObject({ status: 'deliverable', subStatus: 'accepted_email' });
    expect(completed?.completion).toBeUndefined();
  });

  it('answers timeout_exceeded without a route when DNS has not answered', async () => {
    const route = heldBack<DnsOutcome>();
    const verification = await verifyAddress(
      depsWith({ mailRoute: () => route.promise }),
      checkSyntax('alice@example.com'),
      { answerBy: 1_020 },
    );
    expect(verification.result).toMatchObject({
      subStatus: 'timeout_exceeded',
      checks: { mxRecords: false },
      meta: { mxHost: null, dnsType: null },
    });
    route.release({ kind: 'nxdomain' });
    expect((await verification.completion)?.result.subStatus).toBe('invalid_domain');
  });

  it('says what needs no SMTP when the budget runs out: a disposable domain is risky', async () => {
    const probe = heldBack<ProbeOutcome>();
    const verification = await verifyAddress(
      depsWith({ prober: { probe: () => probe.promise } }),
      checkSyntax('alice@mailinator.com'),
      { answerBy: 1_020 },
    );
    expect(verification.result).toMatchObject({ status: 'risky', subStatus: 'disposable' });
    probe.release({ kind: 'timeout' });
    await verification.completion;
  });

  it('answers the verdict itself when it comes first', async () => {
    const verification = await verifyAddress(
      depsWith({ prober: recordingProber(ACCEPTED_REPORT) }),
      checkSyntax('alice@example.com'),
      { answerBy: 60_000 },
    );
    expect(verification.result.subStatus).toBe('accepted_email');
    expect(verification.completion).toBeUndefined();
  });
});

describe('verifyAddress behind a security gateway', () => {
  const GATEWAY_ROUTE: DnsOutcome = {
    kind: 'mx',
    dnsType: 'MX',
    mx: [{ host: 'mx0a-1.pphosted.com', preference: 10, ips: ['93.184.215.11'] }],
  };
  const FASTMAIL_ROUTE: DnsOutcome = {
    kind: 'mx',
    dnsType: 'MX',
    mx: [{ host: 'in1-smtp.messagingengine.com', preference: 10, ips: ['93.184.215.13'] }],
  };
  const TENANT_MX = [
    { host: 'example-com.mail.protection.outlook.com', preference: 0, ips: ['93.184.215.12'] },
  ];
  const ACCEPTED = { code: 250, enhanced: '2.1.5', text: 'Recipient ok' };
  const UNKNOWN = {
    code: 550,
    enhanced: '5.1.10',
    text: 'RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
  };
  const session = { mxHost: null, mxIp: null, tls: false, tlsError: null, smtputf8: false, durationMs: 5 };
  const answer = (reply: typeof ACCEPTED, catchAll: typeof ACCEPTED | null): ProbeOutcome => ({
    kind: 'report',
    report: {
      perAddress: [{ email: 'alice@example.com', reply, failure: null }],
      catchAllReply: catchAll,
      session,
    },
  });

  function tenantDeps(tenantAnswer: ProbeOutcome) {
    const detected: string[] = [];
    const prober = recordingProber(tenantAnswer);
    return {
      detected,
      prober,
      tenants: {
        detect: async (domain: string, mxHosts: readonly string[]) => {
          detected.push(`${domain} via ${mxHosts.join(',')}`);
          return {
            kind: 'tenant' as const,
            tenant: { provider: 'microsoft', inboundHost: TENANT_MX[0]?.host ?? '' },
            signal: 'SPF include:spf.protection.outlook.com',
            mx: TENANT_MX,
          };
        },
        prober,
      },
    };
  }

  it('asks the tenant when the gateway accepts everything, and its answer decides', async () => {
    const { tenants, prober, detected } = tenantDeps(answer(UNKNOWN, UNKNOWN));
    const verification = await verifyAddress(
      depsWith({
        mailRoute: async () => GATEWAY_ROUTE,
        prober: recordingProber(answer(ACCEPTED, ACCEPTED)),
        tenants,
      }),
      checkSyntax('alice@example.com'),
    );
    expect(detected).toEqual(['example.com via mx0a-1.pphosted.com']);
    expect(prober.asked.map(([request]) => request.mx)).toEqual([TENANT_MX]);
    expect(verification.tenant).toMatchObject({ provider: 'microsoft', probe: { kind: 'report' } });
    expect(verification.result).toMatchObject({
      status: 'undeliverable',
      subStatus: 'mailbox_not_found',
      checks: { isCatchAll: true },
      meta: { verifiedVia: 'tenant' },
    });
  });

  it('asks the tenant behind a catch-all MX no registry knows (a self-hosted relay) too', async () => {
    const { tenants, prober, detected } = tenantDeps(answer(ACCEPTED, UNKNOWN));
    const verification = await verifyAddress(
      depsWith({
        mailRoute: async () => ROUTE,
        prober: recordingProber(answer(ACCEPTED, ACCEPTED)),
        tenants,
      }),
      checkSyntax('alice@example.com'),
    );
    expect(detected).toEqual(['example.com via mx.example.com']);
    expect(prober.asked.map(([request]) => request.mx)).toEqual([TENANT_MX]);
    expect(verification.result).toMatchObject({
      status: 'deliverable',
      subStatus: 'accepted_email',
      isDeliverable: true,
      checks: { isCatchAll: true },
      meta: { verifiedVia: 'tenant', mxHost: 'mx.example.com', provider: null },
    });
  });

  it.each<[string, DnsOutcome, ProbeOutcome]>([
    ['the gateway is not catch-all', GATEWAY_ROUTE, answer(ACCEPTED, UNKNOWN)],
    ['the gateway refused the address', GATEWAY_ROUTE, answer(UNKNOWN, ACCEPTED)],
    ["the catch-all MX is a mailbox provider's own (Fastmail)", FASTMAIL_ROUTE, answer(ACCEPTED, ACCEPTED)],
  ])('does not look for a tenant when %s', async (_case, route, gatewayAnswer) => {
    const { tenants, prober, detected } = tenantDeps(answer(ACCEPTED, UNKNOWN));
    const verification = await verifyAddress(
      depsWith({ mailRoute: async () => route, prober: recordingProber(gatewayAnswer), tenants }),
      checkSyntax('alice@example.com'),
    );
    expect(detected).toEqual([]);
    expect(prober.asked).toEqual([]);
    expect(verification.result.meta.verifiedVia).toBe('mx');
  });
});
