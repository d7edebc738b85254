// The verdict: a pure, deterministic and total function from the facts gathered about an
// address (the parsed address, DNS, the probe; the lists and typo follow from them) to the API's
// VerificationResult and what a batch does with it (docs/verdicts.md). `verdictFromFacts` is the
// one way in; `verifyAddress` (verify-address.ts) gathers the facts over DNS and SMTP first. The precedence, first decision wins:
//
//   1. Syntax: invalid → undeliverable/invalid_syntax. An IP literal is valid but cannot be
//      verified (no DNS, and probing a literal address is refused) → unknown/provider_unverifiable.
//   2. DNS: nxdomain → undeliverable/possible_typo when a typo is suggested, else invalid_domain;
//      no MX nor A/AAAA → no_mx_record; null MX (RFC 7505) → does_not_accept_mail; MX only on
//      private addresses → unroutable_ip_address; resolver failure → unknown/dns_error.
//   3. SMTP, for the address's own RCPT answer:
//      a. a mailbox code (unknown, disabled, malformed) → undeliverable; a full mailbox → risky;
//         a guard refusal → undeliverable/unroutable_ip_address;
//      b. accepted → possible_spamtrap › toxic › disposable › catch_all › role_based ›
//         possible_typo › accepted_email (disposable providers accept every address, so a
//         disposable domain is nearly always catch-all too: "disposable" is the finding that
//         matters; catch-all stays in checks.isCatchAll and riskFactors);
//      c. no usable answer (probe unavailable, timeout, session failure, greylisting, policy
//         block, temporary error): facts that need no SMTP decide if any apply —
//         possible_spamtrap › toxic › disposable › possible_typo — since the domain is known to
//         receive mail and the address is risky whatever its mailbox says; otherwise the SMTP
//         reason stands (unknown/…). A role address needs an accepting mailbox to be role_based.
//   A catch-all security gateway (Proofpoint, Mimecast, …) in front of a Microsoft 365 or Google
//   Workspace tenant: when the gateway accepted the address and its made-up one, the tenant's own
//   inbound host decides in its place if it gave a mailbox answer (accepted while refusing a
//   made-up address, or a mailbox code); `isCatchAll` stays true, for the gateway, and
//   `meta.verifiedVia` says `tenant`. A tenant that refused the check, or none, leaves 3b's
//   catch_all.
//   A typo domain that the disposable lists carry is a typo, not disposable (see verdictOf).
import {
  Meta,
  SUB_STATUSES,
  type SubStatus,
  type TypoSuggestion,
  type VerificationResult,
  type VerificationStatus,
} from '../contract/api.ts';
import type { AddressOutcome, Evidence, ProbeReport, SessionFailure } from '../contract/prober.ts';
import { type OutcomePolicy, policyOf, SUB_STATUS_TABLE } from '../contract/sub-statuses.ts';
import { catchAllReading } from './catch-all.ts';
import { sealEvidence } from './evidence.ts';
import type { DnsOutcome, ListFacts, ProbeOutcome, SyntaxResult, TenantProbe } from './inputs.ts';
import { lookupLists } from './lists.ts';
import { providerFamilyOf } from './providers.ts';
import { scoreVerdict } from './score.ts';
import { classifyReply, replyStageOf } from './smtp-reply.ts';
import { subaddressUser } from './subaddress.ts';
import { suggestTypo } from './typo.ts';

/** What DNS and SMTP said about a parsed address: all `verdictFromFacts` needs. */
export interface VerdictFacts {
  /** The address as `checkSyntax` parsed it, once, for every step. */
  address: SyntaxResult;
  /** null: not resolved (invalid syntax, an IP literal, or the caller's budget ran out first). */
  dns: DnsOutcome | null;
  probe: ProbeOutcome;
  /** The tenant behind a catch-all gateway MX and its probe, when one was asked. */
  tenant?: TenantProbe | null;
  /** A test key's fixed answer (edge/src/services/verify/sandbox.ts): `meta.verifiedVia` says so. */
  sandbox?: boolean;
  /** How long the domain's greylisting held addresses back, as rcpt measured it (seconds). */
  greylistDelaySeconds?: number | null;
  /** ISO 8601 instant. */
  verifiedAt: string;
  processingTimeMs: number;
}

