// The mail-route cases: DNS setups and the route `mailRoute` must find in each. One table, run
// against every way rcpt asks DNS — an in-memory lookup (shared), DNS over HTTPS (the edge,
// inside workerd) and the system resolver over UDP (the prober) — all answered by the world's
// resolver (test/world/dns-answer.ts) from MAIL_ROUTE_ZONE, so each must give the same answer.
import type { DnsOutcome } from '../../shared/src/verify/inputs.ts';
import type { ZoneEntry } from '../world/zone.ts';

export interface MailRouteCase {
  /** What the case shows. */
  name: string;
  domain: string;
  /** The records this case adds to MAIL_ROUTE_ZONE; names are unique to the case. */
  zone: Readonly<Record<string, ZoneEntry>>;
  allowPrivateTargets?: boolean;
  /** For `error`, `message` is the part before the resolver's own words (see `comparableRoute`). */
  expected: DnsOutcome;
}

// Public unicast addresses (no special-purpose range): nothing ever connects to them here.
const IP = (last: number) => `93.184.215.${last}`;
const IP6 = (last: number) => `2606:2800:220:1::${last}`;
const mx = (preference: number, exchange: string) => ({ preference, exchange });

const manyHosts: Record<string, ZoneEntry> = {
  'many.route.test': {
    MX: Array.from({ length: 15 }, (_, index) => mx(index, `mx${index}.many.route.test`)),
  },
};
for (let index = 0; index < 15; index++) manyHosts[`mx${index}.many.route.test`] = { A: [IP(100 + index)] };
const manyAddresses = Array.from({ length: 20 }, (_, index) => `93.184.216.${index}`);

