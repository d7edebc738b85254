// Special-purpose IP address ranges (RFC 6890 and the IANA registries it created): addresses
// that are private, loopback, link-local, documentation, benchmarking, multicast or reserved.
// A mail exchanger on the public Internet never has one, so an MX resolving only to these is
// unroutable for us (the mail route drops them), and a webhook aimed at one would reach into
// the network it is sent from. The table is ours; reading addresses and matching prefixes is
// ipaddr.js's, with the few places where rcpt reads stricter said where they are.
import ipaddr from 'ipaddr.js';

interface SpecialRange {
  /** CIDR prefix. */
  readonly prefix: string;
  readonly purpose: string;
  /**
   * The range carries an IPv4 address at this bit offset of the IPv6 address: the address is
   * special exactly when the embedded IPv4 address is.
   */
  readonly embeddedIpv4At?: number;
  /** No host can be reached at an address of this range: TCP cannot connect to it. */
  readonly notUnicast?: true;
}

const SPECIAL_RANGES: readonly SpecialRange[] = [
  // IPv4 (RFC 6890 §2.2.2 and the IANA IPv4 Special-Purpose Address Registry)
  // Connecting to 0.0.0.0 reaches the local host on Linux (RFC 1122 §3.2.1.3 "this network").
  { prefix: '0.0.0.0/8', purpose: 'this host on this network (RFC 1122)', notUnicast: true },
  { prefix: '10.0.0.0/8', purpose: 'private use (RFC 1918)' },
  { prefix: '100.64.0.0/10', purpose: 'shared address space, carrier-grade NAT (RFC 6598)' },
  { prefix: '127.0.0.0/8', purpose: 'loopback (RFC 1122)' },
  { prefix: '169.254.0.0/16', purpose: 'link-local (RFC 3927)' },
  { prefix: '172.16.0.0/12', purpose: 'private use (RFC 1918)' },
  // Two anycast /32s inside it are global, but neither is a mail server.
  { prefix: '192.0.0.0/24', purpose: 'IETF protocol assignments (RFC 6890)' },
  { prefix: '192.0.2.0/24', purpose: 'documentation, TEST-NET-1 (RFC 5737)' },
  { prefix: '192.88.99.0/24', purpose: 'deprecated 6to4 relay anycast (RFC 7526)' },
  { prefix: '192.168.0.0/16', purpose: 'private use (RFC 1918)' },
  { prefix: '198.18.0.0/15', purpose: 'benchmarking (RFC 2544)' },
  { prefix: '198.51.100.0/24', purpose: 'documentation, TEST-NET-2 (RFC 5737)' },
  { prefix: '203.0.113.0/24', purpose: 'documentation, TEST-NET-3 (RFC 5737)' },
  // Not in RFC 6890's table, but not a unicast host either.
  { prefix: '224.0.0.0/4', purpose: 'multicast (RFC 5771)', notUnicast: true },
  { prefix: '240.0.0.0/4', purpose: 'reserved, and limited broadcast (RFC 1112, RFC 919)', notUnicast: true },

  // IPv6 (RFC 6890 §2.2.3 and the IANA IPv6 Special-Purpose Address Registry)
  { prefix: '::ffff:0:0/96', purpose: 'IPv4-mapped (RFC 4291)', embeddedIpv4At: 96 },
  { prefix: '::/128', purpose: 'unspecified (RFC 4291 §2.5.2)', notUnicast: true },
  // Also holds ::1 (loopback); the IPv4-compatible form is deprecated.
  { prefix: '::/96', purpose: 'unspecified, loopback, IPv4-compatible (RFC 4291)' },
  { prefix: '64:ff9b::/96', purpose: 'NAT64 well-known prefix (RFC 6052)', embeddedIpv4At: 96 },
  { prefix: '64:ff9b:1::/48', purpose: 'local-use IPv4/IPv6 translation (RFC 8215)' },
  { prefix: '100::/64', purpose: 'discard-only (RFC 6666)' },
  { prefix: '2001::/23', purpose: 'IETF protocol assignments, incl. Teredo and ORCHID (RFC 2928)' },
  { prefix: '2001:db8::/32', purpose: 'documentation (RFC 3849)' },
  { prefix: '2002::/16', purpose: '6to4 (RFC 3056)', embeddedIpv4At: 16 },
  { prefix: '3fff::/20', purpose: 'documentation (RFC 9637)' },
  { prefix: '5f00::/16', purpose: 'SRv6 SIDs (RFC 9602)' },
  { prefix: 'fc00::/7', purpose: 'unique local (RFC 4193)' },
  { prefix: 'fe80::/10', purpose: 'link-local unicast (RFC 4291)' },
  { prefix: 'fec0::/10', purpose: 'deprecated site-local (RFC 3879)' },
  { prefix: 'ff00::/8', purpose: 'multicast (RFC 4291)', notUnicast: true },
];

