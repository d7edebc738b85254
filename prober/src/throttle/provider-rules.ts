// Provider rules: what the prober knows about big mail providers, as data an operator can edit
// (PROVIDER_RULES, default prober/provider-rules.json). Some providers answer 250 to every
// RCPT and bounce later, so a probe says nothing about their mailboxes and only costs
// reputation; some want fewer parallel sessions than the per-host default.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';

// A host pattern: an exact name ("yahoo.com") or "*." and a suffix ("*.yahoodns.net"), which
// matches names below the suffix but not the suffix itself, as a TLS wildcard would.
const HostPattern = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^(?:\*\.)?[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?\.?$/,
    'must be a host name, optionally starting with "*."',
  );

export const ProviderRule = z.strictObject({
  /** The provider's name: in logs, and the key of its concurrency limit. */
  name: z.string().trim().min(1).max(64),
  comment: z.string().optional(),
  /** Mail domains of the provider (the part after @). */
  domains: z.array(HostPattern).default([]),
  /** MX host names of the provider, for the many domains it hosts under their own names. */
  mxHosts: z.array(HostPattern).default([]),
  /** The provider accepts every RCPT: probes answer `provider_unverifiable` without connecting. */
  acceptsEverything: z.boolean().default(false),
  /** Sessions open at once to all of the provider's MX hosts together. */
  maxSessions: z.number().int().min(1).max(1_000).optional(),
});
export type ProviderRule = z.infer<typeof ProviderRule>;

export const ProviderRules = z.strictObject({
  comment: z.string().optional(),
  providers: z.array(ProviderRule),
});
/** The parsed rules file. Plain data, so it can be passed around and compared in tests. */
export type ProviderRules = z.infer<typeof ProviderRules>;

/** Validates a parsed rules file; throws an Error naming every bad field. */
export function parseProviderRules(value: unknown): ProviderRules {
  const parsed = ProviderRules.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'rules'}: ${issue.message}`);
  throw new Error(`invalid provider rules: ${problems.join('; ')}`);
}

/** Reads and validates the rules file at `path`. Throws with the path in the message. */
export async function loadProviderRules(path: string): Promise<ProviderRules> {
  const text = await readFile(path, 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    return parseProviderRules(json);
  } catch (error) {
    throw new Error(`${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * The provider a probe of `domain` via `mxHosts` talks to: the first rule matching the domain
 * or any of the MX host names, or null.
 */
export function findProvider(
  rules: ProviderRules | undefined,
  domain: string,
  mxHosts: readonly string[],
): ProviderRule | null {
  if (!rules) return null;
  const domainName = normalise(domain);
  const hostNames = mxHosts.map(normalise);
  for (const provider of rules.providers) {
    if ((provider.domains ?? []).some((pattern) => matchesHost(pattern, domainName))) return provider;
    const mxPatterns = provider.mxHosts ?? [];
    if (hostNames.some((host) => mxPatterns.some((pattern) => matchesHost(pattern, host)))) return provider;
  }
  return null;
}

/** The per-provider session limits the rules set, for `new MxThrottle({ providerLimits })`. */
export function providerLimitsOf(rules: ProviderRules | undefined): Map<string, number> {
  const limits = new Map<string, number>();
  for (const provider of rules?.providers ?? []) {
    if (provider.maxSessions !== undefined) limits.set(provider.name, provider.maxSessions);
  }
  return limits;
}

function matchesHost(pattern: string, host: string): boolean {
  const name = normalise(pattern);
  if (!name.startsWith('*.')) return host === name;
  return host.endsWith(name.slice(1)) && host.length > name.length - 1;
}

// DNS names compare case-insensitively (RFC 4343), and a final dot only marks them absolute.
function normalise(host: string): string {
  return host.trim().toLowerCase().replace(/\.$/, '');
}