/** The facts with the local checks that follow from the address and its MX hosts. */
interface VerdictInput extends VerdictFacts {
  lists: ListFacts;
  typo: TypoSuggestion | null;
}

export const NO_LIST_FACTS: ListFacts = Object.freeze({
  isDisposable: false,
  isRoleBased: false,
  isFreeProvider: false,
  provider: null,
});

/** The plain-English risk factors a result can carry. */
export const RISK_FACTORS = {
  spamtrap: 'Local part looks like a spam trap',
  roleBased: 'Role-based address: it usually reaches a team or a list, not one person',
  catchAll: 'Catch-all domain: the server accepts any address, so this mailbox is not confirmed',
  disposable: 'Disposable (temporary) email provider',
  freeProvider: 'Free email provider',
  quotedLocalPart: 'Quoted local part, which many systems do not accept',
  needsSmtpUtf8: 'Internationalised local part: needs a mail server with SMTPUTF8 (RFC 6531)',
  ipLiteral: 'IP address instead of a domain: the mailbox cannot be verified',
  typo: (suggested: string) => `Domain looks like a typo of ${suggested}`,
  typoSquatting: 'Domain is on disposable-address lists, which also carry domains that catch mistyped mail',
  greylisted: 'Greylisted: the mail server asked to try again later',
} as const;

// Obvious trap names published on web pages to catch address harvesters. Real traps are often
// random-looking and cannot be recognised by name; these can.
const SPAMTRAP_WORDS = /spam[-._]?trap|honey[-._]?pot|honey[-._]?trap|spam[-._]?bait/;
const SPAMTRAP_NAMES = /^(trap|blackhole|bait)[-._]?\d*$/;
// RFC 2142 §2, §5: abuse@, postmaster@, noc@ and security@ are where complaints go; mailing
// them invites a report.
const COMPLAINT_DESKS = new Set(['abuse', 'postmaster', 'spam', 'noc', 'security']);
/** At this toxicity an address that is not a trap by name is `toxic`. */
const TOXIC_THRESHOLD = 4;

function localPartName(localPart: string): string {
  return subaddressUser(localPart.toLowerCase().replace(/^"|"$/g, ''));
}

function looksLikeSpamtrap(localPart: string): boolean {
  const name = localPartName(localPart);
  return SPAMTRAP_WORDS.test(name) || SPAMTRAP_NAMES.test(name);
}

/**
 * Toxicity 0–5: min(5, 1·role + 2·disposable + 2·complaint desk + 3·trap-like name).
 * 0 is a clean personal address; 5 a trap name on a disposable domain or abuse@ on one.
 */
export function toxicityOf(localPart: string, lists: ListFacts): number {
  const points =
    (lists.isRoleBased ? 1 : 0) +
    (lists.isDisposable ? 2 : 0) +
    (COMPLAINT_DESKS.has(localPartName(localPart)) ? 2 : 0) +
    (looksLikeSpamtrap(localPart) ? 3 : 0);
  return Math.min(5, points);
}

/** What the SMTP step said about the address, and what a batch does with that answer. */
interface SmtpAnswer {
  subStatus: SubStatus;
  accepted: boolean;
  rejectsMailbox: boolean;
  policy: OutcomePolicy;
}

/** An answer that is not a reply: the subStatus's row decides the policy. */
function noReply(subStatus: SubStatus, policy = policyOf(subStatus)): SmtpAnswer {
  return { subStatus, accepted: false, rejectsMailbox: false, policy };
}

const NO_ANSWER = noReply('smtp_unavailable');

const FAILURE_SUB_STATUSES: Record<Exclude<SessionFailure['kind'], 'rejected'>, SubStatus> = {
  connection_failed: 'smtp_connection_failed',
  timeout: 'smtp_timeout',
  disconnected: 'forcible_disconnect',
  invalid_response: 'invalid_smtp_response',
  // Required TLS that could not be had is a connection we could not make.
  tls_failed: 'smtp_connection_failed',
  smtputf8_unsupported: 'provider_unverifiable',
  target_refused: 'unroutable_ip_address',
  provider_unverifiable: 'provider_unverifiable',
  throttled: 'mail_server_temporary_error',
};

