// One address verified end to end: syntax, the mail route, an SMTP probe within the time
// budget, and the assessment. A pure sequence over injected dependencies, so the API (DNS over
// HTTPS, a probe through the ProberHub) and `rcpt-prober verify` (the system resolver, a probe
// from this machine) give the same verdict for the same world.
import type { VerificationResult } from '../contract/api.ts';
import type { ProbeRequest } from '../contract/prober.ts';
import type { TenantDetection } from '../dns/mail-tenant.ts';
import { assessAddress } from './assess.ts';
import type { DnsOutcome, ProbeOutcome, TenantProbe } from './inputs.ts';
import { type ProbeGateway, probeBehindGateway, type TenantDeps } from './probe-behind-gateway.ts';
import { checkSyntax } from './syntax.ts';

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
}

export async function verifyAddress(deps: VerifyDeps, email: string): Promise<Verification> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const syntax = checkSyntax(email);
  let dns: DnsOutcome | null = null;
  let probe: ProbeOutcome = { kind: 'skipped' };
  let tenantDetection: TenantDetection | null = null;
  let tenant: TenantProbe | null = null;

  if (syntax.valid && !syntax.ipLiteral) {
    dns = await deps.mailRoute(syntax.domain);
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
  const result = assessAddress({
    email,
    dns,
    probe,
    tenant,
    greylistDelaySeconds,
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: Math.max(0, now() - startedAt),
  });
  return { result, dns, probe, tenantDetection, tenant };
}
