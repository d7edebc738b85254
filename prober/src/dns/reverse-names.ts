// The names an address is looked up under, with its labels reversed: its PTR name and its name
// on a DNS blocklist.
import { isIP } from 'node:net';

/**
 * The address's labels reversed, as DNSBL and reverse-DNS names begin (RFC 5782 §2.1 and §2.4,
 * https://www.rfc-editor.org/rfc/rfc5782): the octets of an IPv4 address, the 32 nibbles of an
 * IPv6 address. Null for text that is not an address.
 */
export function reversedLabels(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return address.split('.').reverse().join('.');
  if (family !== 6) return null;
  return expandIpv6(address).split('').reverse().join('.');
}

/** The DNSBL query name of `address` on `zone`: `2.0.0.127.zen.spamhaus.org` for 127.0.0.2. */
export function blocklistName(address: string, zone: string): string | null {
  const labels = reversedLabels(address);
  return labels === null ? null : `${labels}.${zone}`;
}

/** The PTR name of `address`: under in-addr.arpa or ip6.arpa (RFC 1035 §3.5, RFC 3596 §2.5). */
export function reverseName(address: string): string | null {
  const labels = reversedLabels(address);
  if (labels === null) return null;
  return `${labels}.${isIP(address) === 4 ? 'in-addr.arpa' : 'ip6.arpa'}`;
}

/** The 32 hex digits of an IPv6 address (an embedded IPv4 tail included), lower case. */
export function expandIpv6(address: string): string {
  let text = address.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4) {
    const [a = 0, b = 0, c = 0, d = 0] = v4.split('.').map(Number);
    text = `${text.slice(0, -v4.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  const groups = [
    ...headGroups,
    ...Array.from({ length: tail === undefined ? 0 : missing }, () => '0'),
    ...tailGroups,
  ];
  return groups.map((group) => group.padStart(4, '0')).join('');
}
