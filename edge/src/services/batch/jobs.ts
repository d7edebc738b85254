// Batch jobs for API callers: upload (plan, charge and create atomically, then enqueue by
// domain) and the job's status view. Its results are read in downloads.ts.
import {
  type BulkUploadResponse,
  type Job,
  MAX_MAX_WAIT_SECONDS,
  type VerificationResult,
} from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import { createJobWithCharge } from '../../storage/job-creation.ts';
import { type JobStoreKind, NEW_JOB_STORE } from '../../storage/job-lists/index.ts';
import type { AddressResult } from '../../storage/job-results.ts';
import { addressesAhead, type JobRow } from '../../storage/jobs.ts';
import { defaultWatchDays } from '../../storage/watches.ts';
import type { Caller } from '../keys/api-keys.ts';
import {
  dailyStorageFull,
  insufficientCredits,
  type Quotas,
  quotaExceeded,
  utcDayStart,
} from '../money/quotas.ts';
import { listNeedsConfirmedEmail, unconfirmedMayStore } from '../money/storage-policy.ts';
import { sandboxVerify } from '../verify/sandbox.ts';
import { jobBounceEstimate } from './bounce-estimate.ts';
import { type DomainPace, estimateBatchSeconds, listPaces, type UnknownDomain } from './estimate.ts';
import type { ParsedUpload } from './input.ts';
import { planBatch } from './plan.ts';
import { type BatchMessage, enqueueBatchWork, workMessages } from './queue.ts';

/** The default deadline: this long for any list, plus 1 s per ADDRESSES_PER_DEADLINE_SECOND. */
const BASE_DEADLINE_SECONDS = 180;

const ADDRESSES_PER_DEADLINE_SECOND = 25;

/** The deadline message arrives this long after the deadline, so probes cut at it can report. */
const DEADLINE_GRACE_SECONDS = 2;

/** The deadline of a job of `totalEmails` addresses with no `maxWaitSeconds` of its own. */
export function defaultMaxWaitSeconds(totalEmails: number): number {
  return Math.min(
    MAX_MAX_WAIT_SECONDS,
    BASE_DEADLINE_SECONDS + Math.ceil(totalEmails / ADDRESSES_PER_DEADLINE_SECOND),
  );
}

export function defaultDeadlineAt(totalEmails: number, now: number): number {
  return now + defaultMaxWaitSeconds(totalEmails) * 1000;
}

export interface UploadInput {
  /** The new job's id, when the caller needs it first (an Idempotency-Key names its charge); else made here. */
  jobId?: string;
  db: Db;
  queue: Queue<BatchMessage>;
  caller: Caller;
  upload: ParsedUpload;
  source: 'json' | 'csv';
  name: string | null;
  webhookUrl: string | null;
  /** The job's deadline in seconds after upload; default from its size. */
  maxWaitSeconds: number | null;
  /** Greylist follow-up after completion; null or absent: the account's setting. */
  recheck?: boolean | null;
  /** Each result carries the evidence behind its answer (docs/verdicts.md, "Evidence"). */
  evidence?: boolean;
  /** Days the completed job watches its domains; 'off': not watched; null or absent: the account's setting. */
  watchDays?: number | 'off' | null;
  /**
   * The account's quotas and the store's daily write budget (docs/operations.md): a job past one
   * is refused, nothing stored.
   */
  quotas: Quotas;
  /**
   * The probe slots of the fleet that will take the work (`linkedProbeSlots`), for the estimate;
   * absent: one prober at its default capacity.
   */
  probeSlots?: () => Promise<number>;
  /**
   * Learns the paces of the list's domains rcpt does not know, for the estimate
   * (`samplePaces`); absent: they count as ordinary.
   */
  samplePaces?: (unknown: readonly UnknownDomain[]) => Promise<DomainPace[]>;
  /** Where the job's lists live; absent: where new jobs' live (`NEW_JOB_STORE`). */
  store?: JobStoreKind;
  now: number;
}

/** The slots assumed when the fleet is not asked: one prober at its default CAPACITY. */
const ASSUMED_PROBE_SLOTS = 50;

/**
 * Creates the job and puts its work, one message a domain, on the verify-batch queue. What
 * follows: `queues/verify-batch.ts` takes the messages and hands them to the probers, and each
 * answer is settled by `settleBatchWork` (`settlement.ts`), which asks `verdictFromFacts`
 * what the reply means and keeps it, or asks it again later at the pace its policy names.
 */