function failureAnswer(failure: SessionFailure): SmtpAnswer {
  if (failure.kind === 'throttled') {
    // The prober is backing off the host on its own: ask again on the slow schedule.
    return noReply(FAILURE_SUB_STATUSES.throttled, {
      ...policyOf(FAILURE_SUB_STATUSES.throttled),
      retry: 'throttle',
    });
  }
  if (failure.kind !== 'rejected') return noReply(FAILURE_SUB_STATUSES[failure.kind]);
  // A refusal reported without its reply breaks the prober contract: our fault, not the server's.
  if (!failure.reply) return noReply('internal_error');
  const classified = classifyReply(failure.reply, replyStageOf(failure.stage));
  // A "refusal" whose reply is 2xx contradicts itself.
  if (classified.accepted) return noReply('invalid_smtp_response');
  return {
    subStatus: classified.subStatus,
    accepted: false,
    rejectsMailbox: classified.rejectsMailbox,
    policy: classified.policy,
  };
}

/** The subStatus a session failure stands for when it kept an address from its RCPT answer. */
export function failureSubStatus(failure: SessionFailure): SubStatus {
  return failureAnswer(failure).subStatus;
}

export { catchAllReading };

/** true: a random address was accepted; false: it was rejected with a mailbox code; null: could not tell. */
export function catchAllState(report: ProbeReport): boolean | null {
  return report.catchAllReply ? catchAllReading(report.catchAllReply) : null;
}

/**
 * Whether the probe's MX accepted one of `addresses` and a made-up address too: the answer a
 * tenant behind a security gateway may replace (probeBehindGateway asks the tenant only then).
 */
export function acceptedByCatchAll(report: ProbeReport, addresses: readonly string[]): boolean {
  return catchAllState(report) === true && answerFor(report, addresses).accepted;
}

/** The tenant's answer for `addresses` when it is a mailbox answer that can replace a catch-all gateway's. */
function tenantAnswer(
  tenant: TenantProbe | null | undefined,
  addresses: readonly string[],
): SmtpAnswer | null {
  if (tenant?.probe.kind !== 'report') return null;
  const answer = answerFor(tenant.probe.report, addresses);
  if (answer.rejectsMailbox) return answer;
  // An acceptance tells only while the tenant refuses a made-up address of the domain.
  if (answer.accepted && catchAllState(tenant.probe.report) === false) return answer;
  return null;
}

function splitAddress(email: string): { localPart: string; domain: string } {
  const at = email.lastIndexOf('@');
  if (at < 0) return { localPart: email, domain: '' };
  return { localPart: email.slice(0, at), domain: email.slice(at + 1).toLowerCase() };
}

// RFC 5321 §2.4: the local part may be case-sensitive, the domain is not.
function sameAddress(left: string, right: string): boolean {
  const a = splitAddress(left);
  const b = splitAddress(right);
  return a.localPart === b.localPart && a.domain === b.domain;
}

function outcomeFor(report: ProbeReport, addresses: readonly string[]): AddressOutcome | undefined {
  return report.perAddress.find((candidate) =>
    addresses.some((email) => sameAddress(candidate.email, email)),
  );
}

function answerFor(report: ProbeReport, addresses: readonly string[]): SmtpAnswer {
  const outcome = outcomeFor(report, addresses);
  if (!outcome) return NO_ANSWER;
  if (outcome.reply) {
    const { subStatus, accepted, rejectsMailbox, policy } = classifyReply(outcome.reply, 'rcpt');
    return { subStatus, accepted, rejectsMailbox, policy };
  }
  return outcome.failure ? failureAnswer(outcome.failure) : NO_ANSWER;
}

interface Decision {
  status: VerificationStatus;
  subStatus: SubStatus;
  smtpValid: boolean | null;
  isCatchAll: boolean | null;
  mailboxAccepted: boolean;
  greylisted: boolean;
  mxHost: string | null;
  /** Whose SMTP answer decided; null when none was used. */
  verifiedVia: 'mx' | 'tenant' | null;
  /** What a batch does with this answer. */
  policy: OutcomePolicy;
}

function settled(
  subStatus: SubStatus,
  mxHost: string | null = null,
  status = SUB_STATUSES[subStatus],
): Decision {
  return {
    status,
    subStatus,
    smtpValid: null,
    isCatchAll: null,
    mailboxAccepted: false,
    greylisted: false,
    mxHost,
    verifiedVia: null,
    policy: policyOf(subStatus),
  };
}

