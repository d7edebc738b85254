// Wires the verification pipeline's dependencies from the deployment's bindings and config.
import { hostRoute } from '@rcpt/shared/dns/mail-route';
import { detectTenant } from '@rcpt/shared/dns/mail-tenant';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import { type Config, proberRegionsOf } from '../../config.ts';
import { dohLookup, resolveMailRouteWithTtl } from '../../dns/mail-route.ts';
import { dohClientFor } from '../../dns/resolvers.ts';
import type { SubrequestBudget } from '../../dns/subrequest-budget.ts';
import type { Db } from '../../storage/db.ts';
import { regionsGateway } from '../fleet/prober-gateway.ts';
import { DomainFactsStore } from './domain-facts.ts';

/**
 * The shared domain facts, for one request or consumer batch, resolving over the deployment's
 * DNS (with `budget`, each DoH fetch counted against it).
 */
export function domainFactsOf(
  db: Db,
  config: Config,
  budget?: SubrequestBudget,
  facts: { snapshot?: boolean } = {},
): DomainFactsStore {
  const doh = dohClientFor(config, budget);
  const options = { allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS };
  return new DomainFactsStore({
    db,
    resolveRoute: (domain) => resolveMailRouteWithTtl(domain, { doh, ...options }),
    // Asked only for a catch-all MX that is no mailbox provider's own: a TXT lookup, the inbound
    // host's A and AAAA, and autodiscover only when the TXT records name no tenant (a few
    // subrequests).
    detectTenant: (domain, mxHosts) => detectTenant(domain, mxHosts, dohLookup(doh), options),
    resolveHost: (host) => hostRoute(host, dohLookup(doh), options),
    now: Date.now,
    snapshot: facts.snapshot ?? false,
  });
}

/**
 * How long a Worker goes on with work handed to `waitUntil` after its response
 * (developers.cloudflare.com/workers/runtime-apis/context/#waituntil: 30 seconds).
 */
const WAIT_UNTIL_MS = 30_000;

/**
 * The whole verification's budget for a call that answers within `answerWithinMs`: the
 * deployment's budget, or the caller's when it is longer, so a short answer never cuts the check
 * short — what finishes after the answer is kept for the next call — but never longer than the
 * Worker goes on after answering.
 */
export function verificationBudgetMs(config: Config, answerWithinMs: number): number {
  return Math.min(Math.max(config.VERIFY_TIMEOUT_MS, answerWithinMs), answerWithinMs + WAIT_UNTIL_MS);
}

/** Whom a single call probes for (a Caller is one). */
export interface ProbingCaller {
  accountId: string;
  ownProbersOnly?: boolean;
}

/**
 * The pipeline's dependencies for the caller's call: the mail route from the domain facts, probes
 * through the first region's hub that can take them (in the account's share, on its own probers
 * first: only on them with `ownProbersOnly`), which feed them.
 * `timeoutMs`: the whole verification's budget; default the deployment's.
 */
export function verifyDepsOf(
  env: Env,
  config: Config,
  facts: DomainFactsStore,
  caller: ProbingCaller,
  timeoutMs = config.VERIFY_TIMEOUT_MS,
): VerifyDeps {
  const hub = regionsGateway(
    env.PROBER_HUB,
    proberRegionsOf(config),
    caller.accountId,
    caller.ownProbersOnly ?? false,
  );
  return {
    mailRoute: (domain) => facts.mailRoute(domain),
    prober: config.SMTP_ENABLED ? facts.probing(hub) : null,
    // The tenant's answers go straight to the verdict: they are not the domain's catch-all fact.
    tenants: config.SMTP_ENABLED
      ? { detect: (domain, mxHosts) => facts.tenant(domain, mxHosts), prober: hub }
      : null,
    greylistDelay: (domain) => facts.greylistDelaySeconds(domain),
    mailFrom: config.MAIL_FROM,
    helo: config.HELO_NAME,
    timeoutMs,
  };
}