export async function createBatchJob(input: UploadInput): Promise<BulkUploadResponse> {
  const { db, caller, upload, now } = input;
  if (upload.rows.length === 0) throw new ApiError('VALIDATION_ERROR', { message: 'The list has no rows.' });
  const plan = planBatch(upload.rows, now);
  const jobId = input.jobId ?? crypto.randomUUID();
  const sandbox = caller.mode === 'test';
  const rows = plan.rows.map((row) => ({
    row: row.row,
    input: row.input,
    addressIdx: row.addressIdx,
    resultJson: row.result ? JSON.stringify(row.result) : null,
  }));
  // Test keys answer every address at once from the sandbox, free of charge.
  const addresses = sandbox
    ? plan.addresses.map((address) => ({
        ...address,
        result: addressResult(address.idx, sandboxVerify(checkSyntax(address.email), now)),
      }))
    : plan.addresses;
  const counts = plan.counts;
  const maxWaitSeconds = input.maxWaitSeconds ?? defaultMaxWaitSeconds(counts.totalEmails);
  // Read before the charge: nothing that can fail runs between the charge and the answer.
  const estimatedSeconds = sandbox
    ? 0
    : await estimateUpload(input, plan.addresses, maxWaitSeconds, counts.totalEmails);
  const deadlineAt = now + maxWaitSeconds * 1000;
  const charge = sandbox ? 0 : counts.totalEmails;
  // Only a job that is still running after its upload holds a slot in flight.
  const staysInFlight = !sandbox && counts.totalEmails > 0;
  const creation = await createJobWithCharge(
    db,
    {
      id: jobId,
      accountId: caller.accountId,
      apiKeyId: caller.apiKeyId,
      name: input.name,
      source: input.source,
      ...counts,
      charge,
      csvHeaders: upload.headers,
      csvCells: upload.cells,
      webhookUrl: input.webhookUrl,
      deadlineAt,
      // Sandbox answers are made up at once: nothing to ask again.
      recheck: sandbox ? false : (input.recheck ?? null),
      // Sandbox answers come from no SMTP session: there is no evidence to keep.
      evidence: !sandbox && (input.evidence ?? false),
      // Sandbox answers never change, and its jobs send no events: nothing to watch.
      watchDays: sandbox ? 'off' : (input.watchDays ?? (await defaultWatchDays(db, caller.accountId))),
      store: input.store ?? NEW_JOB_STORE,
      now,
    },
    rows,
    addresses,
    {
      jobsInFlight: staysInFlight ? input.quotas.jobsInFlight : null,
      storage: input.quotas.storage,
      storageDay: utcDayStart(now),
      globalStorageBytes: input.quotas.globalStorageBytesPerDay,
      unconfirmedMayStore: unconfirmedMayStore(caller.mode, counts.totalRows),
    },
  );
  if (!creation.created) {
    const { usage } = creation;
    if (!usage.confirmationAllows) throw listNeedsConfirmedEmail(counts.totalRows);
    if (!usage.creditsCover) throw await insufficientCredits(db, caller.accountId, counts.totalEmails);
    if (!usage.inFlightFits) {
      throw quotaExceeded({
        quota: 'jobs_in_flight',
        limit: input.quotas.jobsInFlight,
        used: usage.jobsInFlight,
        requested: 1,
        now,
      });
    }
    if (!usage.storageFits) {
      throw quotaExceeded({
        quota: 'storage_bytes_per_day',
        limit: usage.storageLimit,
        used: usage.storageBytes,
        requested: usage.jobBytes,
        now,
      });
    }
    if (!usage.globalFits) {
      log.warn('a list was refused: the daily write budget is used up', {
        jobD1Bytes: usage.jobD1Bytes,
        d1UsedBytes: usage.globalStorageBytes,
        limitBytes: input.quotas.globalStorageBytesPerDay,
      });
      throw dailyStorageFull(now);
    }
    throw new Error(`job ${jobId} was not stored, and no condition says why`);
  }
  if (!sandbox && plan.addresses.length > 0) {
    try {
      await enqueueBatchWork(input.queue, workMessages(jobId, plan.addresses));
      await enqueueBatchWork(
        input.queue,
        [{ kind: 'deadline', jobId }],
        maxWaitSeconds + DEADLINE_GRACE_SECONDS,
      );
    } catch (cause) {
      // The job is charged and stored, its addresses queued in D1: the recovery sweep
      // enqueues them once their lease runs out, and finishes the job at its deadline if
      // the deadline message was not sent, so the caller gets its job id, not a 500.
      log.error('enqueue failed; recovery will enqueue', { jobId, ...errorFields(cause) });
    }
  }
  return {
    success: true,
    jobId,
    totalEmails: counts.totalEmails,
    duplicateCount: counts.duplicateCount,
    skippedRows: counts.skippedRows,
    emptyRows: counts.emptyRows,
    invalidRows: counts.invalidRows,
    // What rcpt knows of the list's domains and of the fleet (estimate.ts), never past the deadline.
    estimatedTimeSeconds: estimatedSeconds,
    creditsCharged: charge,
  };
}

