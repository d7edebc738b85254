import { disposableEmailBlocklist } from 'disposable-email-domains-js';
import mailchecker from 'mailchecker';
import { describe, expect, it } from 'vitest';
import {
  FREE_LIST_CORRECTIONS,
  isDisposableDomain,
  isFreeProviderDomain,
  isRoleLocalPart,
  lookupLists,
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

describe('lookupLists', () => {
  it.each<[string, string, ReturnType<typeof lookupLists>]>([
    ['alice', 'gmail.com', { isDisposable: false, isRoleBased: false, isFreeProvider: true }],
    ['info', 'acme.com', { isDisposable: false, isRoleBased: true, isFreeProvider: false }],
    ['x', 'mailinator.com', { isDisposable: true, isRoleBased: false, isFreeProvider: false }],
    ['noreply', 'sub.mailinator.com', { isDisposable: true, isRoleBased: true, isFreeProvider: false }],
    ['bob', 'Outlook.COM', { isDisposable: false, isRoleBased: false, isFreeProvider: true }],
    ['postmaster', '[192.0.2.1]', { isDisposable: false, isRoleBased: true, isFreeProvider: false }],
    ['alice', 'university.edu', { isDisposable: false, isRoleBased: false, isFreeProvider: false }],
  ])('%s@%s', (localPart, domain, facts) => {
    expect(lookupLists(localPart, domain)).toEqual(facts);
  });
});