export const MAIL_ROUTE_CASES: readonly MailRouteCase[] = [
  {
    name: 'MX hosts by preference (RFC 5321 §5.1), each with its IPv4 then its IPv6 addresses',
    domain: 'two.route.test',
    zone: {
      'two.route.test': { MX: [mx(20, 'mx2.two.route.test'), mx(10, 'mx1.two.route.test')] },
      'mx1.two.route.test': { AAAA: [IP6(10)], A: [IP(10), IP(11)] },
      'mx2.two.route.test': { A: [IP(20)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [
        { host: 'mx1.two.route.test', preference: 10, ips: [IP(10), IP(11), IP6(10)] },
        { host: 'mx2.two.route.test', preference: 20, ips: [IP(20)] },
      ],
    },
  },
  {
    name: 'equal preferences in host-name order, whatever order DNS lists them in',
    domain: 'tie.route.test',
    zone: {
      'tie.route.test': {
        MX: [mx(10, 'mx-b.tie.route.test'), mx(10, 'mx-a.tie.route.test'), mx(5, 'mx-c.tie.route.test')],
      },
      'mx-a.tie.route.test': { A: [IP(30)] },
      'mx-b.tie.route.test': { A: [IP(31)] },
      'mx-c.tie.route.test': { A: [IP(32)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [
        { host: 'mx-c.tie.route.test', preference: 5, ips: [IP(32)] },
        { host: 'mx-a.tie.route.test', preference: 10, ips: [IP(30)] },
        { host: 'mx-b.tie.route.test', preference: 10, ips: [IP(31)] },
      ],
    },
  },
  {
    name: 'a host listed twice (in any letter case) once, at its best preference',
    domain: 'twice.route.test',
    zone: {
      'twice.route.test': { MX: [mx(30, 'MX.Twice.Route.Test'), mx(10, 'mx.twice.route.test')] },
      'mx.twice.route.test': { A: [IP(40)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.twice.route.test', preference: 10, ips: [IP(40)] }],
    },
  },
  {
    name: '"MX 0 ." is a null MX: the domain accepts no mail (RFC 7505)',
    domain: 'null.route.test',
    zone: { 'null.route.test': { MX: [mx(0, '.')], A: [IP(50)] } },
    expected: { kind: 'null_mx' },
  },
  {
    name: 'a root exchange beside real MX hosts names no host',
    domain: 'mixed.route.test',
    zone: {
      'mixed.route.test': { MX: [mx(0, '.'), mx(10, 'mx.mixed.route.test')] },
      'mx.mixed.route.test': { A: [IP(51)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.mixed.route.test', preference: 10, ips: [IP(51)] }],
    },
  },
  {
    name: 'a lone root exchange at another preference is no null MX, and no host either',
    domain: 'root10.route.test',
    zone: { 'root10.route.test': { MX: [mx(10, '.')] } },
    expected: { kind: 'no_mail_route' },
  },
  {
    name: 'a domain that does not exist',
    domain: 'missing.route.test',
    zone: {},
    expected: { kind: 'nxdomain' },
  },
  {
    name: 'no MX: the domain itself is the mail host, preference 0 (implicit MX, RFC 5321 §5.1)',
    domain: 'bare.route.test',
    zone: { 'bare.route.test': { A: [IP(60)], AAAA: [IP6(60)] } },
    expected: {
      kind: 'mx',
      dnsType: 'A',
      mx: [{ host: 'bare.route.test', preference: 0, ips: [IP(60), IP6(60)] }],
    },
  },
  {
    name: 'an implicit MX over IPv6 only',
    domain: 'v6.route.test',
    zone: { 'v6.route.test': { AAAA: [IP6(61)] } },
    expected: { kind: 'mx', dnsType: 'AAAA', mx: [{ host: 'v6.route.test', preference: 0, ips: [IP6(61)] }] },
  },
  {
    name: 'a name with neither MX nor A/AAAA has no route for mail',
    domain: 'empty.route.test',
    zone: { 'empty.route.test': { TXT: ['v=spf1 -all'] } },
    expected: { kind: 'no_mail_route' },
  },
  {
    name: 'MX hosts that do not exist leave no route for mail',
    domain: 'dangling.route.test',
    zone: { 'dangling.route.test': { MX: [mx(10, 'mx.gone.route.test')], A: [IP(62)] } },
    expected: { kind: 'no_mail_route' },
  },
  {
    name: 'an MX host that does not exist is skipped',
    domain: 'half.route.test',
    zone: {
      'half.route.test': { MX: [mx(5, 'mx.nowhere.route.test'), mx(10, 'mx.half.route.test')] },
      'mx.half.route.test': { A: [IP(63)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.half.route.test', preference: 10, ips: [IP(63)] }],
    },
  },
  {
    name: 'an MX host whose lookup fails is skipped while another host resolves',
    domain: 'onefails.route.test',
    zone: {
      'onefails.route.test': { MX: [mx(10, 'mx1.onefails.route.test'), mx(20, 'mx2.onefails.route.test')] },
      'mx1.onefails.route.test': { servfail: true },
      'mx2.onefails.route.test': { A: [IP(64)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx2.onefails.route.test', preference: 20, ips: [IP(64)] }],
    },
  },
  {
    name: 'every MX host failing is a DNS error, named by the best host (SERVFAIL, not the timeout)',
    domain: 'allfail.route.test',
    zone: {
      'allfail.route.test': { MX: [mx(10, 'mx1.allfail.route.test'), mx(20, 'mx2.allfail.route.test')] },
      'mx1.allfail.route.test': { servfail: true },
      'mx2.allfail.route.test': { silent: true },
    },
    expected: {
      kind: 'error',
      failure: 'servfail',
      message: 'A lookup for mx1.allfail.route.test failed (servfail)',
    },
  },
  {
    name: 'a host that does not exist beside one whose lookup times out: a DNS error, not "no route"',
    domain: 'gonetimeout.route.test',
    zone: {
      'gonetimeout.route.test': {
        MX: [mx(10, 'mx.none.gonetimeout.route.test'), mx(20, 'mx.slow.gonetimeout.route.test')],
      },
      'mx.slow.gonetimeout.route.test': { silent: true },
    },
    expected: {
      kind: 'error',
      failure: 'timeout',
      message: 'A lookup for mx.slow.gonetimeout.route.test failed (timeout)',
    },
  },
  {
    name: 'the MX lookup answering SERVFAIL',
    domain: 'servfail.route.test',
    zone: { 'servfail.route.test': { servfail: true } },
    expected: {
      kind: 'error',
      failure: 'servfail',
      message: 'MX lookup for servfail.route.test failed (servfail)',
    },
  },
  {
    name: 'the MX lookup timing out',
    domain: 'silent.route.test',
    zone: { 'silent.route.test': { silent: true } },
    expected: {
      kind: 'error',
      failure: 'timeout',
      message: 'MX lookup for silent.route.test failed (timeout)',
    },
  },
  {
    name: 'every MX host on loopback is unroutable',
    domain: 'loopback.route.test',
    zone: {
      'loopback.route.test': { MX: [mx(10, 'mx.loopback.route.test')] },
      'mx.loopback.route.test': { A: ['127.0.0.1'], AAAA: ['::1'] },
    },
    expected: {
      kind: 'unroutable',
      mx: [{ host: 'mx.loopback.route.test', preference: 10, ips: ['127.0.0.1', '::1'] }],
    },
  },
  {
    name: 'loopback is a route where the deployment allows private targets',
    domain: 'loopback.route.test',
    zone: {},
    allowPrivateTargets: true,
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.loopback.route.test', preference: 10, ips: ['127.0.0.1', '::1'] }],
    },
  },
  {
    name: 'private, link-local and mapped-private addresses dropped, public ones kept',
    domain: 'partial.route.test',
    zone: {
      'partial.route.test': { MX: [mx(10, 'mx1.partial.route.test'), mx(20, 'mx2.partial.route.test')] },
      'mx1.partial.route.test': { A: ['10.0.0.5', IP(70)], AAAA: ['fd00::5', '::ffff:192.168.0.1'] },
      'mx2.partial.route.test': { A: ['169.254.1.1'] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx1.partial.route.test', preference: 10, ips: [IP(70)] }],
    },
  },
  {
    name: 'an implicit MX on a private address is unroutable',
    domain: 'intranet.route.test',
    zone: { 'intranet.route.test': { A: ['192.168.1.10'] } },
    expected: {
      kind: 'unroutable',
      mx: [{ host: 'intranet.route.test', preference: 0, ips: ['192.168.1.10'] }],
    },
  },
  {
    name: 'a private host beside a failing one is a DNS error: the failing one may resolve next time',
    domain: 'privatefail.route.test',
    zone: {
      'privatefail.route.test': {
        MX: [mx(10, 'mx1.privatefail.route.test'), mx(20, 'mx2.privatefail.route.test')],
      },
      'mx1.privatefail.route.test': { A: ['10.1.1.1'] },
      'mx2.privatefail.route.test': { servfail: true },
    },
    expected: {
      kind: 'error',
      failure: 'servfail',
      message: 'A lookup for mx2.privatefail.route.test failed (servfail)',
    },
  },
  {
    name: 'at most 10 MX hosts are resolved',
    domain: 'many.route.test',
    zone: manyHosts,
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: Array.from({ length: 10 }, (_, index) => ({
        host: `mx${index}.many.route.test`,
        preference: index,
        ips: [IP(100 + index)],
      })),
    },
  },
  {
    name: 'at most 16 addresses per host, as the prober contract allows',
    domain: 'wide.route.test',
    zone: {
      'wide.route.test': { MX: [mx(10, 'mx.wide.route.test')] },
      'mx.wide.route.test': { A: manyAddresses, AAAA: [IP6(80)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.wide.route.test', preference: 10, ips: manyAddresses.slice(0, 16) }],
    },
  },
  {
    name: 'a domain that is an alias takes the MX of the name it points to',
    domain: 'alias.route.test',
    zone: {
      'alias.route.test': { CNAME: 'target.route.test' },
      'target.route.test': { MX: [mx(10, 'mx.target.route.test')] },
      'mx.target.route.test': { A: [IP(90)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.target.route.test', preference: 10, ips: [IP(90)] }],
    },
  },
  {
    name: 'an MX host that is an alias gets the addresses at the end of the chain',
    domain: 'mxalias.route.test',
    zone: {
      'mxalias.route.test': { MX: [mx(10, 'mx.mxalias.route.test')] },
      'mx.mxalias.route.test': { CNAME: 'real.mxalias.route.test' },
      'real.mxalias.route.test': { A: [IP(91)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'MX',
      mx: [{ host: 'mx.mxalias.route.test', preference: 10, ips: [IP(91)] }],
    },
  },
  {
    name: 'an alias without MX at its end: the implicit MX keeps the name that was asked',
    domain: 'webalias.route.test',
    zone: {
      'webalias.route.test': { CNAME: 'web.route.test' },
      'web.route.test': { A: [IP(92)] },
    },
    expected: {
      kind: 'mx',
      dnsType: 'A',
      mx: [{ host: 'webalias.route.test', preference: 0, ips: [IP(92)] }],
    },
  },
  {
    name: 'an alias to a name that does not exist',
    domain: 'brokenalias.route.test',
    zone: { 'brokenalias.route.test': { CNAME: 'nothing.route.test' } },
    expected: { kind: 'nxdomain' },
  },
];

/** Every case's records in one zone. */
export const MAIL_ROUTE_ZONE: Readonly<Record<string, ZoneEntry>> = Object.freeze(
  Object.assign({}, ...MAIL_ROUTE_CASES.map((routeCase) => routeCase.zone)),
);

/** The outcome with an error's message cut before the resolver's own words, which differ by adapter. */
export function comparableRoute(outcome: DnsOutcome): DnsOutcome {
  if (outcome.kind !== 'error') return outcome;
  const end = outcome.message.indexOf('): ');
  return { ...outcome, message: end === -1 ? outcome.message : outcome.message.slice(0, end + 1) };
}
