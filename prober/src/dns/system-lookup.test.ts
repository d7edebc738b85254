import { mailRoute } from '@rcpt/shared/dns/mail-route';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparableRoute, MAIL_ROUTE_CASES, MAIL_ROUTE_ZONE } from '../../../test/dns/mail-route-cases.ts';
import { startUdpDns, type UdpDns } from '../../../test/world/dns-udp.ts';
import { systemLookup } from './system-lookup.ts';

// The mail-route zone served over UDP by the world's DNS server, asked through c-ares as
// `rcpt-prober verify` asks it (DNS_SERVERS).
let dns: UdpDns;

beforeAll(async () => {
  dns = await startUdpDns(MAIL_ROUTE_ZONE, 0);
});

afterAll(async () => {
  await dns.close();
});

describe('mailRoute over the system resolver', () => {
  // A fresh resolver per case, so no answer comes from another case's cache.
  it.each(MAIL_ROUTE_CASES)('$name ($domain)', async ({ domain, allowPrivateTargets = false, expected }) => {
    const lookup = systemLookup({ servers: [dns.server], timeoutMs: 200, tries: 1 });
    const outcome = await mailRoute(domain, lookup, { allowPrivateTargets });
    expect(comparableRoute(outcome)).toEqual(expected);
  });

  it('says what the resolver answered', async () => {
    const lookup = systemLookup({ servers: [dns.server], timeoutMs: 200, tries: 1 });
    expect(await mailRoute('servfail.route.test', lookup, { allowPrivateTargets: false })).toEqual({
      kind: 'error',
      failure: 'servfail',
      message: 'MX lookup for servfail.route.test failed (servfail): the system resolver answered ESERVFAIL',
    });
  });
});
