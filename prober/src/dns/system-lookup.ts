// The mail route's questions asked through the system resolver (node:dns, c-ares), for
// `rcpt-prober verify`: the same algorithm the edge runs over DNS over HTTPS, so both find the
// same route for the same DNS.
import { Resolver } from 'node:dns/promises';
import type { DnsFailureKind, DnsLookup, LookupOutcome, TenantLookup } from '@rcpt/shared/dns/lookup';
import { reverseName } from './reverse-names.ts';

export interface SystemLookupOptions {
  /** Resolvers (`ip`, `ip:port`, `[ipv6]:port`); empty means the system's own (/etc/resolv.conf). */
  servers: readonly string[];
  /** Per query attempt. Default 5,000 ms. */
  timeoutMs?: number;
  /** Attempts per resolver before giving up. Default 2. */
  tries?: number;
}

/** The PTR names of an address (its in-addr.arpa or ip6.arpa name, RFC 1035 §3.5, RFC 3596 §2.5). */
export interface PtrLookup {
  ptr(address: string): Promise<LookupOutcome<string>>;
}

export function systemLookup({
  servers,
  timeoutMs = 5_000,
  tries = 2,
}: SystemLookupOptions): DnsLookup & TenantLookup & PtrLookup {
  const resolver = new Resolver({ timeout: timeoutMs, tries });
  if (servers.length > 0) resolver.setServers([...servers]);
  return {
    mx: (domain) =>
      ask(() => resolver.resolveMx(domain)).then((outcome) =>
        outcome.kind === 'answer'
          ? {
              kind: 'answer',
              records: outcome.records.map(({ priority, exchange }) => ({ preference: priority, exchange })),
            }
          : outcome,
      ),
    a: (host) => ask(() => resolver.resolve4(host)),
    aaaa: (host) => ask(() => resolver.resolve6(host)),
    // RFC 7208 §3.3: a TXT record's character-strings are read joined.
    txt: (name) => ask(async () => (await resolver.resolveTxt(name)).map((strings) => strings.join(''))),
    cname: (name) => ask(() => resolver.resolveCname(name)),
    // Asked as a PTR query of the reverse name: `reverse()` answers from /etc/hosts first.
    ptr: (address) => {
      const name = reverseName(address);
      return name === null ? Promise.resolve({ kind: 'nxdomain' }) : ask(() => resolver.resolvePtr(name));
    },
  };
}

// node:dns error codes (c-ares status names) for a lookup that got no settled answer.
const FAILURE_KINDS: Readonly<Record<string, DnsFailureKind>> = {
  ESERVFAIL: 'servfail',
  EREFUSED: 'refused',
  ETIMEOUT: 'timeout',
  ECONNREFUSED: 'unreachable', // no resolver could be contacted
  EFORMERR: 'bad_response',
  EBADRESP: 'bad_response',
  ENOTIMP: 'bad_response',
};

async function ask<Record>(query: () => Promise<Record[]>): Promise<LookupOutcome<Record>> {
  try {
    return { kind: 'answer', records: await query() };
  } catch (error) {
    const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
    // ENOTFOUND is NXDOMAIN; ENODATA a name without records of the type (NODATA). A name that
    // cannot be put in a query (EBADNAME) cannot exist.
    if (code === 'ENOTFOUND' || code === 'EBADNAME') return { kind: 'nxdomain' };
    if (code === 'ENODATA') return { kind: 'answer', records: [] };
    return {
      kind: 'failure',
      failure: FAILURE_KINDS[code] ?? 'unreachable',
      detail: code
        ? `the system resolver answered ${code}`
        : error instanceof Error
          ? error.message
          : String(error),
    };
  }
}
