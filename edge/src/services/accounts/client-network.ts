// The network a client address belongs to, the key of per-network limits. One IPv6 customer
// gets a whole /64 (RFC 6177 §2 suggests at least that much per site; RFC 4291 §2.5.4 fixes
// a 64-bit interface identifier for global unicast), so counting IPv6 per address counts
// nothing: whoever holds a /64 can use a fresh address for every request.

import { networkPrefixOf } from '@rcpt/shared/ip-ranges';

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
  return networkPrefixOf(address, lengths) ?? address;
}
