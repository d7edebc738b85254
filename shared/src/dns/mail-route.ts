// Where mail for a domain goes, as an SMTP client finds it (RFC 5321 §5.1): the MX hosts by
// preference with their addresses, or the domain itself when it has no MX; "MX 0 ." says it
// takes no mail at all (RFC 7505). One algorithm for every caller: the edge asks it over DNS
// over HTTPS, `rcpt-prober verify` over the system resolver, so both see the same route.
import { MAX_IPS_PER_MX, type MxTarget } from '../contract/prober.ts';
import { isSpecialPurposeAddress } from '../ip-ranges.ts';
import type { DnsOutcome } from '../verify/inputs.ts';
import type { DnsFailureKind, DnsLookup, LookupOutcome } from './lookup.ts';

export interface MailRouteOptions {
  /** Let hosts on private, loopback and other special-purpose addresses through (development, tests). */
  allowPrivateTargets: boolean;
}

// A probe tries hosts in order and runs out of time long before the tenth, and each host costs
// two lookups (subrequests, on the edge): the bound keeps a domain listing hundreds of MX
// records cheap. Well inside the prober contract's MAX_MX_PER_PROBE.
export const MAX_MX_HOSTS = 10;

/** The A and AAAA addresses of one host, or the failure that left it with none. */
interface HostAddresses {
  host: string;
  preference: number;
  ips: string[];
  /** The first lookup of the host that failed; it matters only when `ips` is empty. */
  failure: FailedLookup | null;
}

interface FailedLookup {
  type: 'MX' | 'A' | 'AAAA';
  name: string;
  failure: DnsFailureKind;
  detail: string;
}

/**
 * The mail route of `domain` (A-labels). DNS trouble that leaves no host to try (SERVFAIL,
 * timeout, no resolver reachable) is `error`, never a guess: the next attempt may succeed.
 */
export async function mailRoute(
  domain: string,
  lookup: DnsLookup,
  options: MailRouteOptions,
): Promise<DnsOutcome> {
  const name = normaliseName(domain);
  const mx = await lookup.mx(name);
  if (mx.kind === 'failure') return dnsError({ type: 'MX', name, failure: mx.failure, detail: mx.detail });
  if (mx.kind === 'nxdomain') return { kind: 'nxdomain' };
  if (mx.records.length === 0) {
    // RFC 5321 §5.1: no MX records, so the domain itself is the mail host, preference 0.
    const implicit = await addressesOf(name, 0, lookup);
    return routeThrough([implicit], null, options);
  }

  // RFC 7505 §3: a null MX is the domain's only MX, preference 0 and exchange the root.
  const [onlyRecord] = mx.records;
  if (mx.records.length === 1 && onlyRecord?.preference === 0 && normaliseName(onlyRecord.exchange) === '') {
    return { kind: 'null_mx' };
  }

  // RFC 5321 §5.1: lower preference first. Ties go in host-name order rather than at random:
  // the same DNS then always gives the same route, so the API, a batch retry and
  // `rcpt-prober verify` ask the same host first, and per-host politeness sees one first host
  // per domain. A probe is one short session, not the delivery load §5.1's randomising spreads.
  // A root exchange among real ones (a broken null MX) names no host; a host listed twice is
  // tried once, at its best preference.
  const exchanges = mx.records
    .map((record) => ({ host: normaliseName(record.exchange), preference: record.preference }))
    .filter((exchange) => exchange.host !== '')
    .sort(
      (left, right) =>
        left.preference - right.preference || (left.host < right.host ? -1 : left.host > right.host ? 1 : 0),
    )
    .filter((exchange, index, sorted) => sorted.findIndex(({ host }) => host === exchange.host) === index)
    .slice(0, MAX_MX_HOSTS);
  const hosts = await Promise.all(
    exchanges.map(({ host, preference }) => addressesOf(host, preference, lookup)),
  );
  return routeThrough(hosts, 'MX', options);
}

