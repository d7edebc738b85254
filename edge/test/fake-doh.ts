// Test double: a `fetch` that plays DoH resolvers (RFC 8484) without any network. It decodes
// each wire-format query with dns-packet and answers from a zone table, or misbehaves the way
// a resolver or the path to it can (HTTP 500, a hang, garbage, an answer to another question).
// Only the dns tests import it.
import { Buffer } from 'node:buffer';
import dnsPacket from 'dns-packet';

/** The records of one name; a name in the table exists, a type it lacks answers NODATA. */
export interface FakeZoneEntry {
  MX?: readonly (readonly [preference: number, exchange: string])[];
  A?: readonly string[];
  AAAA?: readonly string[];
  TXT?: readonly (readonly string[])[];
  /** Every query for this name answers SERVFAIL, as when its authoritative servers are down. */
  servfail?: true;
  /** Record TTL in seconds. Default 300. */
  ttl?: number;
}

export type FakeZone = Readonly<Record<string, FakeZoneEntry>>;

/** How one resolver URL behaves. */
export type ResolverBehaviour =
  | 'answer' // from the zone
  | 'servfail' // RCODE 2 for everything
  | 'http-500'
  | 'hang' // never answers; only the caller's abort signal ends the request
  | 'network-error' // fetch rejects, as on a refused connection
  | 'garbage' // HTTP 200, dns-message, bytes that are not a DNS message
  | 'html' // HTTP 200 with a web page, as a captive portal or a wrong URL gives
  | 'other-question' // a well-formed answer for a different name
  | 'not-response' // echoes the query (QR clear)
  | 'truncated'; // TC set

export interface FakeQuery {
  url: string;
  method: string;
  contentType: string | null;
  accept: string | null;
  /** The `dns` parameter of a GET, as sent. */
  dnsParameter: string | null;
  id: number | undefined;
  recursionDesired: boolean;
  name: string;
  type: string;
}

export interface FakeDohOptions {
  /** Per resolver URL; URLs not listed answer from the zone. */
  behaviours?: Readonly<Record<string, ResolverBehaviour>>;
  /** Put an SOA with this MINIMUM (and TTL 3600) in negative answers' authority section. */
  soaMinimum?: number;
}

export interface FakeDoh {
  fetch: typeof fetch;
  /** Every query that reached a resolver, in order, including those it then failed. */
  queries: FakeQuery[];
}

const DNS_MESSAGE = 'application/dns-message';
const RCODE_SERVFAIL = 2;
const RCODE_NXDOMAIN = 3;

export function fakeDoh(zone: FakeZone, options: FakeDohOptions = {}): FakeDoh {
  const queries: FakeQuery[] = [];

  const fakeFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const signal = init?.signal ?? request.signal;
    const url = new URL(request.url);
    const resolver = `${url.origin}${url.pathname}`;
    const dnsParameter = url.searchParams.get('dns');
    const wire =
      request.method === 'GET'
        ? Buffer.from(dnsParameter ?? '', 'base64url')
        : Buffer.from(await request.arrayBuffer());
    const query = dnsPacket.decode(wire);
    const question = query.questions?.[0];
    if (question === undefined) throw new Error('fake DoH: a query without a question');
    queries.push({
      url: resolver,
      method: request.method,
      contentType: request.headers.get('content-type'),
      accept: request.headers.get('accept'),
      dnsParameter,
      id: query.id,
      recursionDesired: query.flag_rd,
      name: question.name,
      type: question.type,
    });

    const behaviour = options.behaviours?.[resolver] ?? 'answer';
    switch (behaviour) {
      case 'hang':
        return new Promise<Response>((_resolve, reject) => {
          signal?.addEventListener('abort', () => reject(signal.reason));
        });
      case 'network-error':
        throw new TypeError('Network connection lost.');
      case 'http-500':
        return new Response('upstream exploded', { status: 500, headers: { 'content-type': 'text/plain' } });
      case 'garbage':
        return dnsResponse(new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x00]));
      case 'html':
        return new Response('<!doctype html><title>Sign in to the Wi-Fi</title>', {
          headers: { 'content-type': 'text/html; charset=utf-8' },
        });
      case 'not-response':
        return dnsResponse(wire);
      case 'other-question':
        return dnsResponse(answer({ ...question, name: `other-${question.name}` }, query, zone, options));
      case 'truncated':
        return dnsResponse(answer(question, query, zone, options, dnsPacket.TRUNCATED_RESPONSE));
      case 'servfail':
        return dnsResponse(answer(question, query, zone, options, RCODE_SERVFAIL));
      case 'answer':
        return dnsResponse(answer(question, query, zone, options));
    }
  };

  return { fetch: fakeFetch as typeof fetch, queries };
}

function dnsResponse(body: Uint8Array): Response {
  return new Response(body, { status: 200, headers: { 'content-type': DNS_MESSAGE } });
}

function answer(
  question: dnsPacket.Question,
  query: dnsPacket.DecodedPacket,
  zone: FakeZone,
  options: FakeDohOptions,
  extraFlags = 0,
): Buffer {
  const name = question.name.toLowerCase().replace(/\.$/, '');
  const entry = Object.hasOwn(zone, name) ? zone[name] : undefined;
  let rcode = 0;
  if (entry?.servfail) rcode = RCODE_SERVFAIL;
  else if (entry === undefined) rcode = RCODE_NXDOMAIN;
  const answers = rcode === 0 && entry ? recordsOf(entry, question) : [];
  const negative = rcode === RCODE_NXDOMAIN || (rcode === 0 && answers.length === 0);
  return dnsPacket.encode({
    type: 'response',
    id: query.id ?? 0,
    flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | rcode | extraFlags,
    questions: [question],
    answers,
    authorities:
      negative && options.soaMinimum !== undefined
        ? [
            {
              type: 'SOA',
              name: name.split('.').slice(-1).join('.'),
              ttl: 3600,
              data: { mname: 'ns.invalid', rname: 'hostmaster.invalid', minimum: options.soaMinimum },
            },
          ]
        : [],
  });
}

function recordsOf(entry: FakeZoneEntry, question: dnsPacket.Question): dnsPacket.Answer[] {
  const common = { name: question.name, ttl: entry.ttl ?? 300, class: 'IN' } as const;
  switch (question.type) {
    case 'MX':
      return (entry.MX ?? []).map(([preference, exchange]) => ({
        ...common,
        type: 'MX',
        data: { preference, exchange },
      }));
    case 'A':
      return (entry.A ?? []).map((address) => ({ ...common, type: 'A', data: address }));
    case 'AAAA':
      return (entry.AAAA ?? []).map((address) => ({ ...common, type: 'AAAA', data: address }));
    case 'TXT':
      return (entry.TXT ?? []).map((strings) => ({ ...common, type: 'TXT', data: [...strings] }));
    default:
      return [];
  }
}
