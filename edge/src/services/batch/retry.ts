// When a batch asks an address again. The policy table (shared/src/contract/sub-statuses.ts)
// says whether an answer is retried and at which pace, and each pace's delays; this file picks
// the next retry's time. Every pace ends at the job's deadline, after which the last temporary answer is
// final and refunded as the table says (docs/verdicts.md, docs/money.md).
import { type OutcomePolicy, RETRY_PACES, type RetryPace } from '@rcpt/shared/contract/sub-statuses';

/** The pace of an answer's retries, as the policy table (or the reply) set it; null: final. */
export function retryPaceOf(policy: OutcomePolicy): Exclude<RetryPace, 'none'> | null {
  return policy.retry === 'none' ? null : policy.retry;
}

/** Where an address stands in its pace: the pace of its last answer and how many retries it had. */
export interface RetryState {
  schedule: Exclude<RetryPace, 'none'>;
  count: number;
  /** When the first answer at this pace came (ms): how long a greylisting held it back is measured from it. */
  since?: number;
}

/**
 * When to ask again (ms since the epoch), or null when the answer is final: the pace is
 * spent, or the retry (with the time a probe needs) would not finish before the deadline.
 */
export function nextAttemptAt(input: {
  pace: Exclude<RetryPace, 'none'>;
  /** Retries already made at this pace (a change of pace starts again at 0). */
  count: number;
  retryAfterSeconds?: number;
  now: number;
  deadlineAt: number;
  /** The least time a probe needs to give an answer. */
  probeMs: number;
  /**
   * Its region lost its probers with it and passed it on: asked again at once, when the next
   * region takes it (the pace still counts the try).
   */
  passedOn?: boolean;
}): number | null {
  const scheduled: number | undefined = RETRY_PACES[input.pace].delays[input.count];
  if (scheduled === undefined) return null;
  if (input.passedOn) return input.now + input.probeMs <= input.deadlineAt ? input.now : null;
  // A server that names a shorter wait is asked then; a longer (or guessed) one costs one
  // more RCPT at most, while waiting for it could miss a deadline the server would have met.
  const delaySeconds =
    input.pace === 'greylist' && input.retryAfterSeconds !== undefined
      ? Math.min(scheduled, Math.max(1, input.retryAfterSeconds))
      : scheduled;
  const at = input.now + delaySeconds * 1000;
  return at + input.probeMs <= input.deadlineAt ? at : null;
}
