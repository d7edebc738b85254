// Single verification: DNS over HTTPS, an SMTP probe through the hub, and the shared
// assessment. A pure sequence over injected dependencies: no Hono context, no bindings.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { assessAddress } from '@rcpt/shared/verify/assess';
import type { DnsOutcome, ProbeOutcome } from '@rcpt/shared/verify/inputs';
import { checkSyntax } from '@rcpt/shared/verify/syntax';

/** Something that can run an SMTP probe within a deadline (the ProberHub, or a test double). */
export interface ProbeGateway {
  probe(request: ProbeRequest, deadlineMs: number): Promise<ProbeOutcome>;
}

export interface VerifyDeps {
  resolveMailRoute: (domain: string) => Promise<DnsOutcome>;
  prober: ProbeGateway | null; // null: SMTP disabled for this deployment
  mailFrom: string;
  helo: string;
  timeoutMs: number;
  now?: () => number;
}

export async function verifyEmail(deps: VerifyDeps, email: string): Promise<VerificationResult> {
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const syntax = checkSyntax(email);
  let dns: DnsOutcome | null = null;
  let probe: ProbeOutcome = { kind: 'skipped' };

  if (syntax.valid && !syntax.ipLiteral) {
    dns = await deps.resolveMailRoute(syntax.domain);
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
            transcript: false,
          },
          remainingMs,
        );
      }
    }
  }

  return assessAddress({
    email,
    dns,
    probe,
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: Math.max(0, now() - startedAt),
  });
}
