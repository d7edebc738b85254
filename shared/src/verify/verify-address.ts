// One address verified end to end: syntax, the mail route, an SMTP probe within the time
// budget, and the assessment. A pure sequence over injected dependencies, so the API (DNS over
// HTTPS, a probe through the ProberHub) and `rcpt-prober verify` (the system resolver, a probe
// from this machine) give the same verdict for the same world.
import type { VerificationResult } from '../contract/api.ts';
import type { ProbeRequest } from '../contract/prober.ts';
import { assessAddress } from './assess.ts';
import type { DnsOutcome, ProbeOutcome } from './inputs.ts';
import { checkSyntax } from './syntax.ts';

/** Something that can run an SMTP probe within a deadline (the ProberHub, the prober's engine, a test double). */
export interface ProbeGateway {
  probe(request: ProbeRequest, deadlineMs: number): Promise<ProbeOutcome>;
}

export interface VerifyDeps {
  /** The domain's mail route: `mailRoute` over the caller's DNS. */
  mailRoute: (domain: string) => Promise<DnsOutcome>;
  prober: ProbeGateway | null; // null: SMTP disabled for this deployment
  mailFrom: string;
  helo: string;
  /** The whole verification's budget, DNS and SMTP. */
  timeoutMs: number;
  /** Ask the prober for the SMTP dialogue (the CLI prints it). */
  transcript?: boolean;
  now?: () => number;
}

/** The verdict, and the route and probe outcome it was computed from. */
export interface Verification {
  result: VerificationResult;
  dns: DnsOutcome | null;
  probe: ProbeOutcome;
}

export async function verifyAddress(deps: VerifyDeps, email: string): Promise<Verification> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const syntax = checkSyntax(email);
  let dns: DnsOutcome | null = null;
  let probe: ProbeOutcome = { kind: 'skipped' };

  if (syntax.valid && !syntax.ipLiteral) {
    dns = await deps.mailRoute(syntax.domain);
    if (dns.kind === 'mx') {
      const remainingMs = deps.timeoutMs - (now() - startedAt);
      if (!deps.prober) probe = { kind: 'unavailable', message: 'SMTP probing is disabled' };
      else if (remainingMs <= 0) probe = { kind: 'timeout' };
      else {
        probe = await deps.prober.probe(
          {
            emails: [syntax.email],
            domain: syntax.domain,
            mx: dns.mx,
            mailFrom: deps.mailFrom,
            helo: deps.helo,
            timeoutMs: remainingMs,
            transcript: deps.transcript ?? false,
          },
          remainingMs,
        );
      }
    }
  }

  const result = assessAddress({
    email,
    dns,
    probe,
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: Math.max(0, now() - startedAt),
  });
  return { result, dns, probe };
}
