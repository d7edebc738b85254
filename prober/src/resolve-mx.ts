// The mail route of a domain from the system resolver, for `rcpt-prober verify`. The edge gets
// the same answer over DNS over HTTPS; both end in the shared DnsOutcome so one verdict
// function reads either.
import { Resolver } from 'node:dns/promises';
import type { MxTarget } from '@rcpt/shared/contract/prober';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';

/** The part of `node:dns/promises` Resolver the lookup uses. */
export interface MailRouteResolver {
  resolveMx(hostname: string): Promise<Array<{ exchange: string; priority: number }>>;
  resolve4(hostname: string): Promise<string[]>;
  resolve6(hostname: string): Promise<string[]>;
}

export interface MailRouteOptions {
  /** Whether an address must not be probed (private, loopback, …); such MX hosts make the route unroutable. */
  isUnroutable?: (ip: string) => boolean;
}

// The contract's bounds on one probe's targets (shared/contract/prober.ts MxTarget).
const MAX_MX_HOSTS = 20;
const MAX_IPS_PER_HOST = 16;

/** The system resolver, or one pointed at `servers` (DNS_SERVERS) when given. */
export function createMailRouteResolver(servers: readonly string[]): MailRouteResolver {
  const resolver = new Resolver({ timeout: 5_000, tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  return resolver;
}

/**
 * MX hosts of `domain` with their addresses, best preference first (RFC 5321 §5.1): the MX
 * records; if there are none, the domain itself as an implicit MX when it has A/AAAA;
 * RFC 7505's null MX as "accepts no mail".
 */
export async function resolveMailRoute(
  domain: string,
  resolver: MailRouteResolver,
  options: MailRouteOptions = {},
): Promise<DnsOutcome> {
  let records: Array<{ exchange: string; priority: number }>;
  try {
    records = await resolver.resolveMx(domain);
  } catch (error) {
    const code = dnsErrorCode(error);
    if (code === 'ENOTFOUND') return { kind: 'nxdomain' };
    if (code !== 'ENODATA') return { kind: 'error', message: describeDnsError('MX', domain, error) };
    records = [];
  }

  const exchanges = records.map((record) => ({
    host: record.exchange.replace(/\.$/, ''),
    preference: record.priority,
  }));
  // RFC 7505: a lone "MX 0 ." means the domain accepts no mail. Node reports the root as ''.
  if (exchanges.length === 1 && exchanges[0]?.host === '') return { kind: 'null_mx' };
  const hosts = exchanges.filter((exchange) => exchange.host !== '');

  if (hosts.length === 0) {
    // RFC 5321 §5.1: no MX records, so the domain's own address is the implicit MX.
    const implicit = await addressesOf(domain, resolver);
    if (implicit.error && implicit.ips.length === 0) return { kind: 'error', message: implicit.error };
    if (implicit.ips.length === 0) return { kind: 'no_mail_route' };
    const mx: MxTarget[] = [{ host: domain, preference: 0, ips: implicit.ips.slice(0, MAX_IPS_PER_HOST) }];
    return routable({ kind: 'mx', dnsType: implicit.hasV4 ? 'A' : 'AAAA', mx }, options);
  }

  hosts.sort((a, b) => a.preference - b.preference || a.host.localeCompare(b.host));
  const chosen = hosts.slice(0, MAX_MX_HOSTS);
  const resolved = await Promise.all(chosen.map((host) => addressesOf(host.host, resolver)));
  const mx: MxTarget[] = chosen.map((host, index) => ({
    host: host.host,
    preference: host.preference,
    ips: (resolved[index]?.ips ?? []).slice(0, MAX_IPS_PER_HOST),
  }));
  if (mx.every((target) => target.ips.length === 0)) {
    // Not one MX host has an address: a resolver failure says nothing about the domain, but
    // hosts that plainly do not exist mean there is no route for mail.
    const failure = resolved.find((answer) => answer.error)?.error;
    return failure ? { kind: 'error', message: failure } : { kind: 'no_mail_route' };
  }
  return routable({ kind: 'mx', dnsType: 'MX', mx }, options);
}

function routable(outcome: Extract<DnsOutcome, { kind: 'mx' }>, options: MailRouteOptions): DnsOutcome {
  const isUnroutable = options.isUnroutable;
  if (!isUnroutable) return outcome;
  const reachable = outcome.mx.some((target) => target.ips.some((ip) => !isUnroutable(ip)));
  return reachable ? outcome : { kind: 'unroutable', mx: outcome.mx };
}

interface HostAddresses {
  ips: string[];
  hasV4: boolean;
  /** Set when a lookup failed for a reason other than "no such name / no such record". */
  error: string | null;
}

async function addressesOf(host: string, resolver: MailRouteResolver): Promise<HostAddresses> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
  const ips: string[] = [];
  let error: string | null = null;
  let hasV4 = false;
  for (const [type, answer] of [
    ['A', v4],
    ['AAAA', v6],
  ] as const) {
    if (answer.status === 'fulfilled') {
      ips.push(...answer.value);
      if (type === 'A' && answer.value.length > 0) hasV4 = true;
    } else {
      const code = dnsErrorCode(answer.reason);
      if (code !== 'ENODATA' && code !== 'ENOTFOUND') error ??= describeDnsError(type, host, answer.reason);
    }
  }
  return { ips, hasV4, error };
}

function dnsErrorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

function describeDnsError(type: string, name: string, error: unknown): string {
  const code = dnsErrorCode(error);
  return `${type} lookup of ${name} failed${code ? ` (${code})` : ''}`;
}
