import { describe, expect, it } from 'vitest';
import { comparableRoute, MAIL_ROUTE_CASES, MAIL_ROUTE_ZONE } from '../../../test/dns/mail-route-cases.ts';
import { zoneLookup } from '../../../test/dns/zone-lookup.ts';
import type { DnsLookup, LookupOutcome } from './lookup.ts';
import { mailRoute } from './mail-route.ts';

describe('mailRoute over an in-memory lookup', () => {
  const lookup = zoneLookup(MAIL_ROUTE_ZONE);

  it.each(MAIL_ROUTE_CASES)('$name ($domain)', async ({ domain, allowPrivateTargets = false, expected }) => {
    const outcome = await mailRoute(domain, lookup, { allowPrivateTargets });
    expect(comparableRoute(outcome)).toEqual(expected);
  });
});

/** A lookup that answers from the zone and records every question asked. */
function countingLookup(): { lookup: DnsLookup; asked: string[] } {
  const inner = zoneLookup(MAIL_ROUTE_ZONE);
  const asked: string[] = [];
  const lookup: DnsLookup = {
    mx(name) {
      asked.push(`MX ${name}`);
      return inner.mx(name);
    },
    a(name) {
      asked.push(`A ${name}`);
      return inner.a(name);
    },
    aaaa(name) {
      asked.push(`AAAA ${name}`);
      return inner.aaaa(name);
    },
  };
  return { lookup, asked };
}

describe('mailRoute questions', () => {
  it('asks nothing past the MX lookup for a null MX', async () => {
    const { lookup, asked } = countingLookup();
    await mailRoute('null.route.test', lookup, { allowPrivateTargets: false });
    expect(asked).toEqual(['MX null.route.test']);
  });

  it('resolves a host listed twice once', async () => {
    const { lookup, asked } = countingLookup();
    await mailRoute('twice.route.test', lookup, { allowPrivateTargets: false });
    expect(asked.filter((question) => question.endsWith(' mx.twice.route.test')).sort()).toEqual([
      'A mx.twice.route.test',
      'AAAA mx.twice.route.test',
    ]);
  });

  it('resolves no more than 10 MX hosts', async () => {
    const { lookup, asked } = countingLookup();
    await mailRoute('many.route.test', lookup, { allowPrivateTargets: false });
    expect(asked.filter((question) => question.startsWith('A '))).toHaveLength(10);
  });

  it('takes the domain name in any letter case, with or without the final dot', async () => {
    const { lookup } = countingLookup();
    expect(await mailRoute('Bare.Route.Test.', lookup, { allowPrivateTargets: false })).toEqual(
      await mailRoute('bare.route.test', lookup, { allowPrivateTargets: false }),
    );
  });
});

describe('mailRoute when one address family fails', () => {
  const failed: LookupOutcome<string> = {
    kind: 'failure',
    failure: 'timeout',
    detail: 'no answer in 2000 ms',
  };
  const lookup = (a: LookupOutcome<string>, aaaa: LookupOutcome<string>): DnsLookup => ({
    mx: async () => ({ kind: 'answer', records: [{ preference: 10, exchange: 'mx.example.' }] }),
    a: async () => a,
    aaaa: async () => aaaa,
  });

  it('is a DNS error when the other family has no addresses', async () => {
    const outcome = await mailRoute('example.com', lookup({ kind: 'answer', records: [] }, failed), {
      allowPrivateTargets: false,
    });
    expect(outcome).toMatchObject({ kind: 'error', failure: 'timeout' });
  });

  it('routes through the addresses the other family found', async () => {
    const withIpv4 = await mailRoute(
      'example.com',
      lookup({ kind: 'answer', records: ['93.184.215.1'] }, failed),
      {
        allowPrivateTargets: false,
      },
    );
    expect(withIpv4).toEqual({
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.example', preference: 10, ips: ['93.184.215.1'] }],
    });
  });

  it('says which lookup failed, how, and what the resolver said', async () => {
    const outcome = await mailRoute('example.com', lookup({ kind: 'nxdomain' }, failed), {
      allowPrivateTargets: false,
    });
    expect(outcome).toEqual({
      kind: 'error',
      failure: 'timeout',
      message: 'AAAA lookup for mx.example failed (timeout): no answer in 2000 ms',
    });
  });
});
