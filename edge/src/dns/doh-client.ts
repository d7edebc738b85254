// A DNS-over-HTTPS stub resolver (RFC 8484) for the Worker: wire-format queries over fetch(),
// a list of resolvers tried in order, each with its own timeout, and a per-isolate TTL cache.
// Every outcome is a value: a resolver's answer (NOERROR, NXDOMAIN) or why there is none
// (SERVFAIL, timeout, transport failure, a response that is not an answer to our question).
import { Buffer } from 'node:buffer';
import dnsPacket from 'dns-packet';
import { TtlCache } from './ttl-cache.ts';

export type DnsRecordType = 'MX' | 'A' | 'AAAA' | 'TXT' | 'CNAME';

export type DnsRecord =
  /** `exchange` is lower-case without the trailing dot; '' is the root, as in a null MX (RFC 7505). */
  | { type: 'MX'; name: string; ttl: number; preference: number; exchange: string }
  | { type: 'A'; name: string; ttl: number; address: string }
  | { type: 'AAAA'; name: string; ttl: number; address: string }
  /** The character-strings of the record joined, as RFC 7208 §3.3 reads them. */
  | { type: 'TXT'; name: string; ttl: number; text: string }
  /** Asked for itself, an alias (RFC 1034 §3.6.2); `target` is lower-case without the trailing dot. */
  | { type: 'CNAME'; name: string; ttl: number; target: string };

export type DnsRecordOf<Type extends DnsRecordType> = Extract<DnsRecord, { type: Type }>;

/** Why no resolver gave an answer that settles the question. */
export type DnsFailureCode =
  | 'SERVFAIL' // the resolver could not get an answer from the name's servers (RFC 1035 §4.1.1)
  | 'REFUSED' // the resolver will not answer us
  | 'TIMEOUT' // no HTTP answer within the timeout
  | 'TRANSPORT' // the request failed: connection, TLS, or an HTTP status other than 200
  | 'BAD_RESPONSE' // HTTP 200 but not a DNS answer to our question
  | 'BAD_NAME'; // the name cannot be put in a query (RFC 1035 §2.3.4 limits)

export interface DnsFailure {
  rcode: DnsFailureCode;
  answers: readonly [];
  ttl: 0;
  /** What each resolver tried did, e.g. "dns.google: timed out after 2000 ms". No secrets, no stack. */
  reason: string;
}

/**
 * A lookup's outcome. NOERROR with no records is NODATA: the name exists without records of
 * that type. `ttl` is how long the answer may be reused: the smallest record TTL, or for
 * NXDOMAIN and NODATA the negative TTL of RFC 2308 §5.
 */
export type DnsAnswer<Type extends DnsRecordType = DnsRecordType> =
  | { rcode: 'NOERROR'; answers: readonly DnsRecordOf<Type>[]; ttl: number }
  | { rcode: 'NXDOMAIN'; answers: readonly []; ttl: number }
  | DnsFailure;

/** Whether no resolver settled the question (anything but NOERROR or NXDOMAIN). */
export function isDnsFailure<Type extends DnsRecordType>(answer: DnsAnswer<Type>): answer is DnsFailure {
  return answer.rcode !== 'NOERROR' && answer.rcode !== 'NXDOMAIN';
}

export interface DohClientOptions {
  /** Resolver endpoints (e.g. https://cloudflare-dns.com/dns-query), tried in this order. */
  urls: readonly string[];
  /** Per resolver, for the whole HTTP exchange. Default 2,000 ms. */
  timeoutMs?: number;
  fetch?: typeof fetch;
  /** Shared answers; default a new cache of 10,000 entries. */
  cache?: TtlCache<DnsAnswer>;
  /** POST is the default; GET puts the query in `?dns=` and is friendlier to HTTP caches (RFC 8484 §4.1). */
  method?: 'POST' | 'GET';
}

const DNS_MESSAGE = 'application/dns-message';
// A DNS message is at most 65535 octets (the 16-bit length prefix of RFC 1035 §4.2.2).
const MAX_MESSAGE_BYTES = 65_535;
// Negative answers without an SOA to take the TTL from (RFC 2308 §5) are kept this long.
const DEFAULT_NEGATIVE_TTL_SECONDS = 60;
const DEFAULT_TIMEOUT_MS = 2_000;

const RCODE_NAMES: Readonly<Record<number, string>> = {
  0: 'NOERROR',
  1: 'FORMERR',
  2: 'SERVFAIL',
  3: 'NXDOMAIN',
  4: 'NOTIMP',
  5: 'REFUSED',
};

/** One resolver's failed attempt. */
interface FailedAttempt {
  code: DnsFailureCode;
  why: string;
}

export class DohClient {
  readonly #urls: readonly string[];
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #cache: TtlCache<DnsAnswer>;
  readonly #method: 'POST' | 'GET';

  constructor(options: DohClientOptions) {
    if (options.urls.length === 0) throw new Error('DohClient needs at least one resolver URL');
    this.#urls = [...options.urls];
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // workerd's fetch throws "Illegal invocation" when called detached from the global.
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#cache = options.cache ?? new TtlCache<DnsAnswer>();
    this.#method = options.method ?? 'POST';
  }

