// The 0–100 score of a verdict. Bands are fixed by docs/verdicts.md ("Statuses") so that a
// score alone tells the status; the formula only orders results inside their band:
//
//   score = clamp(base, band) where base = SCORE_BASES[subStatus]
//                                          − RISK_FACTOR_PENALTY × riskFactors.length
//                                          − TOXICITY_PENALTY × toxicity
//
// and the base is the band's midpoint when the status is not the subStatus's usual one (the
// only such case rcpt produces is `undeliverable / possible_typo`).
import { SUB_STATUSES, type SubStatus, type VerificationStatus } from '../contract/api.ts';

/** Inclusive score range of each status. */
export const SCORE_BANDS = {
  undeliverable: { min: 0, max: 20 },
  unknown: { min: 21, max: 49 },
  risky: { min: 50, max: 79 },
  deliverable: { min: 80, max: 100 },
} as const satisfies Record<VerificationStatus, { min: number; max: number }>;

/**
 * Score before penalties, inside the subStatus's usual band. Higher means more likely to be
 * delivered: an accepted role address (a real, working mailbox) sits at the top of `risky`; an
 * unknown caused by a temporary state (greylisting) above one caused by a refusal or a fault.
 */
export const SCORE_BASES: Record<SubStatus, number> = {
  accepted_email: 100,

  role_based: 79,
  catch_all: 70,
  accepts_then_bounces: 66,
  possible_typo: 62,
  disposable: 60,
  mailbox_full: 58,
  possible_spamtrap: 55,
  toxic: 52,

  greylisted: 47,
  smtp_unavailable: 45,
  // Nothing is known against the mailbox: only the caller's budget ran out.
  timeout_exceeded: 45,
  mail_server_temporary_error: 42,
  provider_unverifiable: 40,
  smtp_timeout: 38,
  antispam_blocked: 36,
  forcible_disconnect: 34,
  smtp_connection_failed: 32,
  invalid_smtp_response: 30,
  dns_error: 28,
  internal_error: 25,

  mailbox_disabled: 12,
  mailbox_not_found: 8,
  unroutable_ip_address: 6,
  no_mx_record: 5,
  does_not_accept_mail: 3,
  invalid_domain: 2,
  invalid_syntax: 0,
};

export const RISK_FACTOR_PENALTY = 4;
export const TOXICITY_PENALTY = 3;

export interface ScoreInput {
  status: VerificationStatus;
  subStatus: SubStatus;
  riskFactors: readonly string[];
  toxicity: number;
}

/** The verdict's score: its subStatus's base less risk penalties, kept inside its status band. */
export function scoreVerdict(input: ScoreInput): number {
  const band = SCORE_BANDS[input.status];
  const base =
    SUB_STATUSES[input.subStatus] === input.status
      ? SCORE_BASES[input.subStatus]
      : Math.round((band.min + band.max) / 2);
  const toxicity = Number.isFinite(input.toxicity) ? Math.max(0, input.toxicity) : 0;
  const raw = base - RISK_FACTOR_PENALTY * input.riskFactors.length - TOXICITY_PENALTY * toxicity;
  return Math.round(Math.min(band.max, Math.max(band.min, raw)));
}
