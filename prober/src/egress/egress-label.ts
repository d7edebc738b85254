// What a customer sees of an egress (docs/verdicts.md, "Evidence"): an opaque label, stable per
// egress, such as `eu-3fa91c` — the prober's region and a short HMAC-SHA256 of the egress's id
// keyed with the prober's token — never its address, its proxy or the HELO name it sends, which
// name rcpt's infrastructure. Keyed, so that nobody can try every IPv4 address to find the one
// behind a label. The operator's view (the hello, the fleet view, the prober's logs) keeps the
// real id, with the label beside it.
import { createHmac, randomBytes } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { Egress } from './egress.ts';

/** Hex digits of the HMAC a label keeps: 16.7 million labels a region, enough to tell egresses apart. */
const LABEL_HEX_DIGITS = 6;
/** The key of a prober without a token (the one-off `verify`, read by its operator alone). */
const PROCESS_KEY = randomBytes(32);

/** The label of the egress `egressId` of a prober of `region`, keyed with `key` (the prober's token). */
export function egressLabel(egressId: string, region: string, key: string | null): string {
  const digest = createHmac('sha256', key ?? PROCESS_KEY)
    .update(egressId)
    .digest('hex');
  return `${region}-${digest.slice(0, LABEL_HEX_DIGITS)}`;
}

/** What names an egress in a text: its id, its local address or its proxy's host. */
export function egressNames(egress: Egress | undefined): string[] {
  if (!egress) return [];
  if (egress.kind === 'socks5') return [egress.id, egress.proxy.host];
  return [egress.id, ...(egress.localAddress ? [egress.localAddress] : [])];
}

/** Where a text of a session comes from: rcpt's own commands, or what the server (or the socket) said. */
export type TextSource = 'command' | 'reply';

/**
 * A function masking, in the texts of one session, what names rcpt's infrastructure with the
 * egress's label: each of `names` (the egress's names, the address the session went out from,
 * the HELO name it sent) wherever it appears, and in a reply or a failure, any IP address but the
 * MX's own — a server names the client's address ("Client host [203.0.113.7] blocked using
 * zen.spamhaus.org", "Hello [203.0.113.7]"), which behind NAT the prober does not know. In rcpt's
 * commands other addresses stay: an address literal (`user@[192.0.2.1]`) is the customer's.
 */
export function egressMasker(session: {
  label: string;
  names: readonly (string | null | undefined)[];
  mxIp: string | null;
}): (text: string, source: TextSource) => string {
  const { label } = session;
  const names = [...new Set(session.names.filter((name): name is string => !!name && name !== 'system'))]
    .sort((a, b) => b.length - a.length)
    .map((name) => new RegExp(escapeRegExp(name), 'giu'));
  const mx = new BlockList();
  const mxFamily = session.mxIp ? isIP(session.mxIp) : 0;
  if (session.mxIp && mxFamily !== 0) mx.addAddress(session.mxIp, mxFamily === 4 ? 'ipv4' : 'ipv6');
  const isMx = (address: string, family: 'ipv4' | 'ipv6') => mxFamily !== 0 && mx.check(address, family);
  return (text, source) => {
    let masked = text;
    for (const name of names) masked = masked.replace(name, label);
    if (source === 'command') return masked;
    masked = masked.replace(IPV4, (address) =>
      isIP(address) === 4 && !isMx(address, 'ipv4') ? label : address,
    );
    return masked.replace(IPV6_RUN, (run) => maskIpv6In(run, label, isMx));
  };
}

// Four dotted numbers not inside a longer run of them (a version number like 1.2.3.4.5 stays).
const IPV4 = /(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)/g;
// A run of the characters an IPv6 address is written with, holding at least one colon, not
// begun inside a word ("IPv6:2001:db8::1" of RFC 5321 §4.1.3 is a run from "2001").
const IPV6_RUN = /(?<![0-9A-Za-z])[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*/g;

/**
 * `run` with the IPv6 address at its end masked, if there is one: a run may begin with a colon
 * that is not the address's (`:2001:db8::1` after a label) and end in a sentence's full stop.
 */
function maskIpv6In(
  run: string,
  label: string,
  isMx: (address: string, family: 'ipv4' | 'ipv6') => boolean,
): string {
  const trailing = /\.*$/.exec(run)?.[0] ?? '';
  const body = run.slice(0, run.length - trailing.length);
  let start = 0;
  while (start < body.length) {
    const candidate = body.slice(start);
    if (isIP(candidate) === 6) {
      return isMx(candidate, 'ipv6') ? run : `${body.slice(0, start)}${label}${trailing}`;
    }
    const colon = body.indexOf(':', start);
    if (colon < 0) break;
    start = colon + 1;
  }
  return run;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