/** The host a probe tries first: the route lists hosts in that order. */
function firstMxHost(dns: DnsOutcome | null): string | null {
  if (!dns || (dns.kind !== 'mx' && dns.kind !== 'unroutable')) return null;
  return dns.mx[0]?.host ?? null;
}

interface AddressFacts {
  spamtrapLike: boolean;
  toxicity: number;
  /** A typo domain that the disposable lists carry: reported as the typo it is. */
  typoSquatting: boolean;
}

// 3b: the mailbox accepted the address; the first risk that applies names it.
function acceptedSubStatus(input: VerdictInput, facts: AddressFacts, isCatchAll: boolean | null): SubStatus {
  if (facts.spamtrapLike) return 'possible_spamtrap';
  if (facts.toxicity >= TOXIC_THRESHOLD) return 'toxic';
  if (input.lists.isDisposable) return 'disposable';
  if (isCatchAll === true) return 'catch_all';
  if (input.lists.isRoleBased) return 'role_based';
  if (input.typo) return 'possible_typo';
  return 'accepted_email';
}

// 3c: SMTP gave no usable answer; these risks need none.
function localRiskSubStatus(input: VerdictInput, facts: AddressFacts): SubStatus | null {
  if (facts.spamtrapLike) return 'possible_spamtrap';
  if (facts.toxicity >= TOXIC_THRESHOLD) return 'toxic';
  if (input.lists.isDisposable) return 'disposable';
  if (input.typo) return 'possible_typo';
  return null;
}

function decideAnswer(input: VerdictInput, facts: AddressFacts): Decision {
  const { address: syntax, dns, typo } = input;
  if (!syntax.valid) return settled('invalid_syntax');
  if (syntax.ipLiteral) return settled('provider_unverifiable');
  // A verifiable address reaches here only with DNS resolved, or with the caller's budget
  // spent before DNS answered; otherwise null is a pipeline fault.
  if (!dns) return settled(input.probe.kind === 'over_budget' ? 'timeout_exceeded' : 'internal_error');
  switch (dns.kind) {
    case 'nxdomain':
      return typo ? settled('possible_typo', null, 'undeliverable') : settled('invalid_domain');
    case 'no_mail_route':
      return settled('no_mx_record');
    case 'null_mx':
      return settled('does_not_accept_mail');
    case 'unroutable':
      return settled('unroutable_ip_address', firstMxHost(dns));
    case 'error':
      return settled('dns_error');
    case 'mx':
      break;
  }

  const { probe } = input;
  let answer = NO_ANSWER;
  let isCatchAll: boolean | null = null;
  let mxHost = firstMxHost(dns);
  let verifiedVia: Decision['verifiedVia'] = null;
  if (probe.kind === 'report') {
    const addresses = [syntax.given, syntax.email];
    answer = answerFor(probe.report, addresses);
    isCatchAll = catchAllState(probe.report);
    mxHost = probe.report.session.mxHost ?? mxHost;
    verifiedVia = 'mx';
    const fromTenant = answer.accepted && isCatchAll === true ? tenantAnswer(input.tenant, addresses) : null;
    if (fromTenant) {
      answer = fromTenant;
      verifiedVia = 'tenant';
    }
  } else if (probe.kind === 'timeout') {
    answer = noReply('smtp_timeout');
  } else if (probe.kind === 'over_budget') {
    answer = noReply('timeout_exceeded');
  }

  const base = { isCatchAll, mxHost, verifiedVia, greylisted: answer.subStatus === 'greylisted' };
  if (answer.accepted) {
    // The tenant confirmed the mailbox: the gateway's catch-all no longer hides it.
    const subStatus = acceptedSubStatus(input, facts, verifiedVia === 'tenant' ? false : isCatchAll);
    return {
      ...base,
      status: SUB_STATUSES[subStatus],
      subStatus,
      smtpValid: true,
      mailboxAccepted: true,
      policy: policyOf(subStatus),
    };
  }
  if (answer.rejectsMailbox) {
    return {
      ...base,
      status: 'undeliverable',
      subStatus: answer.subStatus,
      smtpValid: false,
      mailboxAccepted: false,
      policy: answer.policy,
    };
  }
  // mailbox_full (risky) and a guard refusal (undeliverable) are answers in their own right.
  if (SUB_STATUSES[answer.subStatus] !== 'unknown') {
    return {
      ...base,
      status: SUB_STATUSES[answer.subStatus],
      subStatus: answer.subStatus,
      smtpValid: null,
      mailboxAccepted: false,
      policy: answer.policy,
    };
  }
  const unanswered: Decision = {
    ...base,
    status: 'unknown',
    subStatus: answer.subStatus,
    smtpValid: null,
    mailboxAccepted: false,
    policy: answer.policy,
  };
  // A risk that needs no SMTP answer is final: nothing a retry could change.
  const localRisk = localRiskSubStatus(input, facts);
  if (localRisk) return { ...unanswered, status: 'risky', subStatus: localRisk, policy: policyOf(localRisk) };
  return unanswered;
}

