// What the prober refuses before anything reaches the wire: MX addresses it must not dial (a
// hostile or mistaken DNS answer must not turn the prober into a scanner of its own network),
// and text that would break out of an SMTP command line (CRLF injection: RFC 5321 §2.3.8 makes
// CRLF the only line terminator, so a CR or LF inside an address would start a new command).
import { isIP } from 'node:net';
import type { SessionFailure } from '@rcpt/shared/contract/prober';
import { embeddedIpv4, isNotUnicastAddress, isSpecialPurposeAddress } from '@rcpt/shared/ip-ranges';

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
  // One table of special-purpose ranges (RFC 6890) for the prober, the mail route and webhooks.
  if (isNotUnicastAddress(address)) return `${ip} is not a unicast address`;
  if (!allowPrivateTargets && isSpecialPurposeAddress(address)) {
    return `${ip} is a private, loopback or link-local address (set ALLOW_PRIVATE_TARGETS to allow)`;
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
