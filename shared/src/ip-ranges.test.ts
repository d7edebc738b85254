import { describe, expect, it } from 'vitest';
import {
  embeddedIpv4,
  isAddressInBlocks,
  isNotUnicastAddress,
  isSpecialPurposeAddress,
  networkPrefixOf,
  parseCidr,
} from './ip-ranges.ts';

// Each special-purpose range with its first and last address, and the nearest addresses
// outside it that are public, so an off-by-one prefix length fails here.
const SPECIAL: readonly [range: string, inside: readonly string[], outside: readonly string[]][] = [
  ['0.0.0.0/8', ['0.0.0.0', '0.255.255.255'], ['1.0.0.1']],
  ['10.0.0.0/8', ['10.0.0.0', '10.255.255.255'], ['9.255.255.255', '11.0.0.0']],
  ['100.64.0.0/10', ['100.64.0.0', '100.127.255.255'], ['100.63.255.255', '100.128.0.0']],
  ['127.0.0.0/8', ['127.0.0.1', '127.255.255.255'], ['126.255.255.255', '128.0.0.0']],
  ['169.254.0.0/16', ['169.254.0.0', '169.254.255.255'], ['169.253.255.255', '169.255.0.0']],
  ['172.16.0.0/12', ['172.16.0.0', '172.31.255.255'], ['172.15.255.255', '172.32.0.0']],
  ['192.0.0.0/24', ['192.0.0.0', '192.0.0.255'], ['192.0.1.0']],
  ['192.0.2.0/24', ['192.0.2.0', '192.0.2.255'], ['192.0.3.0']],
  ['192.88.99.0/24', ['192.88.99.1'], ['192.88.98.255', '192.88.100.0']],
  ['192.168.0.0/16', ['192.168.0.0', '192.168.255.255'], ['192.167.255.255', '192.169.0.0']],
  ['198.18.0.0/15', ['198.18.0.0', '198.19.255.255'], ['198.17.255.255', '198.20.0.0']],
  ['198.51.100.0/24', ['198.51.100.7'], ['198.51.101.0']],
  ['203.0.113.0/24', ['203.0.113.7'], ['203.0.112.255', '203.0.114.0']],
  ['224.0.0.0/4', ['224.0.0.1', '239.255.255.255'], ['223.255.255.255']],
  ['240.0.0.0/4', ['240.0.0.0', '255.255.255.255'], []],
  ['::/96', ['::', '::1', '::192.0.2.1'], ['1::1']],
  [
    '::ffff:0:0/96 (private v4 inside)',
    ['::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:10.1.2.3'],
    ['::ffff:8.8.8.8'],
  ],
  ['64:ff9b::/96 (private v4 inside)', ['64:ff9b::10.0.0.1', '64:ff9b::c0a8:1'], ['64:ff9b::8.8.8.8']],
  ['64:ff9b:1::/48', ['64:ff9b:1::1', '64:ff9b:1:ffff::1'], ['64:ff9b:2::1']],
  ['100::/64', ['100::', '100::ffff:ffff:ffff:ffff'], ['100:0:0:1::']],
  ['2001::/23', ['2001::1', '2001:1ff:ffff::1'], ['2001:200::1']],
  ['2001:db8::/32', ['2001:db8::1', '2001:db8:ffff:ffff::1'], ['2001:db9::1']],
  ['2002::/16 (private v4 inside)', ['2002:7f00:1::1', '2002:a00:1::'], ['2002:808:808::1']],
  ['3fff::/20', ['3fff::1', '3fff:fff::1'], ['3fff:1000::1']],
  ['5f00::/16', ['5f00::1'], ['5f01::1']],
  ['fc00::/7', ['fc00::1', 'fd12:3456:789a::1'], ['fe00::1', 'fbff::1']],
  ['fe80::/10', ['fe80::1', 'febf:ffff::1'], []],
  ['fec0::/10', ['fec0::1', 'feff::1'], []],
  ['ff00::/8', ['ff02::1', 'ff0e::101'], []],
];

describe('isSpecialPurposeAddress', () => {
  it.each(SPECIAL)('%s', (_range, inside, outside) => {
    for (const ip of inside) expect(isSpecialPurposeAddress(ip), ip).toBe(true);
    for (const ip of outside) expect(isSpecialPurposeAddress(ip), ip).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '142.250.27.26',
    '2a00:1450:400c:c0b::1a',
    '2606:4700:4700::1111',
    '2001:4860:4860:0000:0000:0000:0000:8888',
  ])('%s is public', (ip) => {
    expect(isSpecialPurposeAddress(ip)).toBe(false);
  });

  // Anything that is not an address cannot be routed to, so it counts as special.
  it.each([
    '',
    'mx.example.com',
    '256.1.1.1',
    '1.2.3',
    '010.0.0.1',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7:8::',
    '1.2.3.4::',
    'fe80::1%eth0',
    '12345::',
    // Spellings some parsers read as an address and others refuse or read otherwise.
    '0x7f.0.0.1',
    '2130706433',
    '::ffff:010.0.0.1',
    '::ffff:0x7f.0.0.1',
    '::ffff:08.08.08.08',
  ])('%j is not an address', (text) => {
    expect(isSpecialPurposeAddress(text)).toBe(true);
  });
});