function riskFactorsOf(input: VerdictInput, facts: AddressFacts, decision: Decision): string[] {
  const { address: syntax, lists, typo } = input;
  const factors: string[] = [];
  if (facts.spamtrapLike) factors.push(RISK_FACTORS.spamtrap);
  if (lists.isRoleBased) factors.push(RISK_FACTORS.roleBased);
  if (decision.isCatchAll === true && decision.verifiedVia !== 'tenant') factors.push(RISK_FACTORS.catchAll);
  if (lists.isDisposable) factors.push(RISK_FACTORS.disposable);
  if (lists.isFreeProvider) factors.push(RISK_FACTORS.freeProvider);
  if (syntax.valid && syntax.quotedLocalPart) factors.push(RISK_FACTORS.quotedLocalPart);
  if (syntax.valid && syntax.needsSmtpUtf8) factors.push(RISK_FACTORS.needsSmtpUtf8);
  if (syntax.valid && syntax.ipLiteral) factors.push(RISK_FACTORS.ipLiteral);
  if (typo) factors.push(RISK_FACTORS.typo(typo.suggested));
  if (facts.typoSquatting) factors.push(RISK_FACTORS.typoSquatting);
  if (decision.greylisted) factors.push(RISK_FACTORS.greylisted);
  return factors;
}

const EPOCH = '1970-01-01T00:00:00.000Z';

// The caller passes `new Date().toISOString()`; anything else is normalised so that the result
// still parses, and an unreadable instant becomes the epoch rather than a made-up "now".
function isoInstant(value: string): string {
  if (Meta.shape.verifiedAt.safeParse(value).success) return value;
  const time = Date.parse(value);
  if (!Number.isFinite(time)) return EPOCH;
  const iso = new Date(time).toISOString();
  return Meta.shape.verifiedAt.safeParse(iso).success ? iso : EPOCH;
}

function wholeMilliseconds(value: number): number {
  if (!Number.isFinite(value)) return 0;
  return Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(value)));
}

function typoSuggestion(typo: TypoSuggestion | null): TypoSuggestion | null {
  if (!typo) return null;
  const confidence = Number.isFinite(typo.confidence) ? Math.min(1, Math.max(0, typo.confidence)) : 0;
  return { original: typo.original, suggested: typo.suggested, confidence };
}

function dnsTypeOf(dns: DnsOutcome | null): VerificationResult['meta']['dnsType'] {
  if (dns?.kind === 'mx') return dns.dnsType;
  if (dns?.kind === 'null_mx') return 'NULL_MX';
  return null;
}

/** A result and what a batch does with it (ask again, refund when final). */
export interface Verdict {
  result: VerificationResult;
  policy: OutcomePolicy;
}

/**
 * The verdict on what DNS and SMTP said about an address: the local checks (the lists with the
 * MX hosts, the typo) and the decision, with what a batch does with the answer (ask again, how;
 * refund when final). The one way from facts to a verdict — the single call and
 * `rcpt-prober verify` (through `verifyAddress`), the batch, the sandbox, upload planning. Pure,
 * deterministic and total.
 */
export function verdictFromFacts(facts: VerdictFacts): Verdict {
  const { address } = facts;
  // The MX hosts name the provider for custom domains (Google Workspace, Microsoft 365, …).
  const mxHosts = facts.dns?.kind === 'mx' ? facts.dns.mx.map((mx) => mx.host) : [];
  return verdictOf({
    ...facts,
    lists: address.valid
      ? {
          ...lookupLists(address.localPart, address.domain),
          provider: providerFamilyOf(address.domain, mxHosts),
        }
      : NO_LIST_FACTS,
    typo: address.valid && !address.ipLiteral ? suggestTypo(address.domain) : null,
  });
}

