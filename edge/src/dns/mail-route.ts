// Where mail for a domain goes, as an SMTP client would find it (RFC 5321 §5.1): the MX
// records by preference, each host's addresses, or the domain's own address when it has no
// MX; "MX 0 ." says it takes no mail at all (RFC 7505).
import type { MxTarget } from '@rcpt/shared/contract/prober';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { type DnsFailure, type DnsRecordType, type DohClient, isDnsFailure } from './doh-client.ts';
import { isSpecialPurposeAddress } from './ip-ranges.ts';

export interface MailRouteDeps {
  doh: DohClient;
  /** Let MX hosts on private, loopback and other special-purpose addresses through (development, tests). */
  allowPrivateTargets: boolean;
}

// A probe tries hosts in order and gives up long before the tenth; the bound keeps a domain
// that lists hundreds of MX records from costing hundreds of lookups.
const MAX_MX_HOSTS = 10;
// The prober contract takes at most 16 addresses per host (MxTarget.ips).
const MAX_IPS_PER_HOST = 16;

/** A host and what its A and AAAA lookups gave; `error` when one of them got no answer. */
type HostAddresses = { host: string; preference: number; ips: string[] } | { error: string };

/**
 * The mail route of `domain` (lower-case A-labels). DNS trouble anywhere on the way (SERVFAIL,
 * timeout, no resolver reachable) is `error`, never a guess: the next attempt may succeed.
 */
export async function resolveMailRoute(domain: string, deps: MailRouteDeps): Promise<DnsOutcome> {
  const { doh } = deps;
  const name = domain.toLowerCase().replace(/\.$/, '');
  const mx = await doh.query(name, 'MX');
  if (isDnsFailure(mx)) return lookupError(name, 'MX', mx);
  if (mx.rcode === 'NXDOMAIN') return { kind: 'nxdomain' };
  if (mx.answers.length === 0) return implicitRoute(name, deps);

  // RFC 7505 §3: a null MX is the domain's only MX, preference 0 and exchange the root.
  const [onlyRecord] = mx.answers;
  if (mx.answers.length === 1 && onlyRecord?.preference === 0 && onlyRecord.exchange === '') {
    return { kind: 'null_mx' };
  }

  // RFC 5321 §5.1: lower preference first. A root exchange among real ones (a misconfigured
  // null MX) names no host, and a host listed twice is tried once, at its best preference.
  const exchanges: { host: string; preference: number }[] = [];
  for (const record of [...mx.answers].sort((left, right) => left.preference - right.preference)) {
    if (record.exchange === '' || exchanges.some(({ host }) => host === record.exchange)) continue;
    exchanges.push({ host: record.exchange, preference: record.preference });
  }

  const hosts = await Promise.all(
    exchanges.slice(0, MAX_MX_HOSTS).map(async ({ host, preference }): Promise<HostAddresses> => {
      const addresses = await addressesOf(host, doh);
      return 'error' in addresses ? addresses : { host, preference, ips: addresses.ips };
    }),
  );
  const resolved: MxTarget[] = [];
  for (const host of hosts) {
    if ('error' in host) return { kind: 'error', message: host.error };
    // A host without addresses (NXDOMAIN, NODATA) cannot take mail; the others still can.
    if (host.ips.length > 0) resolved.push(host);
  }
  // An MX naming only hosts that do not resolve is a broken domain: mail to it bounces, which
  // is how large providers treat it, so it is no route rather than a DNS error to retry.
  if (resolved.length === 0) return { kind: 'no_mail_route' };
  return routeThrough(resolved, 'MX', deps.allowPrivateTargets);
}

/** RFC 5321 §5.1: no MX records, so the domain itself is the mail host, preference 0. */
async function implicitRoute(domain: string, deps: MailRouteDeps): Promise<DnsOutcome> {
  const addresses = await addressesOf(domain, deps.doh);
  if ('error' in addresses) return { kind: 'error', message: addresses.error };
  if (addresses.ips.length === 0) return { kind: 'no_mail_route' };
  return routeThrough([{ host: domain, preference: 0, ips: addresses.ips }], null, deps.allowPrivateTargets);
}

/**
 * The outcome for hosts that all have addresses: special-purpose addresses (RFC 6890) are
 * dropped unless allowed; hosts left with none are dropped; if no host is left the route is
 * unroutable. `dnsType` null means an implicit MX, named by the family of its first address.
 */
function routeThrough(hosts: MxTarget[], dnsType: 'MX' | null, allowPrivateTargets: boolean): DnsOutcome {
  const routable = allowPrivateTargets
    ? hosts
    : hosts
        .map((host) => ({ ...host, ips: host.ips.filter((ip) => !isSpecialPurposeAddress(ip)) }))
        .filter((host) => host.ips.length > 0);
  if (routable.length === 0) return { kind: 'unroutable', mx: hosts.map(withinContract) };
  const firstAddress = routable[0]?.ips[0] ?? '';
  return {
    kind: 'mx',
    dnsType: dnsType ?? (firstAddress.includes(':') ? 'AAAA' : 'A'),
    mx: routable.map(withinContract),
  };
}

function withinContract(host: MxTarget): MxTarget {
  return host.ips.length > MAX_IPS_PER_HOST ? { ...host, ips: host.ips.slice(0, MAX_IPS_PER_HOST) } : host;
}

/** A and AAAA of `host`, asked together; IPv4 first, as most MX hosts and probers prefer it. */
async function addressesOf(host: string, doh: DohClient): Promise<{ ips: string[] } | { error: string }> {
  const [ipv4, ipv6] = await Promise.all([doh.query(host, 'A'), doh.query(host, 'AAAA')]);
  const ips: string[] = [];
  for (const [type, answer] of [
    ['A', ipv4],
    ['AAAA', ipv6],
  ] as const) {
    // A name that cannot be put in a query cannot exist: no addresses, not a DNS failure.
    if (answer.rcode === 'BAD_NAME') continue;
    if (isDnsFailure(answer)) return { error: lookupError(host, type, answer).message };
    for (const record of answer.answers) if (!ips.includes(record.address)) ips.push(record.address);
  }
  return { ips };
}

function lookupError(
  name: string,
  type: DnsRecordType,
  failure: DnsFailure,
): { kind: 'error'; message: string } {
  return {
    kind: 'error',
    message: `${type} lookup for ${name} failed (${failure.rcode}): ${failure.reason}`,
  };
}
