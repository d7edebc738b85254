// Where a batch job's answers are recorded: its final answers, the last of which completes the job
// (refunds, the greylist follow-up's first round planned, its events announced), and a follow-up
// round's answers, the last of which closes the round. The settlement (settlement.ts) and the
// follow-up rounds (recheck.ts, watch.ts) record through here; the webhooks hear of it through
// `SettleDeps.announce`. docs/architecture.md, "A batch" and "Greylist follow-up".
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { OutcomePolicy } from '@rcpt/shared/contract/sub-statuses';
import type { Config } from '../../config.ts';
import type { JobLists, ListsReport } from '../../storage/job-lists/index.ts';
import { type AddressResult, applyReport, recordResults } from '../../storage/job-results.ts';
import { processingJobs } from '../../storage/jobs.ts';
import { type RecheckAnswer, recordRecheckAnswers } from '../../storage/rechecks.ts';
import { addressResult } from './jobs.ts';
import { enqueueBatchWork, sendRecheckMessage, workMessages } from './queue.ts';
import type { SettleDeps } from './types.ts';

/**
 * How long after its job completed the round that follows `roundsStarted` rounds starts (ms), or
 * null: the schedule (RECHECK_SCHEDULE_SECONDS) has no more rounds, or SMTP is disabled for the
 * deployment, so that asking again could only answer the same.
 */
export function recheckOffsetMs(config: Config, roundsStarted: number): number | null {
  const seconds = config.SMTP_ENABLED ? config.RECHECK_SCHEDULE_SECONDS[roundsStarted] : undefined;
  return seconds === undefined ? null : seconds * 1000;
}

/**
 * Records final answers of the job; the one that completes it announces its events and, when its
 * greylist follow-up has a round to run, sends the first round's message (the cron sends it if
 * this one is lost).
 */
export async function recordFinals(
  deps: SettleDeps,
  jobId: string,
  finals: readonly AddressResult[],
  now: number,
  /** The job's `recheck`, when known from its row (`recordResults`). */
  jobRechecks?: boolean,
): Promise<void> {
  const applied = await recordResults(
    deps.db,
    jobId,
    finals,
    now,
    recheckOffsetMs(deps.config, 0),
    jobRechecks,
  );
  await afterApplied(deps, jobId, applied, now);
}

/**
 * Applies a report of the job's lists again (the job's object, on its clock): one D1 missed
 * heals, and the one that completes the job does what the last final answer would have.
 * Returns whether the job still runs.
 */
export async function reapplyReport(
  deps: SettleDeps,
  jobId: string,
  report: ListsReport,
  lists: JobLists,
  now: number,
): Promise<boolean> {
  const applied = await applyReport(deps.db, jobId, report, now, recheckOffsetMs(deps.config, 0), lists);
  await afterApplied(deps, jobId, applied, now);
  return (await processingJobs(deps.db, [jobId])).has(jobId);
}

/** A job completed by a report announces its events and sends its first follow-up round. */
async function afterApplied(
  deps: SettleDeps,
  jobId: string,
  { completed, recheckDueAt }: { completed: boolean; recheckDueAt: number | null },
  now: number,
): Promise<void> {
  if (!completed) return;
  deps.announce(jobId, now);
  if (recheckDueAt !== null)
    await sendRecheckMessage(deps.queue, { kind: 'recheck', jobId, round: 0, dueAt: recheckDueAt }, now);
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

/** Records a round's answers for one job; a round closed with changes announces its event now. */
export async function recordRecheck(
  deps: SettleDeps,
  jobId: string,
  answers: readonly RecheckAnswer[],
  now: number,
): Promise<void> {
  const closed = await recordRecheckAnswers(deps.db, jobId, answers, now);
  if (closed && closed.changes > 0) deps.announce(jobId, now);
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
