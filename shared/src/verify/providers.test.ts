import { describe, expect, it } from 'vitest';
import {
  createProviderRegistry,
  type MailProvider,
  PROVIDER_REGISTRY,
  PROVIDERS,
  providerFamilyOf,
  providerReplyRules,
  providerSessionLimits,
  rcptTells,
} from './providers.ts';
import { classifyReply, parseReplyLines, REPLY_RULES } from './smtp-reply.ts';

const idOf = (domain: string, mxHosts: string[] = []) =>
  PROVIDER_REGISTRY.find(domain, mxHosts)?.provider.id ?? null;

describe('by domain', () => {
  it.each(PROVIDERS.flatMap((provider) => provider.domains.map((domain) => [domain, provider.family])))(
    '%s → %s',
    (domain, family) => {
      expect(providerFamilyOf(domain)).toBe(family);
      expect(PROVIDER_REGISTRY.find(domain)?.by).toBe('domain');
    },
  );

  it.each<[string, string | null]>([
    ['yahoo.co.uk', 'yahoo'], // a brand under a country suffix on the free list
    ['yahoo.com.br', 'yahoo'],
    ['yahoo.fr', 'yahoo'],
    ['aol.de', 'yahoo'],
    ['hotmail.fr', 'microsoft'],
    ['hotmail.co.uk', 'microsoft'],
    ['outlook.de', 'microsoft'],
    ['live.co.uk', 'microsoft'],
    ['msn.co.uk', 'microsoft'],
    ['yandex.com.tr', 'yandex'],
    ['gmx.at', 'gmx'],
    ['fastmail.fm', 'fastmail'],
    ['YAHOO.COM.', 'yahoo'], // DNS names are case-insensitive; a root dot is dropped
    ['hotmail.co', null], // a misspelling, not Microsoft's
    ['yahoo.co', null],
    ['yahoo.example.com', null], // the brand is not the registrable name
    ['live.acme.com', null],
    ['mail.yahoo.com', null], // a domain matches exactly
    ['yahoo-inc.com', null], // the brand must be the whole name
    ['notyahoo.com', null],
    ['acme.com', null],
    ['[192.0.2.1]', null], // an address literal names no provider
    ['constructor', null], // not read off Object.prototype
    ['constructor.com', null],
  ])('%s → %s', (domain, family) => {
    expect(providerFamilyOf(domain)).toBe(family);
  });
});

// MX host names in the form each provider or gateway gives them, and meta.provider for a
// company domain behind them.
const MX_HOSTS: [host: string, family: string][] = [
  ['gmail-smtp-in.l.google.com', 'google_workspace'],
  ['aspmx.l.google.com', 'google_workspace'],
  ['alt1.aspmx.l.google.com', 'google_workspace'],
  ['smtp.google.com', 'google_workspace'],
  ['aspmx2.googlemail.com', 'google_workspace'],
  ['acme-com.mail.protection.outlook.com', 'microsoft'],
  ['hotmail-com.olc.protection.outlook.com', 'microsoft'],
  ['mx1.hotmail.com', 'microsoft'],
  ['mta5.am0.yahoodns.net', 'yahoo'],
  ['mx-aol.mail.gm0.yahoodns.net', 'yahoo'],
  ['mx01.mail.icloud.com', 'apple'],
  ['mail.protonmail.ch', 'proton'],
  ['mailsec.protonmail.ch', 'proton'],
  ['mx.zoho.com', 'zoho'],
  ['mx2.zoho.eu', 'zoho'],
  ['mx.zoho.in', 'zoho'],
  ['mx.zoho.com.au', 'zoho'],
  ['mx.zoho.jp', 'zoho'],
  ['mx.zohomail.com', 'zoho'],
  ['mx.yandex.net', 'yandex'],
  ['mx.yandex.ru', 'yandex'],
  ['mxs.mail.ru', 'mail_ru'],
  ['mx00.gmx.net', 'gmx'],
  ['mx00.gmx.com', 'gmx'],
  ['mx-ha03.web.de', 'gmx'],
  ['in1-smtp.messagingengine.com', 'fastmail'],
  ['mx1.fastmail.com', 'fastmail'],
  ['mx0a-00123456.pphosted.com', 'proofpoint'],
  ['mx1-us1.ppe-hosted.com', 'proofpoint'],
  ['us-smtp-inbound-1.mimecast.com', 'mimecast'],
  ['za-smtp-inbound-1.mimecast.co.za', 'mimecast'],
  ['cluster1.eu.messagelabs.com', 'broadcom'],
  ['d123456a.ess.barracudanetworks.com', 'barracuda'],
  ['mx1.hc1234-56.iphmx.com', 'cisco'],
];