/**
 * The upload's `estimatedTimeSeconds` (estimate.ts): the list's known paces, with those of its
 * unknown domains the sample learns in the meantime, the fleet's slots and the work ahead. A
 * list the balance does not cover is refused after this: its domains are not sampled.
 */
async function estimateUpload(
  input: UploadInput,
  addresses: readonly { email: string; domain: string }[],
  deadlineSeconds: number,
  totalEmails: number,
): Promise<number> {
  const { db, now } = input;
  const [known, probeSlots, ahead] = await Promise.all([
    listPaces(db, addresses, now),
    input.probeSlots ? input.probeSlots() : ASSUMED_PROBE_SLOTS,
    addressesAhead(db),
  ]);
  const sample = input.samplePaces;
  // Sampled only when a prober is linked to answer (with none, the probes would wait out the
  // sample for nothing); and never failing the upload: what it did not learn counts as ordinary.
  const sampled =
    sample &&
    known.unknown.length > 0 &&
    input.caller.creditBalance >= totalEmails &&
    probeSlots > 0 &&
    Number.isFinite(probeSlots)
      ? await sample(known.unknown).catch((cause: unknown): DomainPace[] => {
          log.warn('the upload could not sample its unknown domains', errorFields(cause));
          return [];
        })
      : [];
  return estimateBatchSeconds({
    addresses: addresses.length,
    paces: [...known.paces, ...sampled],
    probeSlots,
    addressesAhead: ahead,
    deadlineSeconds,
  });
}

/** A final result as the job stores it; `refundable` is its policy (SUB_STATUS_TABLE, docs/money.md). */
export function addressResult(idx: number, result: VerificationResult, refundable = false): AddressResult {
  return {
    idx,
    status: result.status,
    subStatus: result.subStatus,
    catchAll: result.checks.isCatchAll,
    refundable,
    resultJson: JSON.stringify(result),
  };
}

/** The job as the status endpoint shows it. */
export function jobView(job: JobRow): Job {
  const progress = job.totalEmails === 0 ? 100 : Math.floor((job.processedEmails / job.totalEmails) * 100);
  return {
    id: job.id,
    name: job.name,
    status: job.status,
    progress: job.status === 'completed' ? 100 : Math.min(progress, 99),
    totalEmails: job.totalEmails,
    processedEmails: job.processedEmails,
    deliverableCount: job.deliverableCount,
    undeliverableCount: job.undeliverableCount,
    riskyCount: job.riskyCount,
    unknownCount: job.unknownCount,
    catchAllCount: job.catchAllCount,
    createdAt: new Date(job.createdAt).toISOString(),
    completedAt: job.completedAt === null ? null : new Date(job.completedAt).toISOString(),
    deadlineAt: job.deadlineAt === null ? null : new Date(job.deadlineAt).toISOString(),
    bounceEstimate: jobBounceEstimate(job),
    creditsCharged: job.creditsCharged,
    creditsRefunded: job.creditsRefunded,
    failureReason: job.failureReason,
    recheck: job.recheck === 1,
    recheckedAt: job.recheckedAt === null ? null : new Date(job.recheckedAt).toISOString(),
    nextRecheckAt: job.recheckDueAt === null ? null : new Date(job.recheckDueAt).toISOString(),
    evidence: job.evidence === 1,
    watchDays: job.watchDays,
    watchedUntil: job.watchUntil === null ? null : new Date(job.watchUntil).toISOString(),
  };
}

export function notFoundJob(): ApiError {
  return new ApiError('NOT_FOUND', { message: 'No such job for this account.' });
}
