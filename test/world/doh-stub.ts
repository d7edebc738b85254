// A DNS-over-HTTPS resolver for the world (RFC 8484, over plain HTTP on loopback): wire-format
// queries in, wire-format answers out, from the zone table. The edge's DoH client is tested
// against it, so it answers the way public resolvers do: id copied, RA set, NXDOMAIN for
// names that do not exist, NODATA for types a name lacks, SERVFAIL where the zone says so
// (the answers themselves come from dns-answer.ts, which the UDP server shares).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import dnsPacket from 'dns-packet';
import { answerQuery, MalformedQuery, namesThatExist } from './dns-answer.ts';
import { listenOnLoopback } from './loopback.ts';
import { ZONE_TTL, type ZoneEntry } from './zone.ts';

export interface DohStub {
  /** The endpoint, e.g. http://127.0.0.1:8053/dns-query. */
  url: string;
  port: number;
  /** DNS queries answered (malformed ones excluded) since the start or the last resetStats(). */
  queries(): number;
  resetStats(): void;
  /** Takes names added to or removed from the zone since the start into account. */
  zoneChanged(): void;
  close(): Promise<void>;
}

const DOH_PATH = '/dns-query';
const DNS_MESSAGE = 'application/dns-message';
// A DNS message is at most 65535 octets (the length prefix of RFC 1035 §4.2.2).
const MAX_MESSAGE_BYTES = 65_535;

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
  let existingNames = namesThatExist(zone);
  let queries = 0;

  const server = createServer((request, response) => {
    readQuery(request)
      .then((query) => {
        const answer = answerQuery(query, zone, existingNames);
        queries++;
        // A silent name: the request stays open until the client gives up (close() ends it).
        if (answer === null) return;
        response.writeHead(200, {
          'content-type': DNS_MESSAGE,
          'content-length': answer.length,
          // RFC 8484 §5.1: HTTP caching must not outlive the smallest TTL of the answer.
          'cache-control': `max-age=${smallestTtl(answer)}`,
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
    zoneChanged() {
      existingNames = namesThatExist(zone);
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections of fetch() would otherwise hold the port until they idle out.
      server.closeAllConnections();
      return closed;
    },
  };
}

/** The smallest TTL of an answer's records; ZONE_TTL for an answer without any. */
function smallestTtl(answer: Buffer): number {
  const ttls = (dnsPacket.decode(answer).answers ?? []).map((record) =>
    'ttl' in record ? (record.ttl ?? 0) : 0,
  );
  return ttls.length === 0 ? ZONE_TTL : Math.min(...ttls);
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