describe('::a.b.c.d is the IPv4-compatible address it spells (RFC 4291 §2.5.5.1), not IPv4-mapped', () => {
  it('in ::/96 like its hexadecimal spelling, so special even when the IPv4 address is public', () => {
    expect([isSpecialPurposeAddress('::8.8.8.8'), isSpecialPurposeAddress('::808:808')]).toEqual([
      true,
      true,
    ]);
    expect(isSpecialPurposeAddress('::ffff:8.8.8.8')).toBe(false);
  });

  it('an allow-list of IPv4 blocks does not take it for the IPv4 address', () => {
    const block = parseCidr('203.0.113.0/24');
    if (!block) throw new Error('203.0.113.0/24');
    expect([
      isAddressInBlocks('::203.0.113.9', [block]),
      isAddressInBlocks('::ffff:203.0.113.9', [block]),
    ]).toEqual([false, true]);
  });
});

describe('embeddedIpv4', () => {
  it.each([
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::ffff:c000:201', '192.0.2.1'],
    ['::192.0.2.1', '192.0.2.1'],
    ['::c000:201', '192.0.2.1'],
    ['64:ff9b::8.8.8.8', '8.8.8.8'],
    ['2002:808:808::1', '8.8.8.8'],
    ['::1', null],
    ['::', null],
    ['2001:db8::1', null],
    ['8.8.8.8', null],
    ['not an address', null],
  ])('%s → %s', (ip, ipv4) => {
    expect(embeddedIpv4(ip)).toBe(ipv4);
  });
});

describe('isNotUnicastAddress', () => {
  it.each([
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.255',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    'ff02::1',
    '::ffff:224.0.0.1',
    '64:ff9b::0.0.0.0',
  ])('%s reaches no host', (ip) => {
    expect(isNotUnicastAddress(ip)).toBe(true);
  });

  // Special-purpose but unicast: a host answers there, so only a deployment's policy refuses it.
  it.each(['127.0.0.1', '10.0.0.1', '::1', 'fe80::1', '169.254.1.1', '8.8.8.8', '2606:4700:4700::1111'])(
    '%s is unicast',
    (ip) => {
      expect(isNotUnicastAddress(ip)).toBe(false);
    },
  );
});

describe('parseCidr', () => {
  it.each([
    ['203.0.113.0/24', '203.0.113.0/24'],
    [' 198.51.100.7 ', '198.51.100.7/32'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8::/32', '2001:db8::/32'],
    ['2001:db8:0:0:1:0:0:0/80', '2001:db8:0:0:1::/80'],
    ['2001:db8::1', '2001:db8::1/128'],
    ['::/0', '::/0'],
  ])('reads %s as %s', (text, canonical) => {
    expect(parseCidr(text)?.text).toBe(canonical);
  });

  it.each([
    ['203.0.113.7/24', 'host bits set'],
    ['203.0.113.0/33', 'too long for IPv4'],
    ['2001:db8::/129', 'too long for IPv6'],
    ['203.0.113.0/024', 'leading zero in the length'],
    ['203.0.113.0/', 'empty length'],
    ['203.0.113/24', 'three octets'],
    ['10.0.0.0/8/8', 'two lengths'],
    ['example.com/24', 'a name'],
    ['', 'nothing'],
  ])('refuses %s (%s)', (text) => {
    expect(parseCidr(text)).toBeNull();
  });
});

describe('isAddressInBlocks', () => {
  const blocks = ['203.0.113.0/24', '2001:db8::/32', '192.0.2.9'].map((text) => {
    const block = parseCidr(text);
    if (!block) throw new Error(text);
    return block;
  });

  it.each([
    ['203.0.113.0', true],
    ['203.0.113.255', true],
    ['203.0.112.255', false],
    ['203.0.114.0', false],
    ['192.0.2.9', true],
    ['192.0.2.10', false],
    ['2001:db8::1', true],
    ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:db9::', false],
    // IPv4-mapped: the IPv4 address it carries.
    ['::ffff:203.0.113.9', true],
    ['::ffff:cb00:7109', true],
    ['::ffff:198.51.100.1', false],
    ['not an address', false],
    ['', false],
  ] as const)('%s → %s', (address, inside) => {
    expect(isAddressInBlocks(address, blocks)).toBe(inside);
  });

  it('an address matches no block of the other family, and an empty list holds nothing', () => {
    const v4 = parseCidr('0.0.0.0/0');
    expect(v4 && isAddressInBlocks('2001:db8::1', [v4])).toBe(false);
    expect(isAddressInBlocks('203.0.113.9', [])).toBe(false);
  });
});

describe('networkPrefixOf', () => {
  it.each([
    ['203.0.113.7', '203.0.113.0/24'],
    ['::ffff:203.0.113.7', '203.0.113.0/24'],
    ['2001:db8:1:2:aaaa::1', '2001:db8:1:2::/64'],
    // A zone index names an interface of the host, not a network: left out.
    ['fe80::1%eth0', 'fe80::/64'],
    ['2001:db8::1::2', null],
    ['local', null],
  ])('%s → %s', (ip, prefix) => {
    expect(networkPrefixOf(ip, { v4: 24, v6: 64 })).toBe(prefix);
  });
});