/**
 * The evidence of the session whose answer decided (the tenant's when it answered in the
 * gateway's place), when the probe carried it: masked again and bounded for this address.
 */
function evidenceOf(input: VerdictInput, verifiedVia: Decision['verifiedVia']): Evidence | null {
  const { address } = input;
  if (!address.valid || verifiedVia === null) return null;
  const probe = verifiedVia === 'tenant' ? input.tenant?.probe : input.probe;
  if (probe?.kind !== 'report') return null;
  const evidence = outcomeFor(probe.report, [address.given, address.email])?.evidence;
  return evidence ? sealEvidence(evidence, address.email) : null;
}

function verdictOf(given: VerdictInput): Verdict {
  // Disposable-address lists carry typo-squatting domains (gmial.com, hotmial.com) because they
  // catch mistyped mail; for such a domain the typo is the better explanation, so it is not
  // reported as disposable, and the listing stays a risk factor.
  const typoSquatting = given.typo !== null && given.lists.isDisposable;
  const input = typoSquatting ? { ...given, lists: { ...given.lists, isDisposable: false } } : given;
  const { address: syntax, lists, dns } = input;
  const facts: AddressFacts = {
    spamtrapLike: looksLikeSpamtrap(syntax.localPart),
    toxicity: toxicityOf(syntax.localPart, lists),
    typoSquatting,
  };
  const decision = decideAnswer(input, facts);
  const riskFactors = riskFactorsOf(input, facts, decision);
  const isDeliverable =
    decision.mailboxAccepted &&
    (decision.isCatchAll !== true || decision.verifiedVia === 'tenant') &&
    (decision.subStatus === 'accepted_email' || decision.subStatus === 'role_based');
  const result: VerificationResult = {
    email: syntax.given,
    status: decision.status,
    subStatus: decision.subStatus,
    reason:
      decision.subStatus === 'possible_typo' && decision.status === 'undeliverable'
        ? SUB_STATUS_TABLE.possible_typo.otherStatus.reason
        : SUB_STATUS_TABLE[decision.subStatus].reason,
    score: scoreVerdict({
      status: decision.status,
      subStatus: decision.subStatus,
      riskFactors,
      toxicity: facts.toxicity,
    }),
    isDeliverable,
    toxicity: facts.toxicity,
    checks: {
      syntax: syntax.valid,
      // RFC 5321 §5.1: an implicit MX (A/AAAA) is a mail route too; dnsType tells which.
      mxRecords: (dns?.kind === 'mx' || dns?.kind === 'unroutable') && dns.mx.length > 0,
      smtpValid: decision.smtpValid,
      isDisposable: lists.isDisposable,
      isRoleBased: lists.isRoleBased,
      isFreeProvider: lists.isFreeProvider,
      isCatchAll: decision.isCatchAll,
      hasTypo: typoSuggestion(input.typo),
    },
    meta: {
      domain: syntax.domain,
      localPart: syntax.localPart,
      mxHost: decision.mxHost,
      provider: lists.provider,
      dnsType: dnsTypeOf(dns),
      verifiedAt: isoInstant(input.verifiedAt),
      processingTimeMs: wholeMilliseconds(input.processingTimeMs),
      verifiedVia: input.sandbox ? 'sandbox' : decision.verifiedVia,
      // A verdict is reached fresh here; the account's verdict cache marks what it answers again.
      cached: false,
    },
    riskFactors,
  };
  const evidence = evidenceOf(input, decision.verifiedVia);
  if (evidence) result.evidence = evidence;
  // The API names a delay only for greylisting, the one temporary answer a caller can act on:
  // the one the server named, else the one rcpt measured of it, else the usual one.
  if (decision.subStatus === 'greylisted' && decision.policy.retryAfterSeconds !== undefined) {
    const measured = decision.policy.retryAfterGuessed ? input.greylistDelaySeconds : null;
    result.retryAfterSeconds = measured ?? decision.policy.retryAfterSeconds;
  }
  return { result, policy: decision.policy };
}
