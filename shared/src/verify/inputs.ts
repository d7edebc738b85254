// What a verdict is computed from, as plain data: the edge gathers these (syntax, lists,
// typo, DNS over HTTPS, a probe through the hub) and `computeVerdict` turns them into a result.
import type { MxTarget, ProbeReport } from '../contract/prober.ts';

/** The mail route DNS gave for a domain (RFC 5321 §5.1, RFC 7505). */
export type DnsOutcome =
  | { kind: 'mx'; dnsType: 'MX' | 'A' | 'AAAA'; mx: MxTarget[] } // explicit MX, or implicit MX from A/AAAA
  | { kind: 'null_mx' } // "MX 0 ." — the domain accepts no mail
  | { kind: 'no_mail_route' } // the domain exists but has neither MX nor A/AAAA
  | { kind: 'nxdomain' } // the domain does not exist
  | { kind: 'unroutable'; mx: MxTarget[] } // every MX resolves only to private/loopback/reserved addresses
  | { kind: 'error'; message: string }; // SERVFAIL, timeout, or no resolver answered

/** What the SMTP step gave. */
export type ProbeOutcome =
  | { kind: 'report'; report: ProbeReport }
  | { kind: 'unavailable'; message: string } // no prober connected, or SMTP disabled
  | { kind: 'timeout' } // the time budget ran out waiting for the prober
  | { kind: 'skipped' }; // not attempted: syntax or DNS already decided
