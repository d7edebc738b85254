// The world's recursive resolver, as a pure function: a wire-format query in, the wire-format
// answer from the zone table out. The DoH stub and the UDP server both answer with it, and
// tests that run where no socket can be opened (the edge inside workerd) call it directly.
import { Buffer } from 'node:buffer';
import dnsPacket from 'dns-packet';
import { ZONE_TTL, type ZoneEntry } from './zone.ts';

const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 } as const;
// Resolvers give up on a CNAME chain after a few links (BIND follows 16, Unbound 11).
const MAX_CNAME_LINKS = 8;

/** Thrown for bytes that are not a DNS query. */
export class MalformedQuery extends Error {}

/**
 * Every name that exists: those of the zone and their ancestors. An ancestor without records
 * of its own (an empty non-terminal such as `test`) exists too, so it answers NODATA rather
 * than NXDOMAIN (RFC 8020).
 */
export function namesThatExist(zone: Readonly<Record<string, ZoneEntry>>): ReadonlySet<string> {
  const names = new Set<string>();
  for (const name of Object.keys(zone)) {
    const labels = name.split('.');
    for (let start = 0; start < labels.length; start++) names.add(labels.slice(start).join('.'));
  }
  return names;
}

/**
 * The wire-format answer to a wire-format query, or null for a name the zone marks silent (no
 * answer ever comes). Throws MalformedQuery for anything but a query with one question.
 */
export function answerQuery(
  queryBytes: Uint8Array,
  zone: Readonly<Record<string, ZoneEntry>>,
  existingNames: ReadonlySet<string> = namesThatExist(zone),
): Buffer | null {
  let query: dnsPacket.DecodedPacket;
  try {
    query = dnsPacket.decode(Buffer.from(queryBytes.buffer, queryBytes.byteOffset, queryBytes.byteLength));
  } catch {
    throw new MalformedQuery('not a DNS message');
  }
  const question = query.questions?.[0];
  if (query.type !== 'query' || query.questions?.length !== 1 || question === undefined) {
    throw new MalformedQuery('a DNS query with one question is expected');
  }

  // RFC 1034 §3.6.2: a resolver follows an alias and answers with the chain and the records at
  // its end; the RCODE is that of the last name (RFC 6604 §2).
  const answers: dnsPacket.Answer[] = [];
  let rcode: number = RCODE.NOERROR;
  // Records carry the owner name as asked (names are case-insensitive, RFC 4343); the zone
  // is looked up in lower case.
  let owner = question.name.replace(/\.$/, '');
  for (let links = 0; ; links++) {
    const name = owner.toLowerCase();
    const entry = Object.hasOwn(zone, name) ? zone[name] : undefined;
    if (entry?.silent) return null;
    if (entry?.servfail || links > MAX_CNAME_LINKS) {
      rcode = RCODE.SERVFAIL;
      answers.length = 0;
      break;
    }
    if (!existingNames.has(name)) {
      rcode = RCODE.NXDOMAIN;
      break;
    }
    if (entry?.CNAME !== undefined && question.type !== 'CNAME') {
      answers.push({
        type: 'CNAME',
        name: owner,
        ttl: entry.ttl ?? ZONE_TTL,
        class: 'IN',
        data: entry.CNAME,
      });
      owner = entry.CNAME;
      continue;
    }
    if (entry) answers.push(...recordsOf(entry, question.type, owner));
    break;
  }

  // RFC 6891 §7: a query with an OPT record gets one back.
  const askedEdns = query.additionals?.some((record) => record.type === 'OPT') ?? false;
  return dnsPacket.encode({
    type: 'response',
    id: query.id ?? 0,
    // RFC 1035 §4.1.1: RD is copied from the query; RA because this is a recursive resolver.
    flags: ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE | rcode,
    questions: [question],
    answers,
    additionals: askedEdns
      ? [
          {
            type: 'OPT',
            name: '.',
            udpPayloadSize: 1232,
            extendedRcode: 0,
            ednsVersion: 0,
            flags: 0,
            flag_do: false,
            options: [],
          },
        ]
      : [],
  });
}

function recordsOf(entry: ZoneEntry, type: string, name: string): dnsPacket.Answer[] {
  const common = { name, ttl: entry.ttl ?? ZONE_TTL, class: 'IN' } as const;
  switch (type) {
    case 'MX':
      return (entry.MX ?? []).map((mx) => ({ ...common, type: 'MX', data: { ...mx } }));
    case 'A':
      return (entry.A ?? []).map((ip) => ({ ...common, type: 'A', data: ip }));
    case 'AAAA':
      return (entry.AAAA ?? []).map((ip) => ({ ...common, type: 'AAAA', data: ip }));
    case 'TXT':
      return (entry.TXT ?? []).map((text) => ({ ...common, type: 'TXT', data: text }));
    case 'PTR':
      return (entry.PTR ?? []).map((target) => ({ ...common, type: 'PTR', data: target }));
    // Asked for CNAME itself, a resolver answers the alias without following it (RFC 1034 §3.6.2).
    case 'CNAME':
      return entry.CNAME === undefined ? [] : [{ ...common, type: 'CNAME', data: entry.CNAME }];
    default:
      return [];
  }
}
