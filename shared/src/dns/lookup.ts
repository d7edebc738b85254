// The DNS questions the mail route asks, as an interface: the edge answers them over DNS over
// HTTPS, the prober with the system resolver (node:dns), tests from a zone table. Every
// outcome is a value; an adapter never throws for DNS or network trouble.

/** Why a resolver gave no answer that settles the question. */
export type DnsFailureKind =
  | 'servfail' // the resolver could not get an answer from the name's servers (RFC 1035 §4.1.1)
  | 'refused' // the resolver will not answer us
  | 'timeout' // no answer in time
  | 'unreachable' // no resolver could be reached (connection, TLS, HTTP status)
  | 'bad_response'; // something came back, but not a DNS answer to our question

/**
 * One lookup's outcome. NOERROR with no records is NODATA: the name exists without records of
 * that type (RFC 2308 §2.2). A name that cannot be put in a query (RFC 1035 §2.3.4) cannot
 * exist, so adapters answer `nxdomain` for it. CNAMEs are followed by the resolver: `records`
 * are those at the end of the chain.
 */
export type LookupOutcome<Record> =
  | { kind: 'answer'; records: readonly Record[] }
  | { kind: 'nxdomain' }
  | { kind: 'failure'; failure: DnsFailureKind; detail: string };

/** An MX record as a resolver gives it; `exchange` '' or '.' is the root (RFC 7505). */
export interface MxRecord {
  preference: number;
  exchange: string;
}

export interface DnsLookup {
  mx(domain: string): Promise<LookupOutcome<MxRecord>>;
  /** IPv4 addresses, dotted quads. */
  a(host: string): Promise<LookupOutcome<string>>;
  /** IPv6 addresses, RFC 5952 text. */
  aaaa(host: string): Promise<LookupOutcome<string>>;
}

/**
 * The questions tenant detection asks besides a host's addresses: a name's TXT records (each
 * record's character-strings joined, as RFC 7208 §3.3 reads them) and the target of a name's
 * CNAME record (RFC 1034 §3.6.2), not followed.
 */
export interface TenantLookup extends Pick<DnsLookup, 'a' | 'aaaa'> {
  txt(name: string): Promise<LookupOutcome<string>>;
  cname(name: string): Promise<LookupOutcome<string>>;
}
