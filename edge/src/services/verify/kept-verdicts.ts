// Which kept verdict answers a single call again (docs/verdicts.md, "Cached answers"), as pure
// rules: the Worker applies them to a verdict read from D1, and the account's desk
// (objects/account-desk.ts) to one it keeps, so that a cached call is decided, charged and
// recorded in one call to the desk. A verdict lasts its status's lifetime from the moment it was
// reached — not from when it was last answered, so answering it again never extends it — and
// only while the domain's facts it was reached on still hold.
import { storedVerificationResult, type VerificationResult } from '@rcpt/shared/contract/api';
import { verdictLifetimeMs } from '@rcpt/shared/contract/verdict-lifetime';
import type { SyntaxResult } from '@rcpt/shared/verify/inputs';
import type { HistoryAnswer } from '../../storage/verifications.ts';

export interface VerdictCacheKey {
  /** Normalised: trimmed, the domain in lower-case A-labels, the local part as given (RFC 5321 §2.4). */
  address: string;
  domain: string;
}

/**
 * The cache key of a parsed address, or null for one whose verdict needs no DNS or SMTP (invalid
 * syntax, an IP literal): those are reached locally in no time and never change.
 */
export function verdictCacheKey(address: SyntaxResult): VerdictCacheKey | null {
  return address.valid && !address.ipLiteral ? { address: address.email, domain: address.domain } : null;
}

/**
 * The key under which `result` is kept, or null when it is not kept: the policy table says how
 * long each answer is remembered, and rcpt's own failures are not (a repeat asks again, and an
 * earlier verdict still within its lifetime stays the one answered).
 */
export function keptUnder(key: VerdictCacheKey | null, result: VerificationResult): VerdictCacheKey | null {
  return key && verdictLifetimeMs(result) > 0 ? key : null;
}

/** Whether a kept verdict was the account's bounce answered: it holds only while the bounce does. */
export function answeredFromBounce(result: VerificationResult): boolean {
  return result.meta.learnt?.kind === 'mailbox_bounce';
}

/** What a kept verdict is answered against. */
export interface KeptVerdictTerms {
  now: number;
  /**
   * When the domain's facts last changed (DomainFactsStore.verdictsHoldSince): a verdict reached
   * before then no longer holds; null: the domain has no facts, so none holds. Absent for a test
   * key, whose answers come from no DNS.
   */
  factsChangedAt?: number | null;
  /** The call asked for the evidence (docs/verdicts.md, "Evidence"). */
  evidence: boolean;
  /** A test key's call: its fixed answers had no SMTP session behind them. */
  sandbox: boolean;
}

/**
 * The kept verdict (as stored) as this call answers it, marked cached; null when it no longer
 * holds: past its lifetime, reached before the domain's facts changed, without the evidence the
 * call asks for, or answered from a bounce (which only a read of the bounce may answer again).
 */
export function keptAnswer(resultJson: string, terms: KeptVerdictTerms): VerificationResult | null {
  const result = storedVerificationResult(resultJson);
  const verifiedAt = Date.parse(result.meta.verifiedAt);
  if (!(terms.now - verifiedAt < verdictLifetimeMs(result))) return null;
  const { factsChangedAt } = terms;
  if (factsChangedAt !== undefined && (factsChangedAt === null || factsChangedAt > verifiedAt)) return null;
  const answer = answersEvidence({ ...result, meta: { ...result.meta, cached: true } }, terms);
  return answer && !answeredFromBounce(answer) ? answer : null;
}

/**
 * A kept verdict as this call answers it: without its evidence unless asked for; when asked for,
 * only a verdict kept with its evidence (or one no SMTP session stood behind) answers, and any
 * other is verified afresh (null). A test key's fixed answers have no session behind them.
 */
function answersEvidence(
  kept: VerificationResult,
  terms: Pick<KeptVerdictTerms, 'evidence' | 'sandbox'>,
): VerificationResult | null {
  const { evidence: keptEvidence, ...withoutEvidence } = kept;
  if (!terms.evidence) return withoutEvidence;
  const fromSmtp = kept.meta.verifiedVia === 'mx' || kept.meta.verifiedVia === 'tenant';
  return keptEvidence || terms.sandbox || !fromSmtp ? kept : null;
}

/** A call's answer as its history row keeps it: the address only when the verdict is kept. */
export function historyAnswer(result: VerificationResult, key: VerdictCacheKey | null): HistoryAnswer {
  return {
    email: result.email,
    address: keptUnder(key, result)?.address ?? null,
    status: result.status,
    subStatus: result.subStatus,
    score: result.score,
    resultJson: JSON.stringify(result),
  };
}
