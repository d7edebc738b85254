// Greylist follow-up (docs/architecture.md): a completed job with `recheck` asks its
// recheckable answers (the policy table's `recheckable`, and only temporary answers) again in
// rounds at RECHECK_SCHEDULE_SECONDS after completion. A round is a delayed queue message that
// claims the round once, then ordinary work messages through the consumer and the hub; its
// answers are recorded as they come, and the round that changed a verdict writes one
// `job.updated` event as it closes. An address refunded at completion that a round answers
// with a known verdict is charged then, as far as the balance covers (docs/money.md; the
// statements are in storage/rechecks.ts). Lost messages and lost probes are recovered by the cron.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { OutcomePolicy } from '@rcpt/shared/contract/sub-statuses';
import type { Config } from '../../config.ts';
import { findJobById } from '../../storage/jobs.ts';
import {
  claimRecheckRound,
  closeExpiredRounds,
  findDueRechecks,
  type RecheckAnswer,
  recordRecheckAnswers,
} from '../../storage/rechecks.ts';
import { deliverJobWebhook } from '../webhooks/delivery.ts';
import { addressResult, defaultMaxWaitSeconds } from './jobs.ts';
import {
  type BatchMessage,
  enqueueBatchWork,
  MAX_QUEUE_DELAY_SECONDS,
  type RecheckMessage,
  workMessages,
} from './queue.ts';
import type { SettleDeps } from './settlement.ts';

/** How long after its time a round is started by the cron rather than its own message. */
const RECHECK_SWEEP_GRACE_MS = 60_000;

/**
 * How long after its job completed the round that follows `roundsStarted` rounds starts (ms), or
 * null: the schedule (RECHECK_SCHEDULE_SECONDS) has no more rounds, or SMTP is disabled for the
 * deployment, so that asking again could only answer the same.
 */
export function recheckOffsetMs(config: Config, roundsStarted: number): number | null {
  const seconds = config.SMTP_ENABLED ? config.RECHECK_SCHEDULE_SECONDS[roundsStarted] : undefined;
  return seconds === undefined ? null : seconds * 1000;
}

/** Sends the message that starts a round at its time, at most Queues' longest delay ahead. */
export async function sendRecheckMessage(
  queue: Queue<BatchMessage>,
  message: RecheckMessage,
  now: number,
): Promise<void> {
  const delaySeconds = Math.min(
    MAX_QUEUE_DELAY_SECONDS,
    Math.max(0, Math.ceil((message.dueAt - now) / 1000)),
  );
  await enqueueBatchWork(queue, [message], delaySeconds);
}

/**
 * A round's message: sent on if it arrived early (a delay past Queues' limit), else the round
 * is claimed — once, whatever the replays — and its addresses are sent to the consumer as
 * ordinary work of one domain each, marked with the round; the next round is planned.
 */
export async function startRecheckRound(
  deps: SettleDeps,
  message: RecheckMessage,
  now: number,
): Promise<void> {
  if (message.dueAt > now + 1000) {
    await sendRecheckMessage(deps.queue, message, now);
    return;
  }
  const job = await findJobById(deps.db, message.jobId);
  if (!job?.completedAt) return;
  // The schedule counts the greylist rounds only: a watched job's rounds for its domain changes
  // (job-watch.ts) share the numbering but not the schedule.
  const nextAfterMs = recheckOffsetMs(deps.config, message.round + 1 - job.watchRounds);
  const started = await claimRecheckRound(deps.db, {
    jobId: job.id,
    round: message.round,
    now,
    // Probes of the round get the time a job of this size gets before its deadline.
    endsAt: now + defaultMaxWaitSeconds(job.totalEmails) * 1000,
    nextAfterMs,
  });
  if (!started) return;
  if (nextAfterMs !== null) {
    await sendRecheckMessage(
      deps.queue,
      {
        kind: 'recheck',
        jobId: job.id,
        round: started.round,
        dueAt: job.completedAt + nextAfterMs,
      },
      now,
    );
  }
  await enqueueRoundWork(deps, job.id, started.round, started.addresses, now);
}

/**
 * Sends a started round's addresses to the consumer as ordinary work of one domain each, marked
 * with the round; a round with none closes at once.
 */
export async function enqueueRoundWork(
  deps: SettleDeps,
  jobId: string,
  round: number,
  addresses: readonly { idx: number; email: string; domain: string }[],
  now: number,
): Promise<void> {
  if (addresses.length === 0) {
    await recordRecheckAnswers(deps.db, jobId, [], now);
    return;
  }
  await enqueueBatchWork(deps.queue, workMessages(jobId, addresses, round));
}

/**
 * What a recheck makes of an answer: a known verdict (deliverable, undeliverable, risky)
 * replaces the address's `unknown`; another temporary answer leaves it as it was and asks again
 * next round; a permanent one (no retry) leaves it and asks no more.
 */
export function recheckAnswerOf(
  idx: number,
  result: VerificationResult,
  policy: OutcomePolicy,
): RecheckAnswer {
  const known = result.status !== 'unknown';
  return {
    idx,
    verdict: known ? addressResult(idx, result, false) : null,
    askAgain: !known && policy.retry !== 'none',
  };
}

/** Records a round's answers for one job; a round closed with changes sends its event now. */
export async function recordRecheck(
  deps: SettleDeps,
  jobId: string,
  answers: readonly RecheckAnswer[],
  now: number,
): Promise<void> {
  const closed = await recordRecheckAnswers(deps.db, jobId, answers, now);
  if (closed && closed.changes > 0) deps.inBackground(deliverJobWebhook(deps.db, jobId, deps.config, now));
}

export interface RecheckRecovery {
  /** Rounds past their end closed with changed verdicts (their events are sent). */
  closedWithChanges: number;
  restartedRounds: number;
}

/**
 * The cron's part: rounds past their end close (what they still ask is due next round), and
 * rounds whose message was lost are started again by sending it anew (the claim keeps it once).
 */
export async function recoverRechecks(deps: SettleDeps, now: number): Promise<RecheckRecovery> {
  const { db } = deps;
  const closed = await closeExpiredRounds(db, now, 100);
  for (const jobId of closed) deps.inBackground(deliverJobWebhook(db, jobId, deps.config, now));
  const due = await findDueRechecks(db, now - RECHECK_SWEEP_GRACE_MS, 100);
  for (const job of due) {
    await sendRecheckMessage(
      deps.queue,
      { kind: 'recheck', jobId: job.id, round: job.round, dueAt: job.dueAt },
      now,
    );
  }
  return { closedWithChanges: closed.length, restartedRounds: due.length };
}
