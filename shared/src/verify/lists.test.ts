import { disposableEmailBlocklist } from 'disposable-email-domains-js';
import mailchecker from 'mailchecker';
import { describe, expect, it } from 'vitest';
import {
  FREE_LIST_CORRECTIONS,
  isDisposableDomain,
  isFreeProviderDomain,
  isRoleLocalPart,
  lookupLists,
  PROVIDER_BY_BRAND,
  PROVIDER_BY_DOMAIN,
  PROVIDER_BY_MX_SUFFIX,
  providerOfDomain,
  providerOfMxHosts,
  ROLE_LOCAL_PARTS,
} from './lists.ts';
import { suggestTypo } from './typo.ts';

describe('disposable domains', () => {
  it.each<[string, boolean]>([
    ['mailinator.com', true], // on both lists
    ['guerrillamail.com', true],
    ['10minutemail.com', true],
    ['yopmail.com', true],
    ['aaanime.net', true], // only on mailchecker
    ['aabkmail.com', true], // only on disposable-email-domains
    ['xn--mll-hoa.email', true], // müll.email, listed in A-label form
    ['sub.mailinator.com', true], // a subdomain of a listed domain
    ['a.b.mailinator.com', true], // a deeper one
    ['aa.tinyhost.dns.army', true], // a listed name under a public suffix
    ['x.aa.tinyhost.dns.army', true], // and below it
    ['ddns.net', true], // a listed public suffix is itself disposable …
    ['myoffice.ddns.net', false], // … but does not taint names registered under it
    ['dmaji.ddns.net', true], // unless the list names them one by one
    ['someone.pp.ua', false], // pp.ua is a public suffix on the list
    ['shop.nom.za', false], // so is nom.za
    ['mailinator.com.example.org', false], // a listed name as a prefix is not a parent
    ['xmailinator.com', false], // nor as the end of a label
    ['gmail.com', false],
    ['outlook.com', false],
    ['example.org', false],
    ['university.edu', false],
    ['com', false],
    ['', false],
  ])('%j → %s', (domain, disposable) => {
    expect(isDisposableDomain(domain)).toBe(disposable);
  });

  it('uses lists whose entries are lower-case A-label names, as checkSyntax gives domains', () => {
    const entries = [...mailchecker.blacklist(), ...disposableEmailBlocklist()];
    expect(entries.length).toBeGreaterThan(60_000);
    expect(entries.filter((entry) => !/^[a-z0-9-]+(?:\.[a-z0-9-]+)+$/.test(entry))).toEqual([]);
  });
});

describe('free providers', () => {
  it.each([
    'gmail.com',
    'yahoo.com',
    'outlook.com',
    'hotmail.com',
    'icloud.com',
    'proton.me',
    'gmx.de',
    'yandex.ru',
    'mail.ru',
    'aol.com',
    'googlemail.com',
    'gmx.com',
    'mail.com',
    'ymail.com',
    'yahoo.co.uk',
    'hotmail.be',
  ])('%s is a free provider', (domain) => {
    expect(isFreeProviderDomain(domain)).toBe(true);
    expect(lookupLists('someone', domain).isFreeProvider).toBe(true);
  });

  it.each([
    ['acme.com', 'a company'],
    ['university.edu', 'a university'],
    ['example.com', 'reserved by RFC 2606, though the list carries it'],
    ['hotmail.co', 'a misspelling the list carries'],
    ['gmail.co', 'a misspelling the list carries'],
    ['mailinator.com', 'on the free list, but disposable first'],
    ['gmial.com', 'on the free list, but disposable first'],
  ])('%s is not a free provider (%s)', (domain) => {
    expect(isFreeProviderDomain(domain)).toBe(false);
    expect(lookupLists('someone', domain).isFreeProvider).toBe(false);
  });

  it.each([...FREE_LIST_CORRECTIONS].filter((domain) => domain !== 'example.com'))(
    'corrects %s because it is a misspelling rcpt suggests a fix for',
    (domain) => {
      expect(suggestTypo(domain)).not.toBeNull();
    },
  );
});

describe('role local parts', () => {
  it.each<[string, boolean]>([
    ['info', true], // RFC 2142 §3
    ['INFO', true], // matched case-insensitively
    ['Info', true],
    ['sales', true], // RFC 2142 §3
    ['support', true], // RFC 2142 §3
    ['postmaster', true], // RFC 5321 §4.5.1 and RFC 2142 §5
    ['abuse', true], // RFC 2142 §4
    ['hostmaster', true], // RFC 2142 §5
    ['webmaster', true], // RFC 2142 §5
    ['noreply', true],
    ['no-reply', true], // separators dropped
    ['no_reply', true],
    ['no.reply', true],
    ['No-Reply', true],
    ['do-not-reply', true],
    ['mailer-daemon', true],
    ['MAILER-DAEMON', true],
    ['support+tickets', true], // RFC 5233 subaddress dropped
    ['info+newsletter', true],
    ['no-reply+bounce-123', true],
    ['"info"', true], // quoted form of the same mailbox
    ['customer-service', true],
    ['customer.support', true],
    ['hello', true],
    ['careers', true],
    ['enquiries', true],
    ['info.uk', false], // "infouk" is not a role: the whole part must be one
    ['sales2', false],
    ['infoline', false],
    ['alice', false],
    ['john.smith', false],
    ['admin.john', false],
    ['+info', false], // nothing before the tag
    ['', false],
    ['jürgen', false],
  ])('%j → %s', (localPart, role) => {
    expect(isRoleLocalPart(localPart)).toBe(role);
    expect(lookupLists(localPart, 'example.org').isRoleBased).toBe(role);
  });

  it('keeps its names in the separator-free, lower-case form the rule compares', () => {
    for (const name of ROLE_LOCAL_PARTS) expect(name).toMatch(/^[a-z]+$/);
    expect(ROLE_LOCAL_PARTS.size).toBeGreaterThanOrEqual(80);
  });
});

