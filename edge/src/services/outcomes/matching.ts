// Which verdict an outcome is matched to (docs/verdicts.md, "Outcomes"): the account's latest
// verdict for the address — a single call, or the address in a job — made before the send and
// no longer than OUTCOME_MATCH_WINDOW_MS before it, with keys of the outcome's mode.
import type { VerdictCandidate } from '../../storage/outcomes.ts';

/**
 * How far back an outcome looks for its verdict: 30 days. A list is cleaned shortly before the
 * send it is for; a verdict older than a month says little about the mailbox at the send, and is
 * within the 60 days verdicts are kept.
 */
export const OUTCOME_MATCH_WINDOW_MS = 30 * 86_400_000;

export interface MatchedVerdict {
  source: 'single' | 'batch';
  ref: string;
  at: number;
  status: string;
  subStatus: string;
  /** The verdict's provider family (`meta.provider`), else its MX host, else null. */
  provider: string | null;
}

/** The latest of the candidates for each outcome index (a single call wins a tie: it is the newer act). */
export function latestVerdicts(candidates: readonly VerdictCandidate[]): Map<number, MatchedVerdict> {
  const latest = new Map<number, MatchedVerdict>();
  for (const candidate of candidates) {
    const kept = latest.get(candidate.index);
    if (kept && (kept.at > candidate.at || (kept.at === candidate.at && kept.source === 'single'))) continue;
    latest.set(candidate.index, {
      source: candidate.source,
      ref: candidate.ref,
      at: candidate.at,
      status: candidate.status,
      subStatus: candidate.subStatus,
      provider: providerOf(candidate.resultJson),
    });
  }
  return latest;
}

function providerOf(resultJson: string | null): string | null {
  if (!resultJson) return null;
  try {
    const meta = (JSON.parse(resultJson) as { meta?: { provider?: unknown; mxHost?: unknown } }).meta;
    const named = meta?.provider ?? meta?.mxHost;
    return typeof named === 'string' && named !== '' ? named : null;
  } catch {
    return null;
  }
}
