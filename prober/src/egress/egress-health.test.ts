import type { LookupOutcome } from '@rcpt/shared/dns/lookup';
import { describe, expect, test } from 'vitest';
import { blocklistName, reverseName } from '../dns/reverse-names.ts';
import { type HealthAnswers, readHealth, usedByMostReceivers } from './egress-health.ts';

const ADDRESS = '198.51.100.7';
const NAME = 'out1.example.net';
const answer = (...records: string[]): LookupOutcome<string> => ({ kind: 'answer', records });
const NXDOMAIN: LookupOutcome<string> = { kind: 'nxdomain' };
const TIMEOUT: LookupOutcome<string> = { kind: 'failure', failure: 'timeout', detail: 'ETIMEOUT' };

function answers(overrides: Partial<HealthAnswers> = {}): HealthAnswers {
  return {
    egress: ADDRESS,
    address: ADDRESS,
    helo: NAME,
    ptr: answer(`${NAME}.`),
    forward: new Map([[NAME, answer(ADDRESS)]]),
    blocklists: [
      { zone: 'zen.spamhaus.org', outcome: NXDOMAIN },
      { zone: 'bl.spamcop.net', outcome: NXDOMAIN },
    ],
    port25: 'ok',
    checkedAt: 1_700_000_000_000,
    ...overrides,
  };
}

describe('query names (RFC 5782 §2.1, §2.4)', () => {
  test('IPv4: octets reversed', () => {
    expect(blocklistName('127.0.0.2', 'zen.spamhaus.org')).toBe('2.0.0.127.zen.spamhaus.org');
    expect(reverseName(ADDRESS)).toBe('7.100.51.198.in-addr.arpa');
  });

  test('IPv6: 32 nibbles reversed, compressed and embedded-IPv4 forms expanded', () => {
    // RFC 5782 §2.4's own example.
    expect(blocklistName('2001:db8:1:2:3:4:567:89ab', 'ugly.example.com')).toBe(
      'b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2.ugly.example.com',
    );
    expect(reverseName('2001:db8::1')).toBe(
      '1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa',
    );
    expect(blocklistName('::ffff:192.0.2.1', 'z')).toBe(
      '1.0.2.0.0.0.0.c.f.f.f.f.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.z',
    );
    expect(blocklistName('not an address', 'z')).toBeNull();
  });
});

