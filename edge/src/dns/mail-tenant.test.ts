import { detectTenant } from '@rcpt/shared/dns/mail-tenant';
import { describe, expect, it } from 'vitest';
import {
  comparableDetection,
  MAIL_TENANT_CASES,
  MAIL_TENANT_ZONE,
} from '../../../test/dns/mail-tenant-cases.ts';
import { zoneFetch } from '../../../test/dns/zone-fetch.ts';
import { DohClient } from './doh-client.ts';
import { dohLookup } from './mail-route.ts';

describe('detectTenant over DNS over HTTPS', () => {
  // A fresh client per case, so no answer comes from another case's cache.
  it.each(MAIL_TENANT_CASES)('$name ($domain)', async ({ domain, mxHosts, expected }) => {
    const doh = new DohClient({
      urls: ['https://resolver.example/dns-query'],
      fetch: zoneFetch(MAIL_TENANT_ZONE),
      timeoutMs: 200,
    });
    const detection = await detectTenant(domain, mxHosts, dohLookup(doh), { allowPrivateTargets: false });
    expect(comparableDetection(detection)).toEqual(expected);
  });
});
