// Every charged request ends in its result or its refund. Every job completes: a job past
// its deadline whose deadline message was lost is finished as the message would have; work
// whose lease ran out (a consumer crashed, the hub restarted, an enqueue failed) is enqueued
// again; a job still open past the hard limit fails with a reason and is refunded for what
// was not verified. Nothing is charged twice: charges happen only at upload.
import { enqueueBatchWork, workMessages } from '../services/batch/queue.ts';
import { type RecheckRecovery, recoverRechecks } from '../services/batch/recheck.ts';
import { finishAtDeadline } from '../services/batch/settlement.ts';
import type { SettleDeps } from '../services/batch/types.ts';
import type { DomainFactsStore } from '../services/verify/domain-facts.ts';
import {
  findJobsPastDeadline,
  findJobsWithoutRows,
  findOverdueJobs,
  findStaleAddresses,
  markRequeued,
} from '../storage/job-recovery.ts';
import { failJob, failJobWithoutRows } from '../storage/job-results.ts';
import { findUnansweredVerifications, refundVerification } from '../storage/verifications.ts';

/** How long an upload has to store a job's rows before the sweep fails the job and refunds it. */
export const ROWS_STORE_GRACE_MS = 60_000;

/** How long after its deadline a job is finished by the sweep rather than its own message. */
const DEADLINE_SWEEP_GRACE_MS = 60_000;

const ADDRESSES_PER_SWEEP = 5000;
/** A single verification still unanswered after this long belongs to a request that died. */
export const UNANSWERED_VERIFICATION_MS = 10 * 60_000;
const VERIFICATIONS_PER_SWEEP = 500;

export interface RecoveryReport {
  requeued: number;
  failedJobs: number;
  refundedVerifications: number;
  finishedAtDeadline: number;
  rechecks: RecheckRecovery;
}

/** `deps.facts`: the domain facts a deadline's never-probed addresses are routed with (default: the deployment's). */
export async function recoverStuckJobs(
  deps: SettleDeps & { facts?: DomainFactsStore },
  now: number,
): Promise<RecoveryReport> {
  const { db, queue, config } = deps;
  const pastDeadline = await findJobsPastDeadline(db, now - DEADLINE_SWEEP_GRACE_MS, 100);
  for (const jobId of pastDeadline) await finishAtDeadline(deps, jobId, now);

  // A single verification charged in D1 and never answered (its request died between the charge
  // and the answer, and its own refund failed too) is refunded here: only rows from before single
  // calls were charged at their desk, whose alarm gives back its own (objects/account-desk.ts).
  let refundedVerifications = 0;
  for (const id of await findUnansweredVerifications(
    db,
    now - UNANSWERED_VERIFICATION_MS,
    VERIFICATIONS_PER_SWEEP,
  )) {
    if (await refundVerification(db, id, now)) refundedVerifications++;
  }

  let failedJobs = 0;
  for (const jobId of await findJobsWithoutRows(db, now - ROWS_STORE_GRACE_MS, 100)) {
    if (await failJobWithoutRows(db, jobId, now)) {
      failedJobs++;
      deps.announce(jobId, now);
    }
  }

  const overdue = await findOverdueJobs(db, now - config.BATCH_MAX_HOURS * 3600_000, 100);
  for (const jobId of overdue) {
    if (await failJob(db, jobId, `The job did not finish within ${config.BATCH_MAX_HOURS} hours.`, now)) {
      failedJobs++;
      deps.announce(jobId, now);
    }
  }

  const stale = await findStaleAddresses(db, now - config.BATCH_LEASE_SECONDS * 1000, ADDRESSES_PER_SWEEP);
  const byJob = new Map<string, typeof stale>();
  for (const address of stale) byJob.set(address.jobId, [...(byJob.get(address.jobId) ?? []), address]);
  const messages = [...byJob].flatMap(([jobId, addresses]) => workMessages(jobId, addresses));
  for (const message of messages) {
    await markRequeued(
      db,
      message.jobId,
      message.addresses.map((address) => address.idx),
      now,
    );
  }
  await enqueueBatchWork(queue, messages);
  const rechecks = await recoverRechecks(deps, now);
  return {
    rechecks,
    requeued: stale.length,
    failedJobs,
    refundedVerifications,
    finishedAtDeadline: pastDeadline.length,
  };
}
