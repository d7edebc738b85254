import { describe, expect, it } from 'vitest';
import { networkPrefix } from './client-network.ts';

const SIGN_UP = { v4: 24, v6: 64 };
const ADDRESS = { v4: 32, v6: 64 };

describe('networkPrefix', () => {
  it.each([
    // IPv4: the /24, whatever the last octet.
    ['203.0.113.7', SIGN_UP, '203.0.113.0/24'],
    ['203.0.113.254', SIGN_UP, '203.0.113.0/24'],
    ['198.51.100.7', SIGN_UP, '198.51.100.0/24'],
    ['203.0.113.7', ADDRESS, '203.0.113.7/32'],
    ['10.1.2.3', { v4: 20, v6: 64 }, '10.1.0.0/20'],
    // IPv6: the /64, whatever the interface identifier, in RFC 5952 form.
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', SIGN_UP, '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::1', SIGN_UP, '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:0000:0000:0000:0001', SIGN_UP, '2001:db8:1:2::/64'],
    ['2001:db8::1', SIGN_UP, '2001:db8::/64'],
    ['2001:db8:0:0:1:0:0:1', { v4: 32, v6: 128 }, '2001:db8::1:0:0:1/128'],
    ['2001:db8:1:2::1%eth0', SIGN_UP, '2001:db8:1:2::/64'],
    ['2001:db8:1:23ff:ffff::', { v4: 24, v6: 56 }, '2001:db8:1:2300::/56'],
    ['::1', SIGN_UP, '::/64'],
    // IPv4-mapped IPv6 (RFC 4291 §2.5.5.2) is the IPv4 address it carries, in both notations.
    ['::ffff:203.0.113.7', SIGN_UP, '203.0.113.0/24'],
    ['::ffff:cb00:7107', SIGN_UP, '203.0.113.0/24'],
    ['0:0:0:0:0:ffff:203.0.113.7', ADDRESS, '203.0.113.7/32'],
    // Not an address: a key of its own, unchanged.
    ['local', SIGN_UP, 'local'],
    ['256.1.1.1', SIGN_UP, '256.1.1.1'],
    ['1.2.3', SIGN_UP, '1.2.3'],
    ['2001:db8::1::2', SIGN_UP, '2001:db8::1::2'],
    ['2001:db8:1:2:3:4:5:6:7', SIGN_UP, '2001:db8:1:2:3:4:5:6:7'],
    ['2001:db8:g::1', SIGN_UP, '2001:db8:g::1'],
  ])('%s with %j is %s', (address, lengths, expected) => {
    expect(networkPrefix(address, lengths)).toBe(expected);
  });

  it('puts every address of one /64 under one key and a neighbouring /64 under another', () => {
    const keys = new Set(
      ['2001:db8:5:6::1', '2001:db8:5:6:ffff:ffff:ffff:ffff', '2001:db8:5:6:1234::abcd'].map((address) =>
        networkPrefix(address, SIGN_UP),
      ),
    );
    expect([...keys]).toEqual(['2001:db8:5:6::/64']);
    expect(networkPrefix('2001:db8:5:7::1', SIGN_UP)).toBe('2001:db8:5:7::/64');
  });
});
