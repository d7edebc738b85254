// One address verified end to end: the mail route, an SMTP probe within the time budget, and
// the verdict on what they said. A pure sequence over injected dependencies, so the API (DNS over
// HTTPS, a probe through the ProberHub) and `rcpt-prober verify` (the system resolver, a probe
// from this machine) give the same verdict for the same world.
import type { VerificationResult } from '../contract/api.ts';
import type { ProbeRequest } from '../contract/prober.ts';
import type { TenantDetection } from '../dns/mail-tenant.ts';
import { within } from '../within.ts';
import type { DnsOutcome, ProbeOutcome, SyntaxResult, TenantProbe } from './inputs.ts';
import { type ProbeGateway, probeBehindGateway, type TenantDeps } from './probe-behind-gateway.ts';
import { verdictFromFacts } from './verdict.ts';

export type { ProbeGateway, TenantDeps } from './probe-behind-gateway.ts';

export interface VerifyDeps {
  /** The domain's mail route: `mailRoute` over the caller's DNS. */
  mailRoute: (domain: string) => Promise<DnsOutcome>;
  prober: ProbeGateway | null; // null: SMTP disabled for this deployment
  /** Asks the tenant behind a catch-all gateway MX; absent or null: the gateway's answer stands. */
  tenants?: TenantDeps | null;
  mailFrom: string;
  helo: string;
  /** The whole verification's budget, DNS and SMTP. */
  timeoutMs: number;
  /** How long the domain's greylisting held addresses back, as rcpt measured it (seconds), if known. */
  greylistDelay?: (domain: string) => Promise<number | null>;
  /** Ask the prober for the SMTP dialogue (the CLI prints it). */
  transcript?: boolean;
  /** The answer carries the evidence behind it (docs/verdicts.md, "Evidence"). */
  evidence?: boolean;
  now?: () => number;
}

/** The verdict, and the route and probe outcome it was computed from. */
export interface Verification {
  result: VerificationResult;
  dns: DnsOutcome | null;
  probe: ProbeOutcome;
  /** What tenant detection found, when the MX was a gateway that accepted every address. */
  tenantDetection: TenantDetection | null;
  /** The tenant's probe, when one was found. */
  tenant: TenantProbe | null;
  /**
   * The whole verification, when the caller's `answerBy` came first and `result` is what was
   * known then (`timeout_exceeded`, or a finding that needed no SMTP): it goes on within
   * `deps.timeoutMs`.
   */
  completion?: Promise<Verification>;
}

/**
 * Verifies `address` (as `checkSyntax` parsed it) over DNS and SMTP within `deps.timeoutMs`, and
 * turns what they said into the verdict (`verdictFromFacts`). With `answerBy` (ms on `deps.now`'s
 * clock), answers by then with what is known when the verification has not finished: the
 * caller's budget (docs/verdicts.md, "A time budget per call").
 */
export async function verifyAddress(
  deps: VerifyDeps,
  address: SyntaxResult,
  options: { answerBy?: number } = {},
): Promise<Verification> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const progress: Progress = { dns: null };
  const verification = verifyFully(deps, address, startedAt, progress);
  const { answerBy } = options;
  if (answerBy === undefined) return verification;
  const first = await within(verification, answerBy - now());
  if (first) return first;
  const probe: ProbeOutcome = { kind: 'over_budget' };
  const { result } = verdictFromFacts({
    address,
    dns: progress.dns,
    probe,
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: Math.max(0, now() - startedAt),
  });
  return { result, dns: progress.dns, probe, tenantDetection: null, tenant: null, completion: verification };
}

/** What a running verification has learnt so far: what an answer at the caller's budget says. */
interface Progress {
  dns: DnsOutcome | null;
}

async function verifyFully(
  deps: VerifyDeps,
  syntax: SyntaxResult,
  startedAt: number,
  progress: Progress,
): Promise<Verification> {
  const now = deps.now ?? Date.now;
  let dns: DnsOutcome | null = null;
  let probe: ProbeOutcome = { kind: 'skipped' };
  let tenantDetection: TenantDetection | null = null;
  let tenant: TenantProbe | null = null;

  if (syntax.valid && !syntax.ipLiteral) {
    dns = await deps.mailRoute(syntax.domain);
    progress.dns = dns;
    if (dns.kind === 'mx') {
      const remainingMs = deps.timeoutMs - (now() - startedAt);
      if (!deps.prober) probe = { kind: 'unavailable', message: 'SMTP probing is disabled' };
      // The budget went on DNS: rcpt did not get to run the SMTP check, which says nothing of
      // the mail server (`smtp_unavailable`, never kept as a verdict; docs/verdicts.md).
      else if (remainingMs <= 0)
        probe = { kind: 'unavailable', message: 'no time was left for the SMTP check' };
      else {
        const request: ProbeRequest = {
          emails: [syntax.email],
          domain: syntax.domain,
          mx: dns.mx,
          mailFrom: deps.mailFrom,
          helo: deps.helo,
          timeoutMs: remainingMs,
          transcript: deps.transcript ?? false,
          ...(deps.evidence ? { evidence: true } : {}),
        };
        // A gateway that accepted the address as a catch-all would: its tenant is asked too.
        ({ probe, tenantDetection, tenant } = await probeBehindGateway(
          { prober: deps.prober, tenants: deps.tenants ?? null, now },
          request,
          startedAt + deps.timeoutMs,
        ));
      }
    }
  }

  const greylistDelaySeconds =
    syntax.valid && probe.kind === 'report' && deps.greylistDelay
      ? await deps.greylistDelay(syntax.domain)
      : null;
  const { result } = verdictFromFacts({
    address: syntax,
    dns,
    probe,
    tenant,
    greylistDelaySeconds,
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: Math.max(0, now() - startedAt),
  });
  return { result, dns, probe, tenantDetection, tenant };
}
