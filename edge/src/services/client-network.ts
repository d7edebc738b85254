// The network a client address belongs to, the key of per-network limits. One IPv6 customer
// gets a whole /64 (RFC 6177 §2 suggests at least that much per site; RFC 4291 §2.5.4 fixes
// a 64-bit interface identifier for global unicast), so counting IPv6 per address counts
// nothing: whoever holds a /64 can use a fresh address for every request.

import { formatIpv6Groups } from '@rcpt/shared/ip-ranges';

export interface PrefixLengths {
  /** Bits kept of an IPv4 address (32: the address itself). */
  v4: number;
  /** Bits kept of an IPv6 address. */
  v6: number;
}

/**
 * What one holder controls: an IPv4 /24 and an IPv6 /48, the longest prefixes networks route
 * between one another (RFC 7454 §6.1.3); a holder of one can use any address inside it. A limit
 * keyed by this counts a network's holder, not one of their addresses.
 */
export const HOLDER_NETWORK: PrefixLengths = { v4: 24, v6: 48 };

/**
 * `address` reduced to its first `lengths.v4` or `lengths.v6` bits, written `network/bits`
 * (`203.0.113.0/24`, `2001:db8:1:2::/64`). An IPv4-mapped IPv6 address (`::ffff:203.0.113.7`,
 * RFC 4291 §2.5.5.2) is the IPv4 address it carries. Anything that is not an IP address is
 * returned unchanged, so it is still a key of its own.
 */
export function networkPrefix(address: string, lengths: PrefixLengths): string {
  const v4 = parseIpv4(address);
  if (v4) return `${maskIpv4(v4, lengths.v4).join('.')}/${lengths.v4}`;
  const v6 = parseIpv6(address);
  if (!v6) return address;
  const mapped = v6.slice(0, 5).every((group) => group === 0) && v6[5] === 0xffff;
  if (mapped) {
    const carried = [v6[6]! >> 8, v6[6]! & 0xff, v6[7]! >> 8, v6[7]! & 0xff];
    return `${maskIpv4(carried, lengths.v4).join('.')}/${lengths.v4}`;
  }
  return `${formatIpv6Groups(maskBits(v6, lengths.v6, 16))}/${lengths.v6}`;
}

function parseIpv4(text: string): number[] | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!match) return null;
  const octets = match.slice(1).map(Number);
  return octets.every((octet) => octet <= 255) ? octets : null;
}

function maskIpv4(octets: number[], bits: number): number[] {
  return maskBits(octets, bits, 8);
}

/** Keeps the first `bits` bits of a big-endian list of `width`-bit numbers. */
function maskBits(parts: number[], bits: number, width: number): number[] {
  return parts.map((part, index) => {
    const kept = Math.min(width, Math.max(0, bits - index * width));
    return kept === 0 ? 0 : part & (((1 << kept) - 1) << (width - kept));
  });
}

/** The eight 16-bit groups of an IPv6 address (RFC 4291 §2.2 text forms), or null. */
function parseIpv6(text: string): number[] | null {
  const address = text.replace(/%.*$/, '').toLowerCase();
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (half: string): number[] | null => {
    if (half === '') return [];
    const groups: number[] = [];
    const pieces = half.split(':');
    for (const [index, piece] of pieces.entries()) {
      if (index === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4(piece);
        if (!v4) return null;
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-f]{1,4}$/.test(piece)) {
        groups.push(Number.parseInt(piece, 16));
      } else {
        return null;
      }
    }
    return groups;
  };
  const head = groupsOf(halves[0] ?? '');
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '') : [];
  if (!head || !tail) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  return missing >= 1 ? [...head, ...new Array<number>(missing).fill(0), ...tail] : null;
}
