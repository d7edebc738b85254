import { describe, expect, it } from 'vitest';
import type { ProbeRequest } from '../contract/prober.ts';
import type { TenantDetection } from '../dns/mail-tenant.ts';
import type { ProbeOutcome } from './inputs.ts';
import { type ProbeGateway, probeBehindGateway } from './probe-behind-gateway.ts';

// The batch's shape of the sequence: several addresses of one domain in one probe.
const request: ProbeRequest = {
  emails: ['alice@example.com', 'bob@example.com'],
  domain: 'example.com',
  mx: [{ host: 'mx0a-1.pphosted.com', preference: 10, ips: ['93.184.215.11'] }],
  mailFrom: 'probe@rcpt.test',
  helo: 'rcpt.test',
  timeoutMs: 60_000,
  transcript: false,
};
const TENANT: TenantDetection = {
  kind: 'tenant',
  tenant: { provider: 'microsoft', inboundHost: 'example-com.mail.protection.outlook.com' },
  signal: 'SPF include:spf.protection.outlook.com',
  mx: [{ host: 'example-com.mail.protection.outlook.com', preference: 0, ips: ['93.184.215.12'] }],
};
const OK = { code: 250, enhanced: '2.1.5', text: 'Recipient ok' };
const NO = { code: 550, enhanced: '5.1.1', text: 'User unknown' };
const session = { mxHost: null, mxIp: null, tls: false, tlsError: null, smtputf8: false, durationMs: 5 };

/** Alice accepted, Bob refused; the random address answered `catchAll`. */
function gatewayAnswer(catchAll: typeof OK): ProbeOutcome {
  return {
    kind: 'report',
    report: {
      perAddress: [
        { email: 'alice@example.com', reply: OK, failure: null },
        { email: 'bob@example.com', reply: NO, failure: null },
      ],
      catchAllReply: catchAll,
      session,
    },
  };
}

function recording(outcome: ProbeOutcome): ProbeGateway & { asked: { request: ProbeRequest; ms: number }[] } {
  const asked: { request: ProbeRequest; ms: number }[] = [];
  return {
    asked,
    probe: async (asking, ms) => {
      asked.push({ request: asking, ms });
      return outcome;
    },
  };
}

describe('probeBehindGateway', () => {
  it('asks the tenant every address of the probe when one was accepted as a catch-all would, within what is left', async () => {
    let clock = 1_000;
    const gateway = recording(gatewayAnswer(OK));
    const tenantProber = recording({ kind: 'timeout' });
    const answer = await probeBehindGateway(
      {
        prober: {
          probe: async (asking, ms) => {
            clock += 400;
            return gateway.probe(asking, ms);
          },
        },
        tenants: { detect: async () => TENANT, prober: tenantProber },
        now: () => clock,
      },
      request,
      11_000,
    );
    expect(gateway.asked[0]?.ms).toBe(10_000);
    expect(tenantProber.asked).toEqual([
      { request: { ...request, mx: TENANT.kind === 'tenant' ? TENANT.mx : [], timeoutMs: 9_600 }, ms: 9_600 },
    ]);
    expect(answer.tenant).toEqual({
      provider: 'microsoft',
      inboundHost: 'example-com.mail.protection.outlook.com',
      probe: { kind: 'timeout' },
    });
  });

  it('keeps the gateway answer when detection fails, or no time is left, or the gateway is not catch-all', async () => {
    const failing = await probeBehindGateway(
      {
        prober: recording(gatewayAnswer(OK)),
        tenants: {
          detect: () => Promise.reject(new Error('DoH down')),
          prober: recording({ kind: 'timeout' }),
        },
      },
      request,
      Date.now() + 10_000,
    );
    expect(failing.tenantDetection).toEqual({ kind: 'error', message: 'Error: DoH down' });
    expect(failing.tenant).toBeNull();

    const tenantProber = recording({ kind: 'timeout' });
    const late = await probeBehindGateway(
      {
        prober: recording(gatewayAnswer(OK)),
        tenants: { detect: async () => TENANT, prober: tenantProber },
        now: () => 5_000,
      },
      request,
      5_050,
    );
    expect(late.tenantDetection).toEqual(TENANT);
    expect(late.tenant).toBeNull();

    let detections = 0;
    const strict = await probeBehindGateway(
      {
        prober: recording(gatewayAnswer(NO)),
        tenants: {
          detect: async () => {
            detections++;
            return TENANT;
          },
          prober: tenantProber,
        },
      },
      request,
      Date.now() + 10_000,
    );
    expect(strict).toMatchObject({ tenantDetection: null, tenant: null });
    expect(detections).toBe(0);
    expect(tenantProber.asked).toEqual([]);
  });
});
