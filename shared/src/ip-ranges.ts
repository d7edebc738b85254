// Special-purpose IP address ranges (RFC 6890 and the IANA registries it created): addresses
// that are private, loopback, link-local, documentation, benchmarking, multicast or reserved.
// A mail exchanger on the public Internet never has one, so an MX resolving only to these is
// unroutable for us (the mail route drops them), and a webhook aimed at one would reach into
// the network it is sent from.

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

type Family = 4 | 6;
const BITS: Record<Family, number> = { 4: 32, 6: 128 };

interface ParsedAddress {
  family: Family;
  value: bigint;
}

interface ParsedRange {
  family: Family;
  base: bigint;
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
  if (address === null || address.family !== 6) return null;
  let at: number | undefined;
  for (const range of PARSED_RANGES) {
    if (range.family !== 6 || range.embeddedIpv4At === undefined) continue;
    const shift = BigInt(128 - range.length);
    if (address.value >> shift === range.base >> shift) at = range.embeddedIpv4At;
  }
  // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1); :: and ::1 are IPv6's own.
  if (at === undefined && address.value >> 32n === 0n && address.value > 0xffffn) at = 96;
  if (at === undefined) return null;
  return formatAddress({ family: 4, value: (address.value >> BigInt(128 - at - 32)) & 0xffff_ffffn });
}

/** A CIDR block (RFC 4632 §3.1; RFC 4291 §2.3 for IPv6), in its canonical text form. */
export interface CidrBlock {
  readonly family: Family;
  readonly base: bigint;
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
  const base = parseAddress(prefix);
  if (base === null) return null;
  const bits = BITS[base.family];
  if (lengthText !== undefined && !/^(0|[1-9]\d{0,2})$/.test(lengthText)) return null;
  const length = lengthText === undefined ? bits : Number(lengthText);
  if (length > bits) return null;
  const hostBits = BigInt(bits - length);
  if ((base.value >> hostBits) << hostBits !== base.value) return null;
  return { family: base.family, base: base.value, length, text: `${formatAddress(base)}/${length}` };
}

/**
 * Whether `ip` lies in one of `blocks`. An IPv4-mapped IPv6 address (RFC 4291 §2.5.5.2) is
 * the IPv4 address it carries; anything that is not an address lies in none.
 */
export function isAddressInBlocks(ip: string, blocks: readonly CidrBlock[]): boolean {
  let address = parseAddress(ip);
  if (address === null) return false;
  if (address.family === 6 && address.value >> 32n === 0xffffn) {
    address = { family: 4, value: address.value & 0xffff_ffffn };
  }
  const { family, value } = address;
  return blocks.some((block) => {
    if (block.family !== family) return false;
    const shift = BigInt(BITS[family] - block.length);
    return value >> shift === block.base >> shift;
  });
}

function formatAddress(address: ParsedAddress): string {
  if (address.family === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join('.');
  }
  return formatIpv6Groups(
    [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => Number((address.value >> shift) & 0xffffn)),
  );
}

/**
 * The eight 16-bit groups of an IPv6 address as RFC 5952 §4 writes it: lower-case hex, no
 * leading zeros, the longest run of two or more zero groups (the first of equals) as `::`.
 */
export function formatIpv6Groups(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < groups.length; start++) {
    let length = 0;
    while (groups[start + length] === 0) length++;
    if (length > bestLength) {
      bestStart = start;
      bestLength = length;
    }
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

/** The first range holding the address (its embedded IPv4 address's, where it carries one). */
function specialRangeOf(address: ParsedAddress): ParsedRange | null {
  const bits = BITS[address.family];
  for (const range of PARSED_RANGES) {
    if (range.family !== address.family) continue;
    const shift = BigInt(bits - range.length);
    if (address.value >> shift !== range.base >> shift) continue;
    if (range.embeddedIpv4At === undefined) return range;
    const embedded = (address.value >> BigInt(bits - range.embeddedIpv4At - 32)) & 0xffff_ffffn;
    return specialRangeOf({ family: 4, value: embedded });
  }
  return null;
}

function parseRange(range: SpecialRange): ParsedRange {
  const [prefix, length] = range.prefix.split('/');
  const base = parseAddress(prefix ?? '');
  if (base === null || length === undefined) throw new Error(`bad special-purpose range ${range.prefix}`);
  return {
    family: base.family,
    base: base.value,
    length: Number(length),
    embeddedIpv4At: range.embeddedIpv4At,
    notUnicast: range.notUnicast ?? false,
  };
}

/** Parses a textual IPv4 (dotted quad) or IPv6 (RFC 4291 §2.2) address; null if it is neither. */
function parseAddress(text: string): ParsedAddress | null {
  if (text.includes(':')) {
    const value = parseIpv6(text);
    return value === null ? null : { family: 6, value };
  }
  const value = parseIpv4(text);
  return value === null ? null : { family: 4, value };
}

function parseIpv4(text: string): bigint | null {
  const octets = text.split('.');
  if (octets.length !== 4) return null;
  let value = 0n;
  for (const octet of octets) {
    // Decimal only, no leading zeros: "010" is octal to some parsers and decimal to others.
    if (!/^(0|[1-9]\d{0,2})$/.test(octet)) return null;
    const number = Number(octet);
    if (number > 255) return null;
    value = (value << 8n) | BigInt(number);
  }
  return value;
}

function parseIpv6(text: string): bigint | null {
  const halves = text.toLowerCase().split('::');
  if (halves.length > 2) return null;
  const head = groupsOf(halves[0] ?? '', halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '', true) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  // "::" stands for one or more zero groups; without it all eight must be there.
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(group);
  return value;
}

/** The 16-bit groups of one side of "::"; a dotted quad ending the address counts as two groups. */
function groupsOf(part: string, endsAddress: boolean): number[] | null {
  if (part === '') return [];
  const pieces = part.split(':');
  const groups: number[] = [];
  for (const [index, piece] of pieces.entries()) {
    if (endsAddress && index === pieces.length - 1 && piece.includes('.')) {
      const ipv4 = parseIpv4(piece);
      if (ipv4 === null) return null;
      groups.push(Number(ipv4 >> 16n), Number(ipv4 & 0xffffn));
    } else {
      if (!/^[0-9a-f]{1,4}$/.test(piece)) return null;
      groups.push(Number.parseInt(piece, 16));
    }
  }
  return groups;
}
