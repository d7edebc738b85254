// Greylist follow-up (docs/architecture.md): a completed job with `recheck` asks its
// recheckable answers (the policy table's `recheckable`, and only temporary answers) again in
// rounds at RECHECK_SCHEDULE_SECONDS after completion. A round is a delayed queue message that
// claims the round once, then ordinary work messages through the consumer and the hub; its
// answers are recorded as they come, and the round that changed a verdict writes one
// `job.updated` event as it closes. An address refunded at completion that a round answers
// with a known verdict is charged then, as far as the balance covers (docs/money.md; the
// statements are in storage/rechecks.ts; its answers are recorded by results.ts). Lost messages
// and lost probes are recovered by the cron.
import { findJobById } from '../../storage/jobs.ts';
import { claimRecheckRound, closeExpiredRounds, findDueRechecks } from '../../storage/rechecks.ts';
import { defaultMaxWaitSeconds } from './jobs.ts';
import { type RecheckMessage, sendRecheckMessage } from './queue.ts';
import { enqueueRoundWork, recheckOffsetMs } from './results.ts';
import type { SettleDeps } from './types.ts';

/** How long after its time a round is started by the cron rather than its own message. */
const RECHECK_SWEEP_GRACE_MS = 60_000;

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
  // (watch.ts) share the numbering but not the schedule.
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
  for (const jobId of closed) deps.announce(jobId, now);
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
