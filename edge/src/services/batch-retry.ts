// When a batch asks an address again. The policy table (shared/src/contract/sub-statuses.ts)
// says whether an answer is retried and on which schedule class; this file turns a class into
// delays. Every pace ends at the job's deadline, after which the last temporary answer is
// final and refunded as the table says (docs/verdicts.md, docs/money.md).
import type { OutcomePolicy, SubStatus } from '@rcpt/shared/contract/sub-statuses';

/**
 * How fast an answer is asked again:
 * - greylist: after a short interval that grows (many servers let a triplet through after
 *   60 s; postgrey's default is 300 s), sooner when the server names a shorter wait;
 * - throttle: the server says slow down: minutes, longer each time;
 * - connection: refused connections, 421 at the greeting, cut sessions, temporary errors:
 *   quickly and a few times;
 * - timeout: a server that never answered in time (tarpit): once, since each try costs a
 *   full timeout;
 * - rcpt: rcpt's own failure (no prober free or connected): until the deadline.
 */
export type RetryPace = 'greylist' | 'throttle' | 'connection' | 'timeout' | 'rcpt';

/** Delays in seconds before the 1st, 2nd … retry; past the last one the answer is final. */
const PACES: Record<RetryPace, readonly number[]> = {
  greylist: [30, 60, 60, 120, 120, 300, 300, 600, 600, 600],
  throttle: [60, 120, 300, 600, 900],
  connection: [2, 5, 10],
  timeout: [5],
  rcpt: [2, 5, 5, 10, 10, 15, 15, 30, 30, 30, 30, 60, 60, 60, 60, 60, 60, 60, 60, 60],
};

/** The pace of an answer's retries, from its schedule class in the policy table; null: final. */
export function retryPaceOf(subStatus: SubStatus, policy: OutcomePolicy): RetryPace | null {
  switch (policy.retry) {
    case 'none':
      return null;
    case 'greylist':
      return 'greylist';
    case 'throttle':
      return 'throttle';
    case 'transient':
      if (subStatus === 'smtp_timeout') return 'timeout';
      if (subStatus === 'smtp_unavailable') return 'rcpt';
      return 'connection';
  }
}

/** Where an address stands in its pace: the pace of its last answer and how many retries it had. */
export interface RetryState {
  schedule: RetryPace;
  count: number;
}

/**
 * When to ask again (ms since the epoch), or null when the answer is final: the pace is
 * spent, or the retry (with the time a probe needs) would not finish before the deadline.
 */
export function nextAttemptAt(input: {
  pace: RetryPace;
  /** Retries already made at this pace (a change of pace starts again at 0). */
  count: number;
  retryAfterSeconds?: number;
  now: number;
  deadlineAt: number;
  /** The least time a probe needs to give an answer. */
  probeMs: number;
}): number | null {
  const scheduled = PACES[input.pace][input.count];
  if (scheduled === undefined) return null;
  // A server that names a shorter wait is asked then; a longer (or guessed) one costs one
  // more RCPT at most, while waiting for it could miss a deadline the server would have met.
  const delaySeconds =
    input.pace === 'greylist' && input.retryAfterSeconds !== undefined
      ? Math.min(scheduled, Math.max(1, input.retryAfterSeconds))
      : scheduled;
  const at = input.now + delaySeconds * 1000;
  return at + input.probeMs <= input.deadlineAt ? at : null;
}