describe('by MX host', () => {
  it.each(MX_HOSTS)('%s → %s', (host, family) => {
    expect(providerFamilyOf('acme.com', [host])).toBe(family);
    expect(PROVIDER_REGISTRY.find('acme.com', [host])?.by).toBe('mx');
  });

  it('has a real host in this test for every MX suffix of the registry', () => {
    for (const provider of PROVIDERS) {
      for (const suffix of provider.mxSuffixes) {
        expect(MX_HOSTS.some(([host]) => host.endsWith(`.${suffix}`))).toBe(true);
      }
    }
  });

  it.each<[string[], string | null]>([
    [['ASPMX.L.GOOGLE.COM.'], 'google'], // DNS names are case-insensitive; a root dot is dropped
    [['yahoodns.net'], 'yahoo'], // the suffix itself is the provider's too
    [['mx.acme.com', 'mx0a-1.pphosted.com'], 'proofpoint'], // the first recognised host in order
    [['mx0a-1.pphosted.com', 'aspmx.l.google.com'], 'proofpoint'], // a gateway in front of Google wins
    [['mx.acme.com'], null],
    [['notgoogle.com'], null], // a suffix counts only at a label boundary
    [['evilyahoodns.net'], null],
    [['google.com.evil.example'], null],
    [[], null],
  ])('%j → %s', (hosts, id) => {
    expect(idOf('acme.com', hosts)).toBe(id);
  });

  it("lets the domain's own name decide before its MX", () => {
    expect(providerFamilyOf('gmail.com', ['gmail-smtp-in.l.google.com'])).toBe('gmail');
    expect(providerFamilyOf('acme.com', ['gmail-smtp-in.l.google.com'])).toBe('google_workspace');
    expect(providerFamilyOf('aol.com', ['mx-aol.mail.gm0.yahoodns.net'])).toBe('yahoo');
    expect(idOf('yahoo.com', ['mx0a-1.pphosted.com'])).toBe('yahoo');
  });
});

describe('what the prober keeps to', () => {
  it.each<[string, string[], boolean]>([
    ['yahoo.com', [], false], // Yahoo and AOL take every RCPT and bounce later
    ['aim.com', [], false],
    ['yahoo.co.uk', [], false],
    ['acme.com', ['mta6.am0.yahoodns.net'], false],
    ['gmail.com', [], true],
    ['acme.com', ['acme-com.mail.protection.outlook.com'], true],
    ['acme.com', ['mx0a-1.pphosted.com'], true], // a gateway is asked; its catch-all shows in the answer
  ])('%s via %j: RCPT tells = %s', (domain, mxHosts, tells) => {
    const match = PROVIDER_REGISTRY.find(domain, mxHosts);
    expect(match && rcptTells(match.provider)).toBe(tells);
  });

  it('limits sessions to Google across all its MX hosts, for Gmail and Workspace alike', () => {
    expect(providerSessionLimits()).toEqual(new Map([['google', 20]]));
    expect(PROVIDER_REGISTRY.find('gmail.com')?.provider.id).toBe('google');
    expect(PROVIDER_REGISTRY.find('acme.com', ['aspmx.l.google.com'])?.provider.id).toBe('google');
  });

  it('names the mailbox providers a gateway may front, and only gateways front anything', () => {
    const gateways = PROVIDERS.filter((provider) => provider.gateway);
    expect(gateways.map((provider) => provider.id).sort()).toEqual([
      'barracuda',
      'broadcom',
      'cisco',
      'mimecast',
      'proofpoint',
    ]);
    for (const gateway of gateways) {
      for (const id of gateway.gateway?.fronts ?? []) {
        const fronted = PROVIDER_REGISTRY.byId(id);
        expect(fronted?.gateway).toBeUndefined();
        expect(fronted?.rcpt).toBe('verifiable');
      }
    }
  });
});

