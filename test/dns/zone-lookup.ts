// A DnsLookup answered in memory by the world's resolver (test/world/dns-answer.ts): the same
// answers the DoH stub and the UDP server give for a zone, without a socket or a clock. A
// silent name fails at once as a timeout would.
import dnsPacket from 'dns-packet';
import type { DnsLookup, LookupOutcome, MxRecord, TenantLookup } from '../../shared/src/dns/lookup.ts';
import { answerQuery, namesThatExist } from '../world/dns-answer.ts';
import type { ZoneEntry } from '../world/zone.ts';

const RCODE_NXDOMAIN = 3;

export function zoneLookup(zone: Readonly<Record<string, ZoneEntry>>): DnsLookup & TenantLookup {
  const existingNames = namesThatExist(zone);
  function ask<Record>(
    name: string,
    type: 'MX' | 'A' | 'AAAA' | 'TXT' | 'CNAME',
    recordOf: (answer: dnsPacket.Answer) => Record | null,
  ): Promise<LookupOutcome<Record>> {
    const query = dnsPacket.encode({
      type: 'query',
      id: 0,
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ type, name, class: 'IN' }],
    });
    const bytes = answerQuery(query, zone, existingNames);
    if (bytes === null) return Promise.resolve({ kind: 'failure', failure: 'timeout', detail: 'no answer' });
    const response = dnsPacket.decode(bytes);
    // RFC 1035 §4.1.1: RCODE is the low four bits of the flags; the world answers 0, 2 or 3.
    const rcode = (response.flags ?? 0) & 0x0f;
    if (rcode === RCODE_NXDOMAIN) return Promise.resolve({ kind: 'nxdomain' });
    if (rcode !== 0) {
      return Promise.resolve({ kind: 'failure', failure: 'servfail', detail: `answered RCODE ${rcode}` });
    }
    const records = (response.answers ?? []).flatMap((answer) => {
      const record = answer.type === type ? recordOf(answer) : null;
      return record === null ? [] : [record];
    });
    return Promise.resolve({ kind: 'answer', records });
  }
  const address = (answer: dnsPacket.Answer) =>
    (answer.type === 'A' || answer.type === 'AAAA') && typeof answer.data === 'string' ? answer.data : null;
  return {
    mx: (domain) =>
      ask<MxRecord>(domain, 'MX', (answer) =>
        answer.type === 'MX'
          ? { preference: answer.data.preference ?? 0, exchange: answer.data.exchange }
          : null,
      ),
    a: (host) => ask(host, 'A', address),
    aaaa: (host) => ask(host, 'AAAA', address),
    // dns-packet gives a TXT record's character-strings as buffers; RFC 7208 §3.3 joins them.
    txt: (name) =>
      ask(name, 'TXT', (answer) =>
        answer.type === 'TXT'
          ? (Array.isArray(answer.data) ? answer.data : [answer.data]).map((part) => part.toString()).join('')
          : null,
      ),
    cname: (name) =>
      ask(name, 'CNAME', (answer) =>
        answer.type === 'CNAME' && typeof answer.data === 'string' ? answer.data : null,
      ),
  };
}
