import { detectTenant } from '@rcpt/shared/dns/mail-tenant';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  comparableDetection,
  MAIL_TENANT_CASES,
  MAIL_TENANT_ZONE,
} from '../../../test/dns/mail-tenant-cases.ts';
import { startUdpDns, type UdpDns } from '../../../test/world/dns-udp.ts';
import { systemLookup } from './system-lookup.ts';

// The tenant-detection zone served over UDP by the world's DNS server, asked through c-ares as
// `rcpt-prober verify` asks it (DNS_SERVERS).
let dns: UdpDns;

beforeAll(async () => {
  dns = await startUdpDns(MAIL_TENANT_ZONE, 0);
});

afterAll(async () => {
  await dns.close();
});

describe('detectTenant over the system resolver', () => {
  // A fresh resolver per case, so no answer comes from another case's cache.
  it.each(MAIL_TENANT_CASES)('$name ($domain)', async ({ domain, mxHosts, expected }) => {
    const lookup = systemLookup({ servers: [dns.server], timeoutMs: 200, tries: 1 });
    const detection = await detectTenant(domain, mxHosts, lookup, { allowPrivateTargets: false });
    expect(comparableDetection(detection)).toEqual(expected);
  });
});