describe('provider by domain', () => {
  it.each(Object.entries(PROVIDER_BY_DOMAIN))('%s → %s', (domain, provider) => {
    expect(providerOfDomain(domain)).toBe(provider);
    expect(lookupLists('someone', domain).provider).toBe(provider);
  });

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
    ['hotmail.co', null], // a misspelling, not Microsoft's
    ['yahoo.co', null],
    ['yahoo.example.com', null], // the brand is not the registrable name
    ['live.acme.com', null],
    ['yahoo-inc.com', null], // the brand must be the whole name
    ['acme.com', null],
    ['constructor', null], // not read off Object.prototype
    ['constructor.com', null],
  ])('%s → %s', (domain, provider) => {
    expect(providerOfDomain(domain)).toBe(provider);
  });

  it('names only families the brand table knows', () => {
    const families = new Set([
      ...Object.values(PROVIDER_BY_DOMAIN),
      ...PROVIDER_BY_MX_SUFFIX.map(([, provider]) => provider),
    ]);
    for (const provider of Object.values(PROVIDER_BY_BRAND)) expect(families).toContain(provider);
  });
});

// MX host names in the form each provider or gateway gives them.
const MX_HOSTS: [host: string, provider: string][] = [
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
];

describe('provider by MX host', () => {
  it.each(MX_HOSTS)('%s → %s', (host, provider) => {
    expect(providerOfMxHosts([host])).toBe(provider);
    expect(lookupLists('someone', 'acme.com', [host]).provider).toBe(provider);
  });

  it('has a real host in this test for every row of the table', () => {
    for (const [suffix] of PROVIDER_BY_MX_SUFFIX) {
      expect(MX_HOSTS.some(([host]) => host.endsWith(`.${suffix}`))).toBe(true);
    }
  });

  it.each<[string[], string | null]>([
    [['ASPMX.L.GOOGLE.COM.'], 'google_workspace'], // DNS names are case-insensitive; a root dot is dropped
    [['mx.acme.com', 'mx0a-1.pphosted.com'], 'proofpoint'], // the first recognised host in order
    [['mx0a-1.pphosted.com', 'aspmx.l.google.com'], 'proofpoint'], // a gateway in front of Google wins
    [['mx.acme.com'], null],
    [['notgoogle.com'], null], // a suffix counts only at a label boundary
    [['google.com.evil.example'], null],
    [[], null],
  ])('%j → %s', (hosts, provider) => {
    expect(providerOfMxHosts(hosts)).toBe(provider);
  });

  it("lets the domain's own name decide before its MX", () => {
    expect(lookupLists('someone', 'gmail.com', ['gmail-smtp-in.l.google.com']).provider).toBe('gmail');
    expect(lookupLists('someone', 'acme.com', ['gmail-smtp-in.l.google.com']).provider).toBe(
      'google_workspace',
    );
    expect(lookupLists('someone', 'aol.com', ['mx-aol.mail.gm0.yahoodns.net']).provider).toBe('yahoo');
  });
});

describe('lookupLists', () => {
  it.each<[string, string, string[], ReturnType<typeof lookupLists>]>([
    [
      'alice',
      'gmail.com',
      [],
      { isDisposable: false, isRoleBased: false, isFreeProvider: true, provider: 'gmail' },
    ],
    [
      'info',
      'acme.com',
      ['acme-com.mail.protection.outlook.com'],
      { isDisposable: false, isRoleBased: true, isFreeProvider: false, provider: 'microsoft' },
    ],
    [
      'x',
      'mailinator.com',
      [],
      { isDisposable: true, isRoleBased: false, isFreeProvider: false, provider: null },
    ],
    [
      'noreply',
      'sub.mailinator.com',
      [],
      { isDisposable: true, isRoleBased: true, isFreeProvider: false, provider: null },
    ],
    [
      'bob',
      'Outlook.COM',
      [],
      { isDisposable: false, isRoleBased: false, isFreeProvider: true, provider: 'microsoft' },
    ],
    [
      'postmaster',
      '[192.0.2.1]',
      ['aspmx.l.google.com'],
      { isDisposable: false, isRoleBased: true, isFreeProvider: false, provider: null },
    ],
    [
      'alice',
      'university.edu',
      [],
      { isDisposable: false, isRoleBased: false, isFreeProvider: false, provider: null },
    ],
  ])('%s@%s', (localPart, domain, mxHosts, facts) => {
    expect(lookupLists(localPart, domain, mxHosts)).toEqual(facts);
  });
});