/**
 * The route through one named host, resolved and filtered as an MX host is (special-purpose
 * addresses, RFC 6890): how a mail tenant's own inbound host is reached behind its gateway.
 */
export async function hostRoute(
  host: string,
  lookup: Pick<DnsLookup, 'a' | 'aaaa'>,
  options: MailRouteOptions,
): Promise<DnsOutcome> {
  return routeThrough([await addressesOf(normaliseName(host), 0, lookup)], 'MX', options);
}

/**
 * The outcome for resolved hosts, best first. Special-purpose addresses (RFC 6890) are dropped
 * unless allowed, and hosts left without addresses with them. A host whose lookups failed is
 * skipped as a sender skips an MX it cannot resolve, as long as another host is left; with none
 * left, a failure is an `error` (it may resolve next time), hosts with only special-purpose
 * addresses are `unroutable`, and hosts that plainly do not resolve leave no route for mail.
 * `dnsType` null means an implicit MX, named by the family of its first address.
 */
function routeThrough(
  hosts: readonly HostAddresses[],
  dnsType: 'MX' | null,
  { allowPrivateTargets }: MailRouteOptions,
): DnsOutcome {
  const routable = hosts
    .map((host) => ({
      host: host.host,
      preference: host.preference,
      ips: allowPrivateTargets ? host.ips : host.ips.filter((ip) => !isSpecialPurposeAddress(ip)),
    }))
    .filter((host) => host.ips.length > 0)
    .map(withinContract);
  if (routable.length > 0) {
    const firstAddress = routable[0]?.ips[0] ?? '';
    return { kind: 'mx', dnsType: dnsType ?? (firstAddress.includes(':') ? 'AAAA' : 'A'), mx: routable };
  }
  const failed = hosts.find((host) => host.ips.length === 0 && host.failure !== null)?.failure;
  if (failed) return dnsError(failed);
  const special = hosts.filter((host) => host.ips.length > 0);
  if (special.length > 0) {
    return {
      kind: 'unroutable',
      mx: special.map((host) =>
        withinContract({ host: host.host, preference: host.preference, ips: host.ips }),
      ),
    };
  }
  return { kind: 'no_mail_route' };
}

/** The prober contract carries at most MAX_IPS_PER_MX addresses per host. */
function withinContract(host: MxTarget): MxTarget {
  return host.ips.length > MAX_IPS_PER_MX ? { ...host, ips: host.ips.slice(0, MAX_IPS_PER_MX) } : host;
}

/**
 * A and AAAA of `host`, asked together; IPv4 first, as most MX hosts and probers prefer it.
 * Whatever one of them found is used even when the other failed, as MTAs do.
 */
async function addressesOf(
  host: string,
  preference: number,
  lookup: Pick<DnsLookup, 'a' | 'aaaa'>,
): Promise<HostAddresses> {
  const [ipv4, ipv6] = await Promise.all([lookup.a(host), lookup.aaaa(host)]);
  const ips: string[] = [];
  let failure: FailedLookup | null = null;
  for (const [type, outcome] of [
    ['A', ipv4],
    ['AAAA', ipv6],
  ] as const satisfies readonly (readonly ['A' | 'AAAA', LookupOutcome<string>])[]) {
    if (outcome.kind === 'failure') {
      failure ??= { type, name: host, failure: outcome.failure, detail: outcome.detail };
    } else if (outcome.kind === 'answer') {
      for (const ip of outcome.records) if (!ips.includes(ip)) ips.push(ip);
    }
  }
  return { host, preference, ips, failure };
}

function dnsError({ type, name, failure, detail }: FailedLookup): DnsOutcome {
  return { kind: 'error', failure, message: `${type} lookup for ${name} failed (${failure}): ${detail}` };
}

/** Lower-case, without the trailing dot; the root ('.') becomes ''. */
function normaliseName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}
