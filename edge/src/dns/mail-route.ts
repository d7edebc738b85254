// The edge's mail route: the shared algorithm (RFC 5321 §5.1, RFC 7505) asking its questions
// over DNS over HTTPS.
import type { DnsFailureKind, DnsLookup, LookupOutcome } from '@rcpt/shared/dns/lookup';
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
export function resolveMailRoute(domain: string, deps: MailRouteDeps): Promise<DnsOutcome> {
  return mailRoute(domain, dohLookup(deps.doh), { allowPrivateTargets: deps.allowPrivateTargets });
}

/** The mail route's questions, asked through `doh` (and its TTL cache). */
export function dohLookup(doh: DohClient): DnsLookup {
  return {
    mx: async (domain) =>
      outcomeOf(await doh.query(domain, 'MX'), ({ preference, exchange }) => ({ preference, exchange })),
    a: async (host) => outcomeOf(await doh.query(host, 'A'), ({ address }) => address),
    aaaa: async (host) => outcomeOf(await doh.query(host, 'AAAA'), ({ address }) => address),
  };
}

const FAILURE_KINDS: Readonly<Record<Exclude<DnsFailureCode, 'BAD_NAME'>, DnsFailureKind>> = {
  SERVFAIL: 'servfail',
  REFUSED: 'refused',
  TIMEOUT: 'timeout',
  TRANSPORT: 'unreachable',
  BAD_RESPONSE: 'bad_response',
};

function outcomeOf<Type extends 'MX' | 'A' | 'AAAA', Record>(
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
