// What a verdict is computed from, as plain data: the parsed address, what DNS and SMTP said
// (over DNS over HTTPS and a probe through the hub, or the prober's own), and the local checks;
// `verdictFromFacts` turns them into a result.
import type { MxTarget, ProbeReport } from '../contract/prober.ts';
import type { DnsFailureKind } from '../dns/lookup.ts';

/**
 * The mail route DNS gave for a domain (RFC 5321 §5.1, RFC 7505), as `mailRoute` finds it:
 * `mx` lists hosts in the order they are to be tried.
 */
export type DnsOutcome =
  | { kind: 'mx'; dnsType: 'MX' | 'A' | 'AAAA'; mx: MxTarget[] } // explicit MX, or implicit MX from A/AAAA
  | { kind: 'null_mx' } // "MX 0 ." — the domain accepts no mail
  | { kind: 'no_mail_route' } // the domain exists but has neither MX nor A/AAAA
  | { kind: 'nxdomain' } // the domain does not exist
  | { kind: 'unroutable'; mx: MxTarget[] } // every MX resolves only to private/loopback/reserved addresses
  | { kind: 'error'; failure?: DnsFailureKind; message: string }; // SERVFAIL, timeout, or no resolver answered

/** What the SMTP step gave. */
export type ProbeOutcome =
  | { kind: 'report'; report: ProbeReport }
  // No prober connected, or SMTP disabled. `passedOn`: its region lost its last prober while it
  // waited there, and the next region can take it now (a batch asks again at once).
  | { kind: 'unavailable'; message: string; passedOn?: true }
  // The mail server took the whole budget (the sandbox's stand-in for a tarpit). rcpt's own
  // lateness — no prober in time, a prober that did not answer, the budget spent on DNS — is
  // `unavailable`: it says nothing about the server and is never kept as a verdict.
  | { kind: 'timeout' }
  // The caller's time budget (`timeoutMs`) ran out first: the answer is given without the
  // mailbox's, and the check goes on for the next call (docs/verdicts.md, "A time budget per call").
  | { kind: 'over_budget' }
  | { kind: 'skipped' }; // not attempted: syntax or DNS already decided

/**
 * The mail tenant behind the domain's catch-all security gateway and what a probe of its own
 * inbound host gave (shared/src/dns/mail-tenant.ts finds it).
 */
export interface TenantProbe {
  /** The provider registry id of the tenant's provider (microsoft, google). */
  provider: string;
  inboundHost: string;
  probe: ProbeOutcome;
}

/**
 * `checkSyntax`'s answer: the parsed address every later step takes (parse once, pass it on).
 * The domain is lower-cased and in A-label (punycode) form.
 */
export type SyntaxResult =
  | {
      valid: true;
      /** The address as it was given, trimmed: what a result names. */
      given: string;
      email: string; // normalised: trimmed, domain lower-cased A-labels, local part's case kept
      localPart: string;
      domain: string;
      quotedLocalPart: boolean; // valid, but a risk factor
      ipLiteral: boolean; // e.g. user@[192.0.2.1]: valid, not verifiable
      needsSmtpUtf8: boolean; // non-ASCII local part (RFC 6531)
    }
  | {
      valid: false;
      given: string;
      email: string; // the input, trimmed
      localPart: string; // best effort split at the last '@' ('' if none)
      domain: string;
      reason: string; // plain English: why the address is not valid
    };

/** What the maintained lists say about an address. */
export interface ListFacts {
  isDisposable: boolean;
  isRoleBased: boolean;
  isFreeProvider: boolean;
  /** Mailbox provider family by domain or MX host (gmail, microsoft, yahoo, …), or null. */
  provider: string | null;
}