type Address = ipaddr.IPv4 | ipaddr.IPv6;

interface ParsedRange {
  network: Address;
  length: number;
  embeddedIpv4At: number | undefined;
  notUnicast: boolean;
}

const PARSED_RANGES: readonly ParsedRange[] = SPECIAL_RANGES.map(parseRange);

/**
 * Whether `ip` is a special-purpose address (RFC 6890): anything but a globally routable
 * unicast address. A string that is not an IP address counts as special, so a caller that
 * filters on this never lets through something it cannot route.
 */
export function isSpecialPurposeAddress(ip: string): boolean {
  const address = parseAddress(ip);
  if (address === null) return true;
  return specialRangeOf(address) !== null;
}

/**
 * Whether `ip` is an address no TCP connection can reach a host at: "this network" (0/8),
 * the unspecified address, multicast, reserved and broadcast, judged as its embedded IPv4
 * address where it carries one. A string that is not an IP address counts too.
 */
export function isNotUnicastAddress(ip: string): boolean {
  const address = parseAddress(ip);
  if (address === null) return true;
  return specialRangeOf(address)?.notUnicast ?? false;
}

/**
 * The IPv4 address an IPv6 address stands for, or null: IPv4-mapped and IPv4-compatible
 * (RFC 4291 §2.5.5), NAT64 through the well-known prefix (RFC 6052 §2.1) and 6to4 (RFC 3056
 * §2). A connection to one of these reaches that IPv4 host (through the stack or a
 * translator), so whoever judges the target must judge the IPv4 address.
 */
export function embeddedIpv4(ip: string): string | null {
  const address = parseAddress(ip);
  if (!(address instanceof ipaddr.IPv6)) return null;
  let at = PARSED_RANGES.find(
    (range) => range.embeddedIpv4At !== undefined && matches(address, range.network, range.length),
  )?.embeddedIpv4At;
  // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1); :: and ::1 are IPv6's own.
  const bytes = address.toByteArray();
  if (at === undefined && bytes.slice(0, 12).every((byte) => byte === 0) && (bytes[12] || bytes[13])) at = 96;
  if (at === undefined) return null;
  return ipv4At(address, at).toString();
}

/** A CIDR block (RFC 4632 §3.1; RFC 4291 §2.3 for IPv6), in its canonical text form. */
export interface CidrBlock {
  readonly network: Address;
  readonly length: number;
  /** The network address and length, `203.0.113.0/24`, `2001:db8::/32` (RFC 5952 for IPv6). */
  readonly text: string;
}

/**
 * Parses `address/length` (or a bare address, its own /32 or /128). Null when it is not one,
 * or when bits beyond the length are set (`203.0.113.7/24`): such a block usually means a
 * typing mistake, and reading it either way would surprise someone.
 */
export function parseCidr(text: string): CidrBlock | null {
  const [prefix, lengthText, extra] = text.trim().split('/');
  if (extra !== undefined || prefix === undefined) return null;
  const network = parseAddress(prefix);
  if (network === null) return null;
  const bits = network.kind() === 'ipv4' ? 32 : 128;
  // ipaddr.js would read `/024` as 24; a length is written without leading zeros.
  if (lengthText !== undefined && !/^(0|[1-9]\d{0,2})$/.test(lengthText)) return null;
  const length = lengthText === undefined ? bits : Number(lengthText);
  if (length > bits) return null;
  const canonical = formatAddress(network);
  if (formatAddress(networkOf(network, length)) !== canonical) return null;
  return { network, length, text: `${canonical}/${length}` };
}

/**
 * Whether `ip` lies in one of `blocks`. An IPv4-mapped IPv6 address (RFC 4291 §2.5.5.2) is
 * the IPv4 address it carries; anything that is not an address lies in none.
 */
