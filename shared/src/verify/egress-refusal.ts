// Where an egress's block applies, and what a probe answers when every egress is blocked there
// (docs/operations.md, "Egress addresses"). The prober keeps its blocks by these scopes and
// answers from them; the hub reads the blocks probers report by the same scopes, to pass a probe
// that no egress of its region can send to the next region.
import type {
  AddressOutcome,
  ProbeReport,
  ProbeRequest,
  SessionFacts,
  SmtpReply,
} from '../contract/prober.ts';
import { PROVIDER_REGISTRY, type ProviderRegistry } from './providers.ts';

/** What an egress is blocked at: a provider of the registry (all its MX hosts) or one MX host. */
export interface BlockScope {
  kind: 'provider' | 'mx_host';
  /** The provider's id, or the MX host's name (lower-case). */
  name: string;
}

/**
 * The scope a block learned from a probe of `request` applies to: the whole provider when the
 * registry names one (its MX hosts share their block lists), else the MX host the session
 * reached, or before any session the most preferred one.
 */
export function blockScopeOf(
  request: Pick<ProbeRequest, 'domain' | 'mx'>,
  reachedHost: string | null = null,
  registry: ProviderRegistry = PROVIDER_REGISTRY,
): BlockScope {
  const provider = registry.find(
    request.domain,
    request.mx.map((mx) => mx.host),
  )?.provider;
  if (provider) return { kind: 'provider', name: provider.id };
  const firstHost = [...request.mx].sort((a, b) => a.preference - b.preference)[0]?.host ?? request.domain;
  return { kind: 'mx_host', name: (reachedHost ?? firstHost).toLowerCase() };
}

/** The facts of a report no session stands behind (every egress blocked, or over budget). */
export const NO_SESSION: SessionFacts = Object.freeze({
  mxHost: null,
  mxIp: null,
  tls: false,
  tlsError: null,
  smtputf8: false,
  durationMs: 0,
});

/** An address no egress could ask at `where`: refused at connect by `reply`, the block's evidence. */
export function blockedOutcome(email: string, reply: SmtpReply | null, where: string): AddressOutcome {
  return {
    email,
    reply: null,
    failure: {
      kind: 'rejected',
      stage: 'connect',
      reply,
      message: `every egress is blocked at ${where}`,
    },
  };
}

/** The report of a probe whose every address no egress could ask: blocked everywhere at `where`. */
export function blockedReport(
  emails: readonly string[],
  reply: SmtpReply | null,
  where: string,
): ProbeReport {
  return {
    perAddress: emails.map((email) => blockedOutcome(email, reply, where)),
    catchAllReply: null,
    session: NO_SESSION,
    egressesRefused: true,
  };
}
