// What the prober refuses before anything reaches the wire: MX addresses it must not dial (a
// hostile or mistaken DNS answer must not turn the prober into a scanner of its own network),
// and text that would break out of an SMTP command line (CRLF injection: RFC 5321 §2.3.8 makes
// CRLF the only line terminator, so a CR or LF inside an address would start a new command).
import { BlockList, isIP } from 'node:net';
import type { SessionFailure } from '@rcpt/shared/contract/prober';
import { embeddedIpv4, isSpecialPurposeAddress } from '@rcpt/shared/ip-ranges';

/** Addresses no SMTP server can be reached at, whatever the deployment allows. */
const NEVER_DIALLED = new BlockList();
// RFC 1122 §3.2.1.3 "this network": connecting to 0.0.0.0 reaches the local host on Linux.
NEVER_DIALLED.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER_DIALLED.addSubnet('224.0.0.0', 4, 'ipv4'); // multicast (RFC 5771): TCP cannot connect
NEVER_DIALLED.addSubnet('240.0.0.0', 4, 'ipv4'); // reserved, and 255.255.255.255 broadcast (RFC 1112 §4)
NEVER_DIALLED.addAddress('::', 'ipv6'); // unspecified (RFC 4291 §2.5.2)
NEVER_DIALLED.addSubnet('ff00::', 8, 'ipv6'); // multicast (RFC 4291 §2.7)

/** Addresses of the prober's own networks: allowed only where ALLOW_PRIVATE_TARGETS says so (tests). */
const PRIVATE_NETWORKS = new BlockList();
PRIVATE_NETWORKS.addSubnet('10.0.0.0', 8, 'ipv4'); // RFC 1918
PRIVATE_NETWORKS.addSubnet('172.16.0.0', 12, 'ipv4'); // RFC 1918
PRIVATE_NETWORKS.addSubnet('192.168.0.0', 16, 'ipv4'); // RFC 1918
PRIVATE_NETWORKS.addSubnet('127.0.0.0', 8, 'ipv4'); // loopback (RFC 1122 §3.2.1.3)
PRIVATE_NETWORKS.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local (RFC 3927)
PRIVATE_NETWORKS.addSubnet('100.64.0.0', 10, 'ipv4'); // carrier-grade NAT (RFC 6598)
PRIVATE_NETWORKS.addAddress('::1', 'ipv6'); // loopback (RFC 4291 §2.5.3)
PRIVATE_NETWORKS.addSubnet('fc00::', 7, 'ipv6'); // unique local (RFC 4193)
PRIVATE_NETWORKS.addSubnet('fe80::', 10, 'ipv6'); // link-local (RFC 4291 §2.5.6)

/**
 * Why the prober must not connect to `ip`, or null when it may. Only IP literals are dialled:
 * a host name here would make `net.connect` resolve it, outside the edge's DNS checks.
 * An IPv6 address that stands for an IPv4 host (mapped, compatible, NAT64, 6to4) is judged as
 * that host. `allowPrivateTargets` opens private, loopback, link-local, CGNAT and the other
 * special-purpose ranges (the tests' mail world lives on 127.0.0.0/8); unspecified, multicast
 * and reserved addresses stay refused.
 */
export function targetIpRefusal(ip: string, allowPrivateTargets: boolean): string | null {
  const family = isIP(ip);
  if (family === 0) return `${JSON.stringify(ip)} is not an IP address`;
  // A zone index (fe80::1%eth0) only ever qualifies link-local addresses, refused below anyway.
  const bare = ip.includes('%') ? ip.slice(0, ip.indexOf('%')) : ip;
  const embedded = family === 6 ? embeddedIpv4(bare) : null;
  const address = embedded ?? bare;
  const type = embedded !== null || family === 4 ? 'ipv4' : 'ipv6';
  try {
    if (NEVER_DIALLED.check(address, type)) return `${ip} is not a unicast address`;
    // The shared table of special-purpose ranges (RFC 6890) also covers the local-use NAT64
    // prefix 64:ff9b:1::/48 (RFC 8215), Teredo and documentation ranges.
    if (!allowPrivateTargets && (PRIVATE_NETWORKS.check(address, type) || isSpecialPurposeAddress(address))) {
      return `${ip} is a private, loopback or link-local address (set ALLOW_PRIVATE_TARGETS to allow)`;
    }
  } catch {
    return `${ip} cannot be checked as an IP address`;
  }
  return null;
}

// C0 controls (NUL, CR, LF, …) and DEL: RFC 5321 §4.1.2 allows none of them in a path or a
// domain, and CR/LF would end the command line early. C1 controls (U+0080–U+009F) are not
// printable in any RFC 6531 address either.
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * Why `text` (an address, host name, HELO name or MAIL FROM) must not be written into an SMTP
 * command, or null when it is safe; `what` names it in the message.
 */
export function wireTextRefusal(text: string, what: string): string | null {
  const match = CONTROL_CHARACTER.exec(text);
  if (!match) return null;
  const code = match[0].codePointAt(0) ?? 0;
  return `${what} contains the control character U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The failure of an address the guard stopped before any connection. */
export function guardFailure(message: string): SessionFailure {
  return { kind: 'target_refused', stage: 'guard', reply: null, message };
}
