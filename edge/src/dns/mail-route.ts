// The edge's mail route: the shared algorithm (RFC 5321 §5.1, RFC 7505) asking its questions
// over DNS over HTTPS.
import type { DnsFailureKind, DnsLookup, LookupOutcome, TenantLookup } from '@rcpt/shared/dns/lookup';
import { mailRoute } from '@rcpt/shared/dns/mail-route';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import {
  type DnsAnswer,
  type DnsFailureCode,
  type DnsRecordOf,
  type DohClient,
  isDnsFailure,
} from './doh-client.ts';

export interface MailRouteDeps {
  doh: DohClient;
  /** Let MX hosts on private, loopback and other special-purpose addresses through (development, tests). */
  allowPrivateTargets: boolean;
}

/** The mail route of `domain` (lower-case A-labels); DNS trouble is an outcome, never a throw. */
export async function resolveMailRoute(domain: string, deps: MailRouteDeps): Promise<DnsOutcome> {
  return (await resolveMailRouteWithTtl(domain, deps)).route;
}

/** A mail route and how long it may be reused: the shortest TTL of the answers it was built from. */
export interface TimedMailRoute {
  route: DnsOutcome;
  ttlSeconds: number;
}

/**
 * `resolveMailRoute`, with the route's TTL. 0 when any lookup failed, even one the route could
 * do without (a host skipped for now): such a route is not the domain's lasting answer. (An
 * `error` route is never kept whatever its TTL: the domain facts' rule.)
 */
export async function resolveMailRouteWithTtl(domain: string, deps: MailRouteDeps): Promise<TimedMailRoute> {
  let ttlSeconds = Number.POSITIVE_INFINITY;
  const lookup = dohLookup(deps.doh, (ttl) => {
    ttlSeconds = Math.min(ttlSeconds, ttl);
  });
  const route = await mailRoute(domain, lookup, { allowPrivateTargets: deps.allowPrivateTargets });
  return { route, ttlSeconds: Number.isFinite(ttlSeconds) ? ttlSeconds : 0 };
}

/**
 * The mail route's and tenant detection's questions, asked through `doh` (and its TTL cache);
 * `onTtl` hears each answer's TTL (0 for a failure).
 */
export function dohLookup(
  doh: DohClient,
  onTtl: (ttlSeconds: number) => void = () => {},
): DnsLookup & TenantLookup {
  const ask = async <Type extends 'MX' | 'A' | 'AAAA' | 'TXT' | 'CNAME'>(name: string, type: Type) => {
    const answer = await doh.query(name, type);
    onTtl(isDnsFailure(answer) ? 0 : answer.ttl);
    return answer;
  };
  return {
    mx: async (domain) =>
      outcomeOf(await ask(domain, 'MX'), ({ preference, exchange }) => ({ preference, exchange })),
    a: async (host) => outcomeOf(await ask(host, 'A'), ({ address }) => address),
    aaaa: async (host) => outcomeOf(await ask(host, 'AAAA'), ({ address }) => address),
    txt: async (name) => outcomeOf(await ask(name, 'TXT'), ({ text }) => text),
    cname: async (name) => outcomeOf(await ask(name, 'CNAME'), ({ target }) => target),
  };
}

const FAILURE_KINDS: Readonly<Record<Exclude<DnsFailureCode, 'BAD_NAME'>, DnsFailureKind>> = {
  SERVFAIL: 'servfail',
  REFUSED: 'refused',
  TIMEOUT: 'timeout',
  TRANSPORT: 'unreachable',
  BAD_RESPONSE: 'bad_response',
};

function outcomeOf<Type extends 'MX' | 'A' | 'AAAA' | 'TXT' | 'CNAME', Record>(
  answer: DnsAnswer<Type>,
  recordOf: (record: DnsRecordOf<Type>) => Record,
): LookupOutcome<Record> {
  if (isDnsFailure(answer)) {
    // A name that cannot be put in a query cannot exist.
    if (answer.rcode === 'BAD_NAME') return { kind: 'nxdomain' };
    return { kind: 'failure', failure: FAILURE_KINDS[answer.rcode], detail: answer.reason };
  }
  if (answer.rcode === 'NXDOMAIN') return { kind: 'nxdomain' };
  return { kind: 'answer', records: answer.answers.map(recordOf) };
}
