// What outcomes teach the verdict (docs/verdicts.md, "Learning from outcomes"). Two facts, each
// turning a verdict reached the usual way into the one the outcomes say:
//
// - the account's own hard bounce of the mailbox on a mailbox reason (550 5.1.1 user unknown):
//   the address is `undeliverable` for that account, with the bounce's sub-status, until a later
//   `delivered` outcome of the account says otherwise;
// - a domain whose server accepted addresses at RCPT that bounced afterwards on a mailbox reason,
//   for several accounts: its acceptance no longer confirms a mailbox, so an accepted address is
//   `risky / accepts_then_bounces`.
//
// Pure: the edge reads the facts (storage/outcomes.ts, storage/domain-facts.ts) and applies them.
import type { LearntFact, SubStatus, VerificationResult } from '../contract/api.ts';
import { SUB_STATUS_TABLE, SUB_STATUSES } from '../contract/sub-statuses.ts';
import { scoreVerdict } from './score.ts';

/** The account's latest hard bounce of a mailbox on a mailbox reason, not since delivered. */
export interface MailboxBounce {
  at: number;
  /** The reply table's sub-status of the bounce's diagnostic (`mailbox_not_found`, `mailbox_disabled`). */
  subStatus: string | null;
  diagnostic: string | null;
}

/** What the domain facts learnt of a domain from outcomes: accepted addresses that bounced. */
export interface AcceptedBounces {
  bounces: number;
  accounts: number;
  lastBounceAt: number;
}

/**
 * A domain is learnt as accepting then bouncing once its bounces come from at least this many
 * accounts — one customer's list, or one customer's reports, cannot mark a domain for everyone —
 * and number at least `MIN_ACCEPTED_BOUNCES`.
 */
export const MIN_BOUNCE_ACCOUNTS = 2;
export const MIN_ACCEPTED_BOUNCES = 3;
/** How long a domain's learnt bounces count: the outcome matching window. */
export const ACCEPTED_BOUNCES_WINDOW_MS = 30 * 86_400_000;

export const LEARNT_RISK_FACTORS = {
  mailboxBounce: (date: string) =>
    `Mail from this account to it hard-bounced on ${date}: the mailbox was refused`,
  acceptsThenBounces:
    "The domain's mail server accepted addresses that bounced afterwards, for several senders",
} as const;

/** Whether a domain's learnt bounces are enough, and recent enough, to change its verdicts. */
export function acceptsThenBounces(learnt: AcceptedBounces | null, now: number): boolean {
  return (
    learnt !== null &&
    learnt.accounts >= MIN_BOUNCE_ACCOUNTS &&
    learnt.bounces >= MIN_ACCEPTED_BOUNCES &&
    now - learnt.lastBounceAt < ACCEPTED_BOUNCES_WINDOW_MS
  );
}

/**
 * `result` answered instead with `subStatus` (in its own status), a risk factor more and the
 * learnt fact in `meta.learnt`; the score follows, and the address is not deliverable.
 */
function answeredAs(
  result: VerificationResult,
  subStatus: SubStatus,
  riskFactor: string,
  learnt: LearntFact,
): VerificationResult {
  const status = SUB_STATUSES[subStatus];
  const riskFactors = [...result.riskFactors, riskFactor];
  return {
    ...result,
    status,
    subStatus,
    reason: SUB_STATUS_TABLE[subStatus].reason,
    score: scoreVerdict({ status, subStatus, riskFactors, toxicity: result.toxicity }),
    isDeliverable: false,
    riskFactors,
    meta: { ...result.meta, learnt },
  };
}

/**
 * `base` (the verdict on the address's syntax, lists and mail route, without SMTP) answered from
 * the account's bounce: `undeliverable` with the bounce's own sub-status when the reply table gave
 * an undeliverable one, else `mailbox_not_found`.
 */
export function answerFromBounce(base: VerificationResult, bounce: MailboxBounce): VerificationResult {
  const subStatus: SubStatus =
    bounce.subStatus !== null &&
    bounce.subStatus in SUB_STATUSES &&
    SUB_STATUSES[bounce.subStatus as SubStatus] === 'undeliverable'
      ? (bounce.subStatus as SubStatus)
      : 'mailbox_not_found';
  const bouncedAt = new Date(bounce.at).toISOString();
  const { evidence: _none, retryAfterSeconds: _noRetry, ...rest } = base;
  const answered = answeredAs(rest, subStatus, LEARNT_RISK_FACTORS.mailboxBounce(bouncedAt.slice(0, 10)), {
    kind: 'mailbox_bounce',
    bouncedAt,
    diagnostic: bounce.diagnostic,
  });
  return {
    ...answered,
    checks: { ...answered.checks, smtpValid: false },
    meta: { ...answered.meta, verifiedVia: null },
  };
}

/**
 * `result` as a domain that accepts then bounces is answered: an accepted mailbox
 * (`deliverable`) is `risky / accepts_then_bounces`; any other verdict is left as it is, since
 * it does not rest on the domain's acceptance alone.
 */
export function withAcceptsThenBounces(
  result: VerificationResult,
  learnt: AcceptedBounces | null,
  now: number,
): VerificationResult {
  if (result.status !== 'deliverable' || !acceptsThenBounces(learnt, now) || learnt === null) return result;
  return answeredAs(result, 'accepts_then_bounces', LEARNT_RISK_FACTORS.acceptsThenBounces, {
    kind: 'domain_accepts_then_bounces',
    bounces: learnt.bounces,
    accounts: learnt.accounts,
    lastBounceAt: new Date(learnt.lastBounceAt).toISOString(),
  });
}