export function isAddressInBlocks(ip: string, blocks: readonly CidrBlock[]): boolean {
  const address = parseAddress(ip);
  if (address === null) return false;
  const judged = unmapped(address);
  return blocks.some((block) => matches(judged, block.network, block.length));
}

/**
 * `ip` cut to its first `lengths.v4` or `lengths.v6` bits, written `network/bits`
 * (`203.0.113.0/24`, `2001:db8:1:2::/64`, RFC 5952 for IPv6), or null when it is not an
 * address. An IPv4-mapped IPv6 address is the IPv4 address it carries, and a zone index
 * (`%eth0`, RFC 4007 §11) is left out: it names an interface, not a network.
 */
export function networkPrefixOf(ip: string, lengths: { v4: number; v6: number }): string | null {
  const address = parseAddress(ip, 'drop');
  if (address === null) return null;
  const judged = unmapped(address);
  const length = judged.kind() === 'ipv4' ? lengths.v4 : lengths.v6;
  return `${formatAddress(networkOf(judged, length))}/${length}`;
}

/** The first range holding the address (its embedded IPv4 address's, where it carries one). */
function specialRangeOf(address: Address): ParsedRange | null {
  for (const range of PARSED_RANGES) {
    if (!matches(address, range.network, range.length)) continue;
    if (range.embeddedIpv4At === undefined || !(address instanceof ipaddr.IPv6)) return range;
    return specialRangeOf(ipv4At(address, range.embeddedIpv4At));
  }
  return null;
}

function parseRange(range: SpecialRange): ParsedRange {
  const [prefix, length] = range.prefix.split('/');
  const network = parseAddress(prefix ?? '');
  if (network === null || length === undefined) throw new Error(`bad special-purpose range ${range.prefix}`);
  return {
    network,
    length: Number(length),
    embeddedIpv4At: range.embeddedIpv4At,
    notUnicast: range.notUnicast ?? false,
  };
}

/** ipaddr.js throws when asked to match across families; an IPv4 address is in no IPv6 block. */
function matches(address: Address, network: Address, length: number): boolean {
  return address.kind() === network.kind() && address.match(network, length);
}

function unmapped(address: Address): Address {
  return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

/** The IPv4 address carried in the 32 bits at bit `at` of an IPv6 address. */
function ipv4At(address: ipaddr.IPv6, at: number): ipaddr.IPv4 {
  return new ipaddr.IPv4(address.toByteArray().slice(at / 8, at / 8 + 4));
}

/** The address with every bit past the first `length` cleared. */
function networkOf(address: Address, length: number): Address {
  const mask = (
    address.kind() === 'ipv4'
      ? ipaddr.IPv4.subnetMaskFromPrefixLength(length)
      : ipaddr.IPv6.subnetMaskFromPrefixLength(length)
  ).toByteArray();
  return ipaddr.fromByteArray(address.toByteArray().map((byte, index) => byte & (mask[index] ?? 0)));
}

function formatAddress(address: Address): string {
  return address instanceof ipaddr.IPv6 ? address.toRFC5952String() : address.toString();
}

/**
 * A textual IPv4 (dotted quad) or IPv6 (RFC 4291 §2.2) address, or null. Stricter than
 * ipaddr.js in three places, so one text means one address to every parser it meets: an IPv4
 * address, alone or ending an IPv6 one, is four decimal numbers without leading zeros ("010"
 * is octal to some parsers and decimal to others; "0x7f" and "2130706433" are addresses to
 * some); `::a.b.c.d` is the IPv4-compatible address it spells (RFC 4291 §2.5.5.1), where
 * ipaddr.js reads it as IPv4-mapped; and a zone index (`%eth0`) is refused unless `zone` says
 * to drop it, since it names an interface of one host only.
 */
function parseAddress(text: string, zone: 'refuse' | 'drop' = 'refuse'): Address | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (!ipaddr.IPv6.isValid(text)) return null;
  const [bare = '', zoneIndex] = text.split('%');
  if (zoneIndex !== undefined && zone === 'refuse') return null;
  const dotted = /[^:]*\.[^:]*$/.exec(bare)?.[0];
  if (dotted !== undefined && !ipaddr.IPv4.isValidFourPartDecimal(dotted)) return null;
  const { parts } = ipaddr.IPv6.parse(bare);
  if (dotted !== undefined && /^::[^:]*$/.test(bare)) parts[5] = 0;
  return new ipaddr.IPv6(parts);
}
