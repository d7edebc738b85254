import { describe, expect, it } from 'vitest';
import { normaliseMailbox } from './mailbox.ts';
import { createProviderRegistry, type MailProvider } from './providers.ts';
import { subaddressUser } from './subaddress.ts';

describe('normaliseMailbox', () => {
  it.each<[string, string]>([
    // case and a final dot of the domain
    ['Me@Example.COM', 'me@example.com'],
    ['  me@example.com. ', 'me@example.com'],
    // a sub-address is cut at the first separator, on any domain (RFC 5233)
    ['me+1@example.com', 'me@example.com'],
    ['me+a+b@example.com', 'me@example.com'],
    ['me+@example.com', 'me@example.com'],
    ['+tag@example.com', '+tag@example.com'], // no user part: kept
    // dots count, except at a provider that ignores them
    ['j.smith@example.com', 'j.smith@example.com'],
    ['j.smith@outlook.com', 'j.smith@outlook.com'],
    ['J.Smith+news@Gmail.com', 'jsmith@gmail.com'],
    ['j.s.m.i.t.h@googlemail.com', 'jsmith@googlemail.com'],
    ['jsmith+x.y@gmail.com', 'jsmith@gmail.com'],
    ['...@gmail.com', '...@gmail.com'], // nothing but dots: kept
    // a Google Workspace domain is not gmail.com: its dots matter
    ['j.smith@workspace.example', 'j.smith@workspace.example'],
    // Microsoft's plus addressing
    ['me+shop@hotmail.com', 'me@hotmail.com'],
    // not an address
    ['Not An Address', 'not an address'],
  ])('%s → %s', (address, mailbox) => {
    expect(normaliseMailbox(address)).toBe(mailbox);
  });

  it('reads the separator and the dots from the registry', () => {
    const provider = (localPart: MailProvider['localPart'], domain: string): MailProvider => ({
      id: domain,
      name: domain,
      family: domain,
      domains: [domain],
      mxSuffixes: [],
      rcpt: 'verifiable',
      ...(localPart ? { localPart } : {}),
    });
    const registry = createProviderRegistry([
      provider({ subaddressSeparator: '-' }, 'dash.example'),
      provider({ subaddressSeparator: null }, 'none.example'),
      provider({ ignoresDots: true }, 'dots.example'),
    ]);
    expect(normaliseMailbox('a.b-c+d@dash.example', registry)).toBe('a.b@dash.example');
    expect(normaliseMailbox('a.b+c@none.example', registry)).toBe('a.b+c@none.example');
    expect(normaliseMailbox('a.b+c@dots.example', registry)).toBe('ab@dots.example');
  });
});

describe('subaddressUser', () => {
  it.each<[string, string | null | undefined, string]>([
    ['ken+sieve', undefined, 'ken'], // RFC 5233's own example
    ['ken+a+b', '+', 'ken'],
    ['ken-sieve', '-', 'ken'],
    ['ken+sieve', null, 'ken+sieve'],
    ['+sieve', '+', '+sieve'],
    ['ken', '+', 'ken'],
  ])('%s with %s → %s', (localPart, separator, user) => {
    expect(separator === undefined ? subaddressUser(localPart) : subaddressUser(localPart, separator)).toBe(
      user,
    );
  });
});
