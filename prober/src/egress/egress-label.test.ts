import { describe, expect, test } from 'vitest';
import { directEgress, socks5Egress } from './egress.ts';
import { egressLabel, egressMasker, egressNames, type TextSource } from './egress-label.ts';

describe('egressLabel', () => {
  test('is the region and six hex digits, the same for the same egress and key', () => {
    const label = egressLabel('203.0.113.7', 'eu', 'token-1');
    expect(label).toMatch(/^eu-[0-9a-f]{6}$/);
    expect(egressLabel('203.0.113.7', 'eu', 'token-1')).toBe(label);
  });

  test('tells egresses apart and depends on the key, so an address cannot be found by trying them all', () => {
    const label = egressLabel('203.0.113.7', 'eu', 'token-1');
    expect(egressLabel('203.0.113.8', 'eu', 'token-1')).not.toBe(label);
    expect(egressLabel('203.0.113.7', 'eu', 'token-2')).not.toBe(label);
    expect(label).not.toContain('203');
  });
});

describe('egressMasker', () => {
  const label = 'eu-3fa91c';
  const proxy = socks5Egress({ host: 'proxy1.example.net', port: 1080, username: 'u', password: 'p' });
  const mask = egressMasker({
    label,
    names: [...egressNames(directEgress('198.51.100.7')), ...egressNames(proxy), 'out1.example.net'],
    mxIp: '192.0.2.25',
  });

  test.each<[string, TextSource, string]>([
    // Block-list refusals name the client's address (Spamhaus's wording, as Postfix relays it).
    [
      '554 5.7.1 Service unavailable; Client host [198.51.100.7] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/198.51.100.7',
      'reply',
      `554 5.7.1 Service unavailable; Client host [${label}] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/${label}`,
    ],
    // An address the prober does not know (its public address behind NAT) is masked in replies too.
    [
      'mx.example.com Hello out1.example.net [203.0.113.99]',
      'reply',
      `mx.example.com Hello ${label} [${label}]`,
    ],
    ['mx.google.com at your service, [2001:db8:1::7]', 'reply', `mx.google.com at your service, [${label}]`],
    ['Hello [IPv6:2001:DB8:1::7].', 'reply', `Hello [IPv6:${label}].`],
    // A DNSBL query name spells the address backwards.
    ['listed at 7.100.51.198.zen.spamhaus.org', 'reply', `listed at ${label}.zen.spamhaus.org`],
    // The MX's own address is the customer's to see.
    ['connect ECONNREFUSED 192.0.2.25:25', 'reply', 'connect ECONNREFUSED 192.0.2.25:25'],
    // Failure texts of session.ts: the proxy's URL and host, the bound address.
    [
      'connection_failed at connect: through socks5://proxy1.example.net:1080: SOCKS5 authentication failed',
      'reply',
      `connection_failed at connect: through ${label}: SOCKS5 authentication failed`,
    ],
    [
      'connection_failed at connect: bind EADDRNOTAVAIL 198.51.100.7',
      'reply',
      `connection_failed at connect: bind EADDRNOTAVAIL ${label}`,
    ],
    // Times and versions are not addresses.
    ['closing at 12:34:56, Postfix 3.7', 'reply', 'closing at 12:34:56, Postfix 3.7'],
    // rcpt's commands: the HELO name is masked; a customer's address literal is not.
    ['EHLO OUT1.example.net', 'command', `EHLO ${label}`],
    ['RCPT TO:<user@[203.0.113.99]>', 'command', 'RCPT TO:<user@[203.0.113.99]>'],
  ])('%s (%s)', (text, source, masked) => {
    expect(mask(text, source)).toBe(masked);
  });
});
