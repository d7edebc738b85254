// A DNS-over-HTTPS resolver for the world (RFC 8484, over plain HTTP on loopback): wire-format
// queries in, wire-format answers out, from the zone table. The edge's DoH client is tested
// against it, so it answers the way public resolvers do: id copied, RA set, NXDOMAIN for
// names that do not exist, NODATA for types a name lacks, SERVFAIL where the zone says so.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import dnsPacket from 'dns-packet';
import { listenOnLoopback } from './loopback.ts';
import { ZONE_TTL, type ZoneEntry } from './zone.ts';

export interface DohStub {
  /** The endpoint, e.g. http://127.0.0.1:8053/dns-query. */
  url: string;
  port: number;
  /** DNS queries answered (malformed ones excluded) since the start or the last resetStats(). */
  queries(): number;
  resetStats(): void;
  close(): Promise<void>;
}

const DOH_PATH = '/dns-query';
const DNS_MESSAGE = 'application/dns-message';
// A DNS message is at most 65535 octets (the length prefix of RFC 1035 §4.2.2).
const MAX_MESSAGE_BYTES = 65_535;
const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 } as const;

/** Thrown for bytes that are not a DNS query; the HTTP answer is 400. */
class MalformedQuery extends Error {}

/** A request this endpoint does not serve (wrong path, method or media type). */
class HttpError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

/** Serves `zone` over DoH on 127.0.0.1:`port` (0 = a free port). */
export async function startDohStub(
  zone: Readonly<Record<string, ZoneEntry>>,
  port: number,
): Promise<DohStub> {
  const existingNames = namesThatExist(zone);
  let queries = 0;

  const server = createServer((request, response) => {
    readQuery(request)
      .then((query) => {
        const answer = answerQuery(query, zone, existingNames);
        queries++;
        response.writeHead(200, {
          'content-type': DNS_MESSAGE,
          'content-length': answer.length,
          // RFC 8484 §5.1: HTTP caching must not outlive the smallest TTL of the answer.
          'cache-control': `max-age=${ZONE_TTL}`,
        });
        response.end(answer);
      })
      .catch((error: unknown) => {
        if (error instanceof HttpError) sendError(response, error.status, error.message, error.headers);
        else if (error instanceof MalformedQuery) sendError(response, 400, error.message);
        else sendError(response, 500, 'internal error');
      });
  });
  const boundPort = await listenOnLoopback(server, '127.0.0.1', port);

  return {
    url: `http://127.0.0.1:${boundPort}${DOH_PATH}`,
    port: boundPort,
    queries: () => queries,
    resetStats() {
      queries = 0;
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections of fetch() would otherwise hold the port until they idle out.
      server.closeAllConnections();
      return closed;
    },
  };
}

function sendError(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  response.end(`${message}\n`);
}

/** The DNS query of a DoH request: `?dns=` (base64url) of a GET, or the body of a POST. */
async function readQuery(request: IncomingMessage): Promise<Buffer> {
  const url = new URL(request.url ?? '/', 'http://doh.invalid');
  if (url.pathname !== DOH_PATH) throw new HttpError(404, `not found; the DoH endpoint is ${DOH_PATH}`);

  if (request.method === 'GET') {
    const encoded = url.searchParams.get('dns');
    // RFC 8484 §4.1: base64url without padding; padding is tolerated, anything else is not.
    if (encoded === null || !/^[A-Za-z0-9_-]+={0,2}$/.test(encoded)) {
      throw new MalformedQuery('the dns parameter must be a base64url DNS message');
    }
    return Buffer.from(encoded, 'base64url');
  }
  if (request.method === 'POST') {
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (mediaType !== DNS_MESSAGE) throw new HttpError(415, `the body must be ${DNS_MESSAGE}`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request) {
      size += (chunk as Buffer).length;
      if (size > MAX_MESSAGE_BYTES) throw new HttpError(413, 'a DNS message is at most 65535 bytes');
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }
  throw new HttpError(405, 'use GET or POST', { allow: 'GET, POST' });
}

/**
 * Every name that exists: those of the zone and their ancestors. An ancestor without records
 * of its own (an empty non-terminal such as `test`) exists too, so it answers NODATA rather
 * than NXDOMAIN (RFC 8020).
 */
function namesThatExist(zone: Readonly<Record<string, ZoneEntry>>): ReadonlySet<string> {
  const names = new Set<string>();
  for (const name of Object.keys(zone)) {
    const labels = name.split('.');
    for (let start = 0; start < labels.length; start++) names.add(labels.slice(start).join('.'));
  }
  return names;
}

/** The wire-format answer to a wire-format query. Throws MalformedQuery for anything else. */
export function answerQuery(
  queryBytes: Buffer,
  zone: Readonly<Record<string, ZoneEntry>>,
  existingNames: ReadonlySet<string> = namesThatExist(zone),
): Buffer {
  let query: dnsPacket.DecodedPacket;
  try {
    query = dnsPacket.decode(queryBytes);
  } catch {
    throw new MalformedQuery('not a DNS message');
  }
  const question = query.questions?.[0];
  if (query.type !== 'query' || query.questions?.length !== 1 || question === undefined) {
    throw new MalformedQuery('a DNS query with one question is expected');
  }

  const name = question.name.toLowerCase().replace(/\.$/, '');
  const entry = Object.hasOwn(zone, name) ? zone[name] : undefined;
  const answers = entry ? recordsOf(entry, question) : [];
  let rcode: number = RCODE.NOERROR;
  if (entry?.servfail) rcode = RCODE.SERVFAIL;
  else if (!existingNames.has(name)) rcode = RCODE.NXDOMAIN;

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

function recordsOf(entry: ZoneEntry, question: dnsPacket.Question): dnsPacket.Answer[] {
  const common = { name: question.name, ttl: ZONE_TTL, class: 'IN' } as const;
  switch (question.type) {
    case 'MX':
      return (entry.MX ?? []).map((mx) => ({ ...common, type: 'MX', data: { ...mx } }));
    case 'A':
      return (entry.A ?? []).map((ip) => ({ ...common, type: 'A', data: ip }));
    case 'AAAA':
      return (entry.AAAA ?? []).map((ip) => ({ ...common, type: 'AAAA', data: ip }));
    case 'TXT':
      return (entry.TXT ?? []).map((text) => ({ ...common, type: 'TXT', data: text }));
    default:
      return [];
  }
}
