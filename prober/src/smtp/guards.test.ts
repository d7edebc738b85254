import { describe, expect, test } from 'vitest';
import { guardFailure, targetIpRefusal, wireTextRefusal } from './guards.ts';

describe('targetIpRefusal', () => {
  test.each([
    ['8.8.8.8'],
    ['142.250.27.26'],
    ['172.15.255.255'], // just below 172.16/12
    ['172.32.0.1'], // just above it
    ['100.63.255.255'], // just below 100.64/10
    ['100.128.0.1'], // just above it
    ['192.169.0.1'],
    ['2a00:1450:400c:c0b::1b'],
    ['::ffff:8.8.8.8'],
    ['64:ff9b::8.8.8.8'], // NAT64 to a public host
    ['2002:808:808::1'], // 6to4 of 8.8.8.8
  ])('dials the public address %s', (ip) => {
    expect(targetIpRefusal(ip, false)).toBeNull();
  });

  test.each([
    ['10.0.0.1', 'RFC 1918'],
    ['10.255.255.255', 'RFC 1918'],
    ['172.16.0.1', 'RFC 1918'],
    ['172.31.255.254', 'RFC 1918'],
    ['192.168.1.1', 'RFC 1918'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['::1', 'IPv6 loopback'],
    ['fc00::1', 'unique local'],
    ['fd12:3456::1', 'unique local'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with a zone'],
    ['::ffff:127.0.0.1', 'v4-mapped loopback'],
    ['::ffff:10.1.2.3', 'v4-mapped private'],
    ['::ffff:7f00:1', 'v4-mapped loopback in hex'],
    ['::ffff:a9fe:a9fe', 'v4-mapped link-local in hex'],
    ['64:ff9b::127.0.0.1', 'NAT64 well-known prefix to loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 to the cloud metadata address'],
    ['64:ff9b::10.0.0.1', 'NAT64 to RFC 1918'],
    ['64:ff9b:1::8.8.8.8', 'local-use NAT64 prefix (RFC 8215)'],
    ['64:ff9b:1:ab::1', 'local-use NAT64 prefix (RFC 8215)'],
    ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
    ['2002:a9fe:a9fe::', '6to4 of 169.254.169.254'],
    ['2002:c0a8:101:1::25', '6to4 of 192.168.1.1'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::a00:1', 'IPv4-compatible RFC 1918 in hex'],
    ['2001:db8::25', 'documentation'],
  ])('refuses %s (%s) unless private targets are allowed', (ip) => {
    expect(targetIpRefusal(ip, false)).toMatch(/private, loopback or link-local/);
    expect(targetIpRefusal(ip, true)).toBeNull();
  });

  test.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '"this network"'],
    ['::', 'IPv6 unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:224.0.0.1', 'v4-mapped multicast'],
    ['64:ff9b::224.0.0.1', 'NAT64 to multicast'],
    ['2002:e000:1::1', '6to4 of multicast'],
    ['64:ff9b::0.0.0.0', 'NAT64 to "this network"'],
  ])('refuses %s (%s) even when private targets are allowed', (ip) => {
    expect(targetIpRefusal(ip, true)).toMatch(/not a unicast address/);
    expect(targetIpRefusal(ip, false)).toMatch(/not a unicast address/);
  });

  test.each([['mx.example.com'], [''], ['127.0.0.1:25'], ['1.2.3'], ['localhost']])(
    'refuses %j: only IP literals are dialled',
    (ip) => {
      expect(targetIpRefusal(ip, true)).toMatch(/not an IP address/);
    },
  );
});

describe('wireTextRefusal', () => {
  test.each([
    ['alice@example.com'],
    ['"quoted local"@example.org'],
    ['jürgen@bücher.test'],
    ['用户@例子.广告'],
    ['prober.rcpt.test'],
    [''],
  ])('lets %j through', (text) => {
    expect(wireTextRefusal(text, 'the address')).toBeNull();
  });

  test.each([
    ['alice\r\nRCPT TO:<bob@example.com>@example.com', 'U+000D'],
    ['alice\n@example.com', 'U+000A'],
    ['alice\r@example.com', 'U+000D'],
    ['prober\u0000.rcpt.test', 'U+0000'],
    ['tab\there@example.com', 'U+0009'],
    ['esc\u001b[2J@example.com', 'U+001B'],
    ['del\u007f@example.com', 'U+007F'],
    ['c1\u0085@example.com', 'U+0085'],
  ])('refuses %j (%s)', (text, codePoint) => {
    expect(wireTextRefusal(text, 'the address')).toBe(
      `the address contains the control character ${codePoint}`,
    );
  });
});

test('guardFailure is a target_refused failure at the guard stage', () => {
  expect(guardFailure('no')).toEqual({ kind: 'target_refused', stage: 'guard', reply: null, message: 'no' });
});
