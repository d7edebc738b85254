// "Probe, then ask the tenant behind a gateway": the one sequence every caller runs — the single
// call and `rcpt-prober verify` (through verifyAddress) and each batch probe (through the hub).
// A security gateway (Proofpoint, Mimecast, a self-hosted relay …) that accepted an address and a
// made-up one says nothing of the mailbox; the tenant behind it (Microsoft 365, Google Workspace), found from
// DNS, answers per mailbox (docs/verdicts.md, "Catch-alls behind security gateways").
import type { ProbeRequest } from '../contract/prober.ts';
import { type TenantDetection, tenantProvidersBehind } from '../dns/mail-tenant.ts';
import type { ProbeOutcome, TenantProbe } from './inputs.ts';
import { acceptedByCatchAll } from './verdict.ts';

/** Something that can run an SMTP probe within a deadline (the ProberHub, the prober's engine, a test double). */
export interface ProbeGateway {
  probe(request: ProbeRequest, deadlineMs: number): Promise<ProbeOutcome>;
}

/** How the tenant behind a catch-all security gateway is found and asked (docs/verdicts.md). */
export interface TenantDeps {
  /** The tenant behind the catch-all MX of `domain`, whose MX hosts are `mxHosts`. */
  detect(domain: string, mxHosts: readonly string[]): Promise<TenantDetection>;
  /**
   * Probes the tenant's inbound host. Its answers are the tenant's, not the domain's MX's: they
   * must not be recorded as the domain's catch-all answer.
   */
  prober: ProbeGateway;
}

/** What a probe of the domain's MX, and of the tenant behind it when there was one to ask, answered. */
export interface GatewayProbe {
  probe: ProbeOutcome;
  /** What tenant detection found, when the MX was a gateway that accepted an address as a catch-all would. */
  tenantDetection: TenantDetection | null;
  /** The tenant's probe, when one was found and there was time to ask it. */
  tenant: TenantProbe | null;
}

// The prober contract's least timeoutMs: a probe with less left is not asked.
const MIN_PROBE_MS = 100;

/**
 * Probes `request` through `prober` by `deadlineAt` (ms on `now`'s clock); when the MX, a
 * gateway the registry names or one it does not know, accepted one of the addresses as a
 * catch-all would, finds the tenant and asks it the same addresses with what is left. A failed detection leaves the gateway's answer.
 */
export async function probeBehindGateway(
  deps: { prober: ProbeGateway; tenants: TenantDeps | null; now?: () => number },
  request: ProbeRequest,
  deadlineAt: number,
): Promise<GatewayProbe> {
  const now = deps.now ?? Date.now;
  const probe = await deps.prober.probe(request, deadlineAt - now());
  const mxHosts = request.mx.map((mx) => mx.host);
  // The MX's behaviour decides, not its name: any MX that took a made-up address as well may be
  // a gateway (the registry names only the hosted ones); the domain's DNS then says whether a
  // tenant is behind it. An MX that is a mailbox provider's own has nobody behind it.
  if (
    !deps.tenants ||
    probe.kind !== 'report' ||
    !tenantProvidersBehind(request.domain, mxHosts) ||
    !request.emails.some((email) => acceptedByCatchAll(probe.report, [email]))
  ) {
    return { probe, tenantDetection: null, tenant: null };
  }
  const tenantDetection = await deps.tenants
    .detect(request.domain, mxHosts)
    .catch((error: unknown): TenantDetection => ({ kind: 'error', message: String(error) }));
  const leftMs = deadlineAt - now();
  if (tenantDetection.kind !== 'tenant' || leftMs < MIN_PROBE_MS)
    return { probe, tenantDetection, tenant: null };
  const { tenant: found, mx } = tenantDetection;
  const tenantRequest: ProbeRequest = { ...request, mx, timeoutMs: Math.min(request.timeoutMs, leftMs) };
  return {
    probe,
    tenantDetection,
    tenant: { ...found, probe: await deps.tenants.prober.probe(tenantRequest, leftMs) },
  };
}
