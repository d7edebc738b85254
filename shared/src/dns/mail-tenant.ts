// The mail tenant behind a security gateway (docs/verdicts.md, "Catch-alls behind security
// gateways"): a company domain whose MX is Proofpoint, Mimecast, a self-hosted relay … in front
// of Microsoft 365 or Google Workspace. The gateway takes every RCPT, so a probe of it cannot
// tell a mailbox from a made-up one; the tenant's own inbound host answers per mailbox. The domain's DNS says which
// tenant it has (the signals of each provider, as data in the provider registry), and the derived
// inbound host must resolve before it is used. One algorithm for every caller: the edge asks over
// DNS over HTTPS, `rcpt-prober verify` over the system resolver, so both find the same tenant.
import type { MxTarget } from '../contract/prober.ts';
import { PROVIDER_REGISTRY, type ProviderRegistry, type TenantSignals } from '../verify/providers.ts';
import type { LookupOutcome, TenantLookup } from './lookup.ts';
import { hostRoute, type MailRouteOptions } from './mail-route.ts';

/** How long a detection (a tenant, or that there is none) is kept: as long as a mail route at most. */
export const TENANT_TTL_MS = 60 * 60 * 1000;

/** The mail tenant (Microsoft 365, Google Workspace) that a security gateway's domain delivers to. */
export interface MailTenant {
  /** The provider registry id of the tenant's provider. */
  provider: string;
  /** The tenant's own inbound host, which answers per mailbox. */
  inboundHost: string;
}

/** What the domain's own DNS shows: its TXT records and where `autodiscover.<domain>` points. */
export interface TenantEvidence {
  txt: readonly string[];
  /** The CNAME target of autodiscover.<domain>, or null when there is none (or it was not asked). */
  autodiscover: string | null;
}

/** A tenant the evidence names, and the first signal that named it. */
export interface TenantCandidate extends MailTenant {
  signal: string;
}

/**
 * What detection found. `error`: a lookup failed, so the answer may differ next time and is not
 * kept. `none` says why, for logs and the CLI.
 */
export type TenantDetection =
  | { kind: 'tenant'; tenant: MailTenant; signal: string; mx: MxTarget[] }
  | { kind: 'none'; why: string }
  | { kind: 'error'; message: string };

/**
 * Ids of the mailbox providers whose tenant may sit behind the MX of `domain` (with MX hosts
 * `mxHosts`), in the order they are tried, or null when there is no one behind it: the MX is a mailbox provider's own (Microsoft 365, Gmail,
 * Fastmail …: it answers per mailbox itself), or the domain is a provider's own. Behind a
 * gateway the registry names, the providers it fronts. Behind an MX the registry does not know —
 * a self-hosted or regional gateway — only the providers whose inbound host exists for their
 * tenants' domains alone: that the host resolves is the provider's own confirmation. A provider
 * with one inbound host for every domain (Google's aspmx.l.google.com) has none, and its signals
 * are common on domains whose mail it does not take (`google-site-verification=` is also Search
 * Console's), so behind an unknown MX it is not asked.
 */
export function tenantProvidersBehind(
  domain: string,
  mxHosts: readonly string[],
  registry: ProviderRegistry = PROVIDER_REGISTRY,
): readonly string[] | null {
  const match = registry.find(domain, mxHosts);
  if (match) return (match.by === 'mx' && match.provider.gateway?.fronts) || null;
  return registry.providers
    .filter((provider) => provider.tenant?.inbound.kind === 'from_domain')
    .map((provider) => provider.id);
}

/**
 * The tenants `evidence` names for `domain` among the providers `fronts`, in that order, each
 * provider once with the first signal that named it. Pure.
 */
export function tenantCandidates(
  domain: string,
  fronts: readonly string[],
  evidence: TenantEvidence,
  registry: ProviderRegistry = PROVIDER_REGISTRY,
): TenantCandidate[] {
  const name = normaliseName(domain);
  const includes = spfIncludes(evidence.txt);
  const records = evidence.txt.map((record) => record.trim().toLowerCase());
  const autodiscover = evidence.autodiscover === null ? null : normaliseName(evidence.autodiscover);
  const candidates: TenantCandidate[] = [];
  for (const id of fronts) {
    const signals = registry.byId(id)?.tenant;
    if (!signals) continue;
    const spf = signals.spfIncludes.find((target) => includes.includes(normaliseName(target)));
    const verification = signals.verificationTxtPrefixes.find((prefix) =>
      records.some((record) => record.startsWith(prefix.toLowerCase())),
    );
    const alias = signals.autodiscoverTargets.find((target) => autodiscover === normaliseName(target));
    const signal = spf
      ? `SPF include:${spf}`
      : verification
        ? `verification TXT ${verification}…`
        : alias
          ? `autodiscover CNAME ${alias}`
          : null;
    if (signal) candidates.push({ provider: id, inboundHost: inboundHostOf(name, signals), signal });
  }
  return candidates;
}