describe('reply quirks', () => {
  const quirks = PROVIDERS.flatMap((provider) =>
    (provider.replyQuirks ?? []).map((quirk) => [provider.id, quirk.id, quirk] as const),
  );

  it.each(quirks)('%s: %s classifies its own example', (_provider, id, quirk) => {
    const reply = parseReplyLines([quirk.example]);
    expect(reply).not.toBeNull();
    const classified = classifyReply(reply!, quirk.stage?.[0] ?? 'rcpt');
    expect(classified.rule).toBe(id);
    expect(classified.subStatus).toBe(quirk.subStatus);
  });

  it('puts every quirk into the reply table exactly once, in its section', () => {
    const tableIds = REPLY_RULES.map((rule) => rule.id);
    for (const [, id, quirk] of quirks) {
      expect(tableIds.filter((other) => other === id)).toHaveLength(1);
      expect(providerReplyRules(quirk.section).map((rule) => rule.id)).toContain(id);
    }
    // Provider rows come before the policy vocabulary; mailbox rows after it.
    const firstPolicy = tableIds.findIndex((id) => id.startsWith('policy-'));
    for (const rule of providerReplyRules('provider'))
      expect(tableIds.indexOf(rule.id)).toBeLessThan(firstPolicy);
    for (const rule of providerReplyRules('mailbox'))
      expect(tableIds.indexOf(rule.id)).toBeGreaterThan(firstPolicy);
  });
});

describe('createProviderRegistry', () => {
  const entry = (id: string, fields: Partial<MailProvider> = {}): MailProvider => ({
    id,
    name: id,
    family: id,
    domains: [],
    mxSuffixes: [],
    rcpt: 'verifiable',
    ...fields,
  });

  it.each<[string, MailProvider[], RegExp]>([
    ['a duplicate id', [entry('a'), entry('a')], /id a is claimed by a and a/],
    [
      'a domain in two entries',
      [entry('a', { domains: ['x.com'] }), entry('b', { domains: ['x.com'] })],
      /domain x.com is claimed by a and b/,
    ],
    [
      'an MX suffix in two entries',
      [entry('a', { mxSuffixes: ['mx.net'] }), entry('b', { mxSuffixes: ['mx.net'] })],
      /MX suffix mx.net is claimed by a and b/,
    ],
    ['an upper-case name', [entry('a', { domains: ['X.com'] })], /a: domain X.com is not lower-case/],
    ['a root dot', [entry('a', { mxSuffixes: ['mx.net.'] })], /MX suffix mx.net. is not lower-case/],
    [
      'an upper-case blocklist zone',
      [entry('a', { clientChecks: { reverseDns: false, blocklists: ['BL.example.org'] } })],
      /a: blocklist BL.example.org is not lower-case/,
    ],
  ])('refuses %s', (_what, providers, message) => {
    expect(() => createProviderRegistry(providers)).toThrow(message);
  });

  it('serves a table of its own (the prober tests pass one)', () => {
    const registry = createProviderRegistry([
      entry('everything_inc', { mxSuffixes: ['accept.test'], rcpt: 'accepts_everything' }),
    ]);
    expect(registry.find('acme.test', ['mx.accept.test'])?.provider.id).toBe('everything_inc');
    expect(registry.find('gmail.com')).toBeNull();
    expect(registry.byId('everything_inc')?.rcpt).toBe('accepts_everything');
    expect(registry.byId('google')).toBeNull();
    expect(providerSessionLimits(registry)).toEqual(new Map());
  });
});
