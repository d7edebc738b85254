import { describe, expect, it } from 'vitest';
import {
  comparableDetection,
  MAIL_TENANT_CASES,
  MAIL_TENANT_ZONE,
} from '../../../test/dns/mail-tenant-cases.ts';
import { zoneLookup } from '../../../test/dns/zone-lookup.ts';
import { PROVIDER_REGISTRY } from '../verify/providers.ts';
import type { TenantLookup } from './lookup.ts';
import { detectTenant, inboundHostOf, tenantCandidates, tenantProvidersBehind } from './mail-tenant.ts';

describe('detectTenant over an in-memory lookup', () => {
  const lookup = zoneLookup(MAIL_TENANT_ZONE);

  it.each(MAIL_TENANT_CASES)('$name ($domain)', async ({ domain, mxHosts, expected }) => {
    const detection = await detectTenant(domain, mxHosts, lookup, { allowPrivateTargets: false });
    expect(comparableDetection(detection)).toEqual(expected);
  });
});

/** A lookup that answers from the zone and records every question asked. */
function countingLookup(): { lookup: TenantLookup; asked: string[] } {
  const inner = zoneLookup(MAIL_TENANT_ZONE);
  const asked: string[] = [];
  const record =
    <Args extends [string], Result>(type: string, ask: (...args: Args) => Result) =>
    (...args: Args): Result => {
      asked.push(`${type} ${args[0]}`);
      return ask(...args);
    };
  return {
    lookup: {
      a: record('A', inner.a),
      aaaa: record('AAAA', inner.aaaa),
      txt: record('TXT', inner.txt),
      cname: record('CNAME', inner.cname),
    },
    asked,
  };
}

describe('detectTenant questions (each one a subrequest on the edge)', () => {
  const options = { allowPrivateTargets: false };

  it("asks nothing when the MX is a mailbox provider's own", async () => {
    const { lookup, asked } = countingLookup();
    await detectTenant(
      'direct.tenant.test',
      ['direct-tenant-test.mail.protection.outlook.com'],
      lookup,
      options,
    );
    expect(asked).toEqual([]);
  });

  it('asks no autodiscover when the TXT records name a tenant whose host resolves', async () => {
    const { lookup, asked } = countingLookup();
    await detectTenant('spf.tenant.test', ['mx0a-spf.pphosted.com'], lookup, options);
    expect(asked.sort()).toEqual([
      'A spf-tenant-test.mail.protection.outlook.com',
      'AAAA spf-tenant-test.mail.protection.outlook.com',
      'TXT spf.tenant.test',
    ]);
  });

  it('resolves an inbound host once, even when autodiscover names the same provider again', async () => {
    const { lookup, asked } = countingLookup();
    await detectTenant('gone.tenant.test', ['mx0a-gone.pphosted.com'], lookup, options);
    expect(asked.filter((question) => question.startsWith('A '))).toEqual([
      'A gone-tenant-test.mail.protection.outlook.com',
    ]);
    expect(asked).toContain('CNAME autodiscover.gone.tenant.test');
  });
});

describe('tenantCandidates (pure)', () => {
  const proofpoint = PROVIDER_REGISTRY.byId('proofpoint');
  if (!proofpoint) throw new Error('the registry has Proofpoint');

  it.each<[string, readonly string[], string | null, string[]]>([
    [
      'an SPF include with a qualifier',
      ['v=spf1 ~include:spf.protection.outlook.com -all'],
      null,
      ['microsoft'],
    ],
    [
      'an SPF include with the final dot, in capitals',
      ['V=SPF1 INCLUDE:Spf.Protection.Outlook.Com. -ALL'],
      null,
      ['microsoft'],
    ],
    ['a redirect is no include', ['v=spf1 redirect=spf.protection.outlook.com'], null, []],
    ['an include outside an SPF record', ['include:spf.protection.outlook.com'], null, []],
    ['a TXT that only mentions the prefix inside', ['note MS=ms123'], null, []],
    ['the verification TXT of Google', ['google-site-verification=abc'], null, ['google']],
    ['an autodiscover target with the final dot', [], 'Autodiscover.Outlook.com.', ['microsoft']],
    ['autodiscover somewhere else', [], 'autodiscover.example.net', []],
    [
      'both, in the order the gateway fronts them',
      ['v=spf1 include:_spf.google.com include:spf.protection.outlook.com ~all'],
      null,
      ['microsoft', 'google'],
    ],
  ])('%s', (_name, txt, autodiscover, providers) => {
    const fronts = proofpoint.gateway?.fronts ?? [];
    const candidates = tenantCandidates('example.co.uk', fronts, { txt, autodiscover });
    expect(candidates.map((candidate) => candidate.provider)).toEqual(providers);
  });

  it('derives the inbound host as each provider names it', () => {
    const microsoft = PROVIDER_REGISTRY.byId('microsoft')?.tenant;
    const google = PROVIDER_REGISTRY.byId('google')?.tenant;
    if (!microsoft || !google) throw new Error('the registry has both tenants');
    expect(inboundHostOf('My-Company.co.uk.', microsoft)).toBe(
      'my-company-co-uk.mail.protection.outlook.com',
    );
    expect(inboundHostOf('example.com', google)).toBe('aspmx.l.google.com');
  });

  it.each<[string, string, string[], string[] | null]>([
    [
      'a gateway of the registry: the providers it fronts',
      'example.com',
      ['mx1.example.iphmx.com'],
      ['microsoft', 'google'],
    ],
    [
      'an MX no registry knows: the providers whose inbound host exists for their tenants alone',
      'example.com',
      ['mailgw.example.com'],
      ['microsoft'],
    ],
    [
      "Microsoft 365's own MX: nobody behind it",
      'example.com',
      ['example-com.mail.protection.outlook.com'],
      null,
    ],
    [
      "a mailbox provider's MX that accepts everything (Fastmail): nobody behind it",
      'example.com',
      ['in1-smtp.messagingengine.com'],
      null,
    ],
    // The domain's own name decides first: gmail.com is Gmail whatever its MX says.
    ["a provider's own domain", 'gmail.com', ['mx0a-1.pphosted.com'], null],
  ])('looks behind %s', (_name, domain, mxHosts, providers) => {
    expect(tenantProvidersBehind(domain, mxHosts)).toEqual(providers);
  });

  it('has signals for every provider a gateway fronts', () => {
    for (const provider of PROVIDER_REGISTRY.providers) {
      for (const id of provider.gateway?.fronts ?? []) {
        expect(PROVIDER_REGISTRY.byId(id)?.tenant, `${provider.id} fronts ${id}`).toBeDefined();
      }
    }
  });
});