describe('readHealth', () => {
  test('a clean egress: FCrDNS passes, HELO is the PTR name, no listing', () => {
    expect(readHealth(answers())).toEqual({
      egress: ADDRESS,
      address: ADDRESS,
      ptr: NAME,
      fcrdns: 'pass',
      heloMatches: true,
      listings: [],
      unchecked: [],
      port25: 'ok',
      checkedAt: 1_700_000_000_000,
    });
  });

  test.each([
    ['127.0.0.2', 'SBL'],
    ['127.0.0.3', 'SBL CSS'],
    ['127.0.0.4', 'XBL'],
    ['127.0.0.7', 'XBL'],
    ['127.0.0.9', 'SBL DROP'],
    ['127.0.0.10', 'PBL'],
    ['127.0.0.11', 'PBL'],
  ])('Spamhaus ZEN %s is a listing: %s', (code, meaning) => {
    const health = readHealth(answers({ blocklists: [{ zone: 'zen.spamhaus.org', outcome: answer(code) }] }));
    expect(health.listings).toEqual([
      { zone: 'zen.spamhaus.org', codes: [code], meaning: expect.any(String) },
    ]);
    expect(health.listings[0]?.meaning.startsWith(meaning)).toBe(true);
    expect(health.unchecked).toEqual([]);
  });

  test('several codes at once: all kept, in order, with each meaning', () => {
    const health = readHealth(
      answers({ blocklists: [{ zone: 'zen.spamhaus.org', outcome: answer('127.0.0.10', '127.0.0.4') }] }),
    );
    expect(health.listings[0]?.codes).toEqual(['127.0.0.4', '127.0.0.10']);
    expect(health.listings[0]?.meaning).toMatch(/^XBL.*; PBL/);
  });

  test.each(['127.255.255.252', '127.255.255.254', '127.255.255.255'])(
    'Spamhaus error %s is not a listing: the list is unchecked',
    (code) => {
      const health = readHealth(
        answers({ blocklists: [{ zone: 'zen.spamhaus.org', outcome: answer(code) }] }),
      );
      expect(health.listings).toEqual([]);
      expect(health.unchecked).toEqual([{ zone: 'zen.spamhaus.org', why: expect.stringContaining(code) }]);
    },
  );

  test('a lookup failure or an answer outside 127.0.0.0/24 is unchecked, never listed', () => {
    const health = readHealth(
      answers({
        blocklists: [
          { zone: 'zen.spamhaus.org', outcome: TIMEOUT },
          { zone: 'bl.spamcop.net', outcome: answer('203.0.113.9') },
          { zone: 'b.barracudacentral.org', outcome: answer() },
        ],
      }),
    );
    expect(health.listings).toEqual([]);
    expect(health.unchecked.map((entry) => entry.zone)).toEqual(['zen.spamhaus.org', 'bl.spamcop.net']);
  });

  test('Barracuda and SpamCop 127.0.0.2, and an unknown zone’s code, are listings', () => {
    const health = readHealth(
      answers({
        blocklists: [
          { zone: 'b.barracudacentral.org', outcome: answer('127.0.0.2') },
          { zone: 'bl.spamcop.net', outcome: answer('127.0.0.2') },
          { zone: 'dnsbl.example.org', outcome: answer('127.0.0.5') },
        ],
      }),
    );
    expect(health.listings.map(({ zone, meaning }) => [zone, meaning])).toEqual([
      ['b.barracudacentral.org', 'listed on the Barracuda BRBL'],
      ['bl.spamcop.net', 'listed on the SpamCop BL'],
      ['dnsbl.example.org', 'listed (127.0.0.5)'],
    ]);
  });

  test('FCrDNS fails when the PTR name resolves elsewhere; HELO still compared with the PTR name', () => {
    const health = readHealth(
      answers({ helo: 'mail.example.net', forward: new Map([[NAME, answer('198.51.100.8')]]) }),
    );
    expect(health.fcrdns).toBe('fail');
    expect(health.ptr).toBe(NAME);
    expect(health.heloMatches).toBe(false);
  });

  test('FCrDNS fails without a PTR record; a second PTR name that resolves back passes', () => {
    expect(readHealth(answers({ ptr: NXDOMAIN }))).toMatchObject({
      fcrdns: 'fail',
      ptr: null,
      heloMatches: null,
    });
    expect(readHealth(answers({ ptr: answer() })).fcrdns).toBe('fail');
    const second = readHealth(
      answers({
        ptr: answer('other.example.net', NAME),
        forward: new Map([
          ['other.example.net', NXDOMAIN],
          [NAME, answer('192.0.2.1', ADDRESS)],
        ]),
      }),
    );
    expect(second).toMatchObject({ fcrdns: 'pass', ptr: NAME, heloMatches: true });
  });

  test('FCrDNS is unknown when a lookup got no answer, never fail', () => {
    expect(readHealth(answers({ ptr: TIMEOUT })).fcrdns).toBe('unknown');
    expect(readHealth(answers({ forward: new Map([[NAME, TIMEOUT]]) })).fcrdns).toBe('unknown');
  });

  test('IPv6: the AAAA answer is compared as an address, not as text', () => {
    const address = '2001:db8::7';
    const health = readHealth(
      answers({ egress: address, address, forward: new Map([[NAME, answer('2001:0db8:0:0:0:0:0:7')]]) }),
    );
    expect(health.fcrdns).toBe('pass');
  });

  test('no known address: nothing is checked, nothing fails', () => {
    expect(readHealth(answers({ address: null, ptr: null, blocklists: [] }))).toMatchObject({
      address: null,
      fcrdns: 'unknown',
      heloMatches: null,
      listings: [],
    });
  });

  test('only Spamhaus ZEN is a list most receivers use', () => {
    expect(usedByMostReceivers('zen.spamhaus.org')).toBe(true);
    expect(usedByMostReceivers('ZEN.spamhaus.org')).toBe(true);
    expect(usedByMostReceivers('bl.spamcop.net')).toBe(false);
    expect(usedByMostReceivers('b.barracudacentral.org')).toBe(false);
  });
});