  /** Asks the resolvers in turn until one answers NOERROR or NXDOMAIN. Never throws for DNS or network trouble. */
  async query<Type extends DnsRecordType>(name: string, type: Type): Promise<DnsAnswer<Type>> {
    const qname = normaliseName(name);
    if (qname === null) {
      return failure('BAD_NAME', `${JSON.stringify(name)} is not a valid DNS name`);
    }
    const cacheKey = `${type} ${qname}`;
    // The cache key carries the type, so the cached answer holds records of this type only. Its
    // TTL is what is left of it, as a caching resolver counts down (RFC 1035 §3.2.1), so that
    // whoever keeps the answer further keeps it no longer than DNS allows.
    const cached = this.#cache.entry(cacheKey);
    if (cached !== undefined) {
      const answer = cached.value as DnsAnswer<Type>;
      if (answer.ttl <= cached.remainingSeconds) return answer;
      return { ...answer, ttl: cached.remainingSeconds } as DnsAnswer<Type>;
    }

    // RFC 8484 §4.1: id 0 in every query, so identical queries are identical HTTP requests.
    // RD set: the DoH server is a recursive resolver and we want it to do the work.
    const message = new Uint8Array(
      dnsPacket.encode({
        type: 'query',
        id: 0,
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ type, name: qname, class: 'IN' }],
      }),
    );

    const attempts: { resolver: string; attempt: FailedAttempt }[] = [];
    for (const url of this.#urls) {
      const outcome = await this.#ask(url, message, qname, type);
      if ('rcode' in outcome) {
        // Only settled answers reach here: failures are the resolver's trouble, not the name's,
        // so they are never cached and the next lookup asks again.
        this.#cache.set(cacheKey, Object.freeze(outcome), outcome.ttl);
        return outcome;
      }
      attempts.push({ resolver: resolverLabel(url), attempt: outcome });
    }
    return failure(
      summaryCode(attempts.map(({ attempt }) => attempt.code)),
      attempts.map(({ resolver, attempt }) => `${resolver}: ${attempt.why}`).join('; '),
    );
  }

  /** One resolver, one HTTP exchange: its settled answer, or why it gave none. */
  async #ask<Type extends DnsRecordType>(
    url: string,
    message: Uint8Array,
    qname: string,
    type: Type,
  ): Promise<DnsAnswer<Type> | FailedAttempt> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let bytes: Uint8Array;
    try {
      const response = await this.#fetch(this.#request(url, message), { signal });
      // RFC 8484 §4.2.1: a DNS answer, whatever its RCODE, comes with a 2xx; anything else
      // is the HTTP layer failing.
      if (response.status !== 200) {
        await response.body?.cancel();
        return { code: 'TRANSPORT', why: `HTTP ${response.status}` };
      }
      const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
      if (mediaType !== DNS_MESSAGE) {
        await response.body?.cancel();
        return { code: 'BAD_RESPONSE', why: `content type ${JSON.stringify(mediaType)}, not ${DNS_MESSAGE}` };
      }
      if (Number(response.headers.get('content-length')) > MAX_MESSAGE_BYTES) {
        await response.body?.cancel();
        return { code: 'BAD_RESPONSE', why: 'body longer than a DNS message' };
      }
      bytes = new Uint8Array(await response.arrayBuffer());
    } catch (error) {
      if (signal.aborted) return { code: 'TIMEOUT', why: `timed out after ${this.#timeoutMs} ms` };
      return {
        code: 'TRANSPORT',
        why: `request failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    if (bytes.byteLength > MAX_MESSAGE_BYTES) {
      return { code: 'BAD_RESPONSE', why: 'body longer than a DNS message' };
    }
    return readAnswer(bytes, qname, type);
  }

  #request(url: string, message: Uint8Array): Request {
    if (this.#method === 'GET') {
      const target = new URL(url);
      target.searchParams.set('dns', base64UrlWithoutPadding(message));
      return new Request(target, { method: 'GET', headers: { accept: DNS_MESSAGE } });
    }
    return new Request(url, {
      method: 'POST',
      headers: { accept: DNS_MESSAGE, 'content-type': DNS_MESSAGE },
      body: message,
    });
  }
}

/** Decodes and checks a resolver's response to our query for (`qname`, `type`). */
function readAnswer<Type extends DnsRecordType>(
  bytes: Uint8Array,
  qname: string,
  type: Type,
): DnsAnswer<Type> | FailedAttempt {
  let packet: dnsPacket.DecodedPacket;
  try {
    packet = dnsPacket.decode(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch {
    return { code: 'BAD_RESPONSE', why: 'body is not a DNS message' };
  }
  // RFC 1035 §4.1.1: QR marks a response; our id was 0 and a response copies it.
  if (!packet.flag_qr || packet.id !== 0) return { code: 'BAD_RESPONSE', why: 'not a response to our query' };
  const question = packet.questions?.length === 1 ? packet.questions[0] : undefined;
  const answeredName = question ? normaliseName(question.name) : null;
  if (
    question === undefined ||
    answeredName !== qname ||
    question.type !== type ||
    (question.class ?? 'IN') !== 'IN'
  ) {
    const asked = question ? `${question.name} ${question.type}` : 'no single question';
    return { code: 'BAD_RESPONSE', why: `answers another question (${asked})` };
  }
  // Over HTTP there is no UDP size limit, so a truncated answer is an incomplete one.
  if (packet.flag_tc) return { code: 'BAD_RESPONSE', why: 'truncated answer' };

  const rcode = RCODE_NAMES[(packet.flags ?? 0) & 0x0f] ?? `RCODE ${(packet.flags ?? 0) & 0x0f}`;
  if (rcode === 'NXDOMAIN')
    return { rcode, answers: Object.freeze([]) as readonly [], ttl: negativeTtl(packet) };
  if (rcode === 'SERVFAIL' || rcode === 'REFUSED') return { code: rcode, why: `answered ${rcode}` };
  if (rcode !== 'NOERROR') return { code: 'BAD_RESPONSE', why: `answered ${rcode}` };

  let records: DnsRecordOf<Type>[];
  try {
    records = (packet.answers ?? []).flatMap((answer) => recordOf(answer, type));
  } catch {
    return { code: 'BAD_RESPONSE', why: `malformed ${type} record` };
  }
  // The answer section may also hold the CNAME chain that led to the records; its TTLs bound
  // the answer's life as much as the records' own do.
  const ttl =
    records.length === 0
      ? negativeTtl(packet)
      : Math.min(...(packet.answers ?? []).map((answer) => ('ttl' in answer ? (answer.ttl ?? 0) : 0)));
  return { rcode: 'NOERROR', answers: Object.freeze(records), ttl };
}

/** The records of the asked type in one answer-section entry (none for a CNAME, an RRSIG, …). */
function recordOf<Type extends DnsRecordType>(answer: dnsPacket.Answer, type: Type): DnsRecordOf<Type>[] {
  if (answer.type !== type || ('class' in answer && answer.class !== undefined && answer.class !== 'IN'))
    return [];
  const name = normaliseName(answer.name) ?? answer.name;
  const ttl = answer.ttl ?? 0;
  let record: DnsRecord;
  switch (answer.type) {
    case 'MX':
      record = {
        type: 'MX',
        name,
        ttl,
        preference: answer.data.preference ?? 0,
        exchange: answer.data.exchange.toLowerCase().replace(/\.$/, ''),
      };
      break;
    case 'A':
    case 'AAAA':
      if (typeof answer.data !== 'string') throw new TypeError('address is not text');
      record = { type: answer.type, name, ttl, address: answer.data };
      break;
    case 'TXT': {
      const strings = Array.isArray(answer.data) ? answer.data : [answer.data];
      const text = strings.map((part) => (typeof part === 'string' ? part : utf8.decode(part))).join('');
      record = { type: 'TXT', name, ttl, text };
      break;
    }
    case 'CNAME':
      if (typeof answer.data !== 'string') throw new TypeError('alias is not text');
      record = { type: 'CNAME', name, ttl, target: answer.data.toLowerCase().replace(/\.$/, '') };
      break;
    default:
      return [];
  }
  return [record as DnsRecordOf<Type>];
}

const utf8 = new TextDecoder();

/** RFC 2308 §5: a negative answer lives min(SOA TTL, SOA MINIMUM) of the authority section's SOA. */
function negativeTtl(packet: dnsPacket.DecodedPacket): number {
  for (const record of packet.authorities ?? []) {
    if (record.type === 'SOA') return Math.min(record.ttl ?? 0, record.data.minimum ?? 0);
  }
  return DEFAULT_NEGATIVE_TTL_SECONDS;
}

/**
 * Lower-case, without the trailing dot; null if it breaks RFC 1035 §2.3.4 (labels of 1 to
 * 63 octets, 253 characters in all) or holds anything but letters, digits, '-' and '_'
 * (host names are A-labels by now; '_' appears in service names such as _dmarc).
 */
function normaliseName(name: string): string | null {
  const lower = name.toLowerCase().replace(/\.$/, '');
  if (lower.length === 0 || lower.length > 253) return null;
  return lower.split('.').every((label) => /^[a-z0-9_-]{1,63}$/.test(label)) ? lower : null;
}

/**
 * The code that sums up failed attempts: a resolver that answered SERVFAIL or REFUSED reached
 * DNS, which says more about the name than a timeout on our side does; else the last one.
 */
function summaryCode(codes: readonly DnsFailureCode[]): DnsFailureCode {
  return codes.find((code) => code === 'SERVFAIL' || code === 'REFUSED') ?? codes.at(-1) ?? 'TRANSPORT';
}

function failure(code: DnsFailureCode, reason: string): DnsFailure {
  return { rcode: code, answers: Object.freeze([]) as readonly [], ttl: 0, reason };
}

/** The resolver as messages name it: its host only, as a URL's path or query may carry a token. */
function resolverLabel(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'resolver';
  }
}

/** RFC 8484 §4.1: the `dns` parameter is base64url (RFC 4648 §5) without padding. */
function base64UrlWithoutPadding(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}