/** The tenant's inbound host for `domain` (lower-case A-labels), as the provider names it. */
export function inboundHostOf(domain: string, signals: TenantSignals): string {
  const { inbound } = signals;
  if (inbound.kind === 'fixed') return inbound.host;
  return `${normaliseName(domain).replaceAll('.', inbound.replaceDotsWith)}.${inbound.suffix}`;
}

/**
 * The tenant behind the MX of `domain` (a gateway, named by the registry or not: see
 * `tenantProvidersBehind`). Asks the domain's TXT records first (SPF and verification records are one
 * answer) and autodiscover only when they name no tenant whose host resolves, so a Worker spends
 * as few subrequests as it can; a candidate whose inbound host does not resolve is not the
 * domain's tenant (any more).
 */
export async function detectTenant(
  domain: string,
  mxHosts: readonly string[],
  lookup: TenantLookup,
  options: MailRouteOptions,
  registry: ProviderRegistry = PROVIDER_REGISTRY,
): Promise<TenantDetection> {
  const name = normaliseName(domain);
  const fronts = tenantProvidersBehind(name, mxHosts, registry);
  if (!fronts) return { kind: 'none', why: "the MX is a mailbox provider's own" };

  const txt = await lookup.txt(name);
  if (txt.kind === 'failure') return lookupError('TXT', name, txt);
  const evidence: TenantEvidence = { txt: txt.kind === 'answer' ? txt.records : [], autodiscover: null };
  const tried = new Set<string>();
  const fromTxt = await firstReachable(
    tenantCandidates(name, fronts, evidence, registry),
    tried,
    lookup,
    options,
  );
  if (fromTxt) return fromTxt;

  const autodiscoverName = `autodiscover.${name}`;
  const cname = await lookup.cname(autodiscoverName);
  if (cname.kind === 'failure') return lookupError('CNAME', autodiscoverName, cname);
  const target = cname.kind === 'answer' ? (cname.records[0] ?? null) : null;
  const fromAutodiscover = await firstReachable(
    tenantCandidates(name, fronts, { ...evidence, autodiscover: target }, registry),
    tried,
    lookup,
    options,
  );
  if (fromAutodiscover) return fromAutodiscover;
  if (tried.size === 0) {
    return {
      kind: 'none',
      why: `no ${fronts.join(' or ')} tenant signal in SPF, TXT or autodiscover`,
    };
  }
  return { kind: 'none', why: `the tenant's inbound host does not resolve: ${[...tried].join(', ')}` };
}

/** The first candidate not tried yet whose inbound host resolves; a lookup failure is an error. */
async function firstReachable(
  candidates: readonly TenantCandidate[],
  tried: Set<string>,
  lookup: TenantLookup,
  options: MailRouteOptions,
): Promise<TenantDetection | null> {
  for (const { signal, ...tenant } of candidates) {
    if (tried.has(tenant.inboundHost)) continue;
    tried.add(tenant.inboundHost);
    const route = await hostRoute(tenant.inboundHost, lookup, options);
    if (route.kind === 'mx') return { kind: 'tenant', tenant, signal, mx: route.mx };
    if (route.kind === 'error') return { kind: 'error', message: route.message };
  }
  return null;
}

/** The `include:` targets of the domain's SPF records (RFC 7208 §4.5, §5.2), lower-case. */
function spfIncludes(txt: readonly string[]): string[] {
  return txt
    .map((record) => record.trim().toLowerCase().split(/\s+/))
    .filter((terms) => terms[0] === 'v=spf1')
    .flatMap((terms) => terms.slice(1))
    .map((term) => /^[+?~-]?include:(.+)$/.exec(term)?.[1])
    .filter((target): target is string => target !== undefined)
    .map(normaliseName);
}

function lookupError(
  type: string,
  name: string,
  outcome: LookupOutcome<string> & { kind: 'failure' },
): TenantDetection {
  return {
    kind: 'error',
    message: `${type} lookup for ${name} failed (${outcome.failure}): ${outcome.detail}`,
  };
}

/** Lower-case, without the trailing dot. */
function normaliseName(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, '');
}
