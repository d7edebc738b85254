// One address from raw input to verdict, given what DNS and SMTP said: the local checks
// (syntax, lists with the MX hosts, typo) and the verdict, in the one order every caller
// needs — single verification, the batch consumer, the sandbox, upload planning, the CLI.
import type { VerificationResult } from '../contract/api.ts';
import type { DnsOutcome, ListFacts, ProbeOutcome, TenantProbe } from './inputs.ts';
import { lookupLists } from './lists.ts';
import { providerFamilyOf } from './providers.ts';
import { checkSyntax } from './syntax.ts';
import { suggestTypo } from './typo.ts';
import { decideVerdict, type Verdict } from './verdict.ts';

export const NO_LIST_FACTS: ListFacts = Object.freeze({
  isDisposable: false,
  isRoleBased: false,
  isFreeProvider: false,
  provider: null,
});

export interface Assessment {
  email: string;
  /** The mail route, or null when it was not resolved (invalid syntax, IP literal). */
  dns: DnsOutcome | null;
  probe: ProbeOutcome;
  /** The tenant behind a catch-all gateway MX and its probe, when one was asked. */
  tenant?: TenantProbe | null;
  /** A test key's fixed answer. */
  sandbox?: boolean;
  /** How long the domain's greylisting held addresses back, as rcpt measured it (seconds). */
  greylistDelaySeconds?: number | null;
  verifiedAt: string;
  processingTimeMs: number;
}

export function assessAddress(assessment: Assessment): VerificationResult {
  return assessVerdict(assessment).result;
}

/** `assessAddress` with what a batch does with the answer: ask again (how), refund if final. */
export function assessVerdict(assessment: Assessment): Verdict {
  const email = assessment.email.trim();
  const syntax = checkSyntax(email);
  // The MX hosts name the provider for custom domains (Google Workspace, Microsoft 365, …).
  const mxHosts = assessment.dns?.kind === 'mx' ? assessment.dns.mx.map((mx) => mx.host) : [];
  return decideVerdict({
    email,
    syntax,
    lists: syntax.valid
      ? {
          ...lookupLists(syntax.localPart, syntax.domain),
          provider: providerFamilyOf(syntax.domain, mxHosts),
        }
      : NO_LIST_FACTS,
    typo: syntax.valid && !syntax.ipLiteral ? suggestTypo(syntax.domain) : null,
    dns: assessment.dns,
    probe: assessment.probe,
    tenant: assessment.tenant ?? null,
    sandbox: assessment.sandbox ?? false,
    greylistDelaySeconds: assessment.greylistDelaySeconds ?? null,
    verifiedAt: assessment.verifiedAt,
    processingTimeMs: assessment.processingTimeMs,
  });
}
