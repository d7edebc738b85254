// Every path that ends a job with a recheckable answer plans the greylist follow-up (issue 21,
// item 11), and the follow-up charges the refunded addresses it answers (item 2, docs/money.md):
// a greylisting server that defers a new sender for 45 s, rounds 20 s and 50 s after completion.
// - at once: the server's retry point falls after the job's 30 s deadline;
// - at the deadline: the retry is out at a prober that does not answer before it;
// - after the last attempt (BATCH_MAX_ATTEMPTS = 2): the retry is greylisted again;
// - a list uploaded with the shortest deadline while no prober is linked: everything ends
//   `smtp_unavailable`, refunded; the round that answers it charges it — no free verification.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobListsRows } from '../../scripts/stack/job-store-files.ts';
import { untilValue } from '../eventually.ts';
import { balanceOf, okJson, SQL_POLL_MS, type System, sqlRows, startSystem } from './harness.ts';

let system: System;

/** How long the slow greylisting server defers a new triplet. */
const SLOW_GREYLIST_MS = 45_000;
const RECHECK_SCHEDULE_SECONDS = '20,50';
/** Past the last round (50 s after completion) with room for a loaded machine. */
const FOLLOW_UP_LIMIT_MS = 150_000;
/** Status polls, spaced to stay well inside the key's 100 requests a minute. */
const POLL_MS = 1_500;

interface Job {
  id: string;
  status: string;
  deliverableCount: number;
  unknownCount: number;
  creditsCharged: number;
  creditsRefunded: number;
  createdAt: string;
  completedAt: string | null;
  recheckedAt: string | null;
  nextRecheckAt: string | null;
}

beforeAll(async () => {
  system = await startSystem({
    slowGreylistDelayMs: SLOW_GREYLIST_MS,
    vars: { RECHECK_SCHEDULE_SECONDS, BATCH_MAX_ATTEMPTS: '2' },
  });
});

afterAll(async () => {
  await system?.close();
});

function ledgerOf(jobId: string): Promise<{ reason: string; delta: number; reference: string }[]> {
  return sqlRows(
    system,
    `SELECT reason, delta, reference FROM credit_ledger WHERE reference = '${jobId}' OR reference LIKE '${jobId}:%' ORDER BY id`,
  );
}

async function statusOf(jobId: string): Promise<Job> {
  return (await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${jobId}`))).job;
}

async function verdicts(jobId: string): Promise<string[]> {
  const { results } = await okJson<{ results: { email: string; status: string; subStatus: string }[] }>(
    await system.api(`/api/v1/bulk/results/${jobId}`),
  );
  return results.map((result) => `${result.email} ${result.status}/${result.subStatus}`);
}

async function upload(emails: string[], maxWaitSeconds: number): Promise<string> {
  const { jobId } = await okJson<{ jobId: string }>(
    await system.api('/api/v1/bulk/upload', { json: { emails, recheck: true, maxWaitSeconds } }),
  );
  return jobId;
}

/** The job once completed: the follow-up must be planned in the completing transaction. */
async function completed(jobId: string, limitMs = 90_000): Promise<Job> {
  return untilValue(
    async () => {
      const job = await statusOf(jobId);
      return job.status === 'completed' ? job : undefined;
    },
    `job ${jobId} completed`,
    limitMs,
    POLL_MS,
  );
}

/** The job once a round turned every unknown known. */
async function rechecked(jobId: string): Promise<Job> {
  return untilValue(
    async () => {
      const job = await statusOf(jobId);
      return job.recheckedAt && job.unknownCount === 0 ? job : undefined;
    },
    `a round answered job ${jobId}`,
    FOLLOW_UP_LIMIT_MS,
    POLL_MS,
  );
}

/** A refunded address that a round answered is charged then, in a row naming the job and round. */
async function expectChargedOnRecheck(jobId: string, uploaded: number, refunded: number): Promise<void> {
  const ledger = await ledgerOf(jobId);
  expect(ledger.slice(0, 2)).toEqual([
    { reason: 'bulk_charge', delta: -uploaded, reference: jobId },
    { reason: 'bulk_refund', delta: refunded, reference: jobId },
  ]);
  const recharged = ledger.slice(2);
  expect(recharged.every((row) => row.reason === 'recheck_charge')).toBe(true);
  expect(recharged.every((row) => /:round-[12]$/.test(row.reference))).toBe(true);
  expect(recharged.reduce((sum, row) => sum - row.delta, 0)).toBe(refunded);
}

// These two leave the prober alone and charge only their own jobs (their ledger rows are
// checked job by job), so they run side by side: each waits a minute for the server's delay.
describe.concurrent('greylist follow-up: planned on the paths that need no held prober', () => {
  it('plans it when the retry point falls after the deadline (final at once)', async () => {
    const slow = system.world.defendedDomains.slowgreylist;
    const accepted = `alice@${system.world.domains.accept}`;
    const jobId = await upload([`user-once1@${slow}`, `user-once2@${slow}`, accepted], 30);
    const job = await completed(jobId);
    // Before its deadline: the greylist retry would not have finished by it.
    expect(Date.parse(job.completedAt ?? '') - Date.parse(job.createdAt)).toBeLessThan(30_000);
    expect(job).toMatchObject({
      deliverableCount: 1,
      unknownCount: 2,
      creditsCharged: 3,
      creditsRefunded: 2,
    });
    expect(job.nextRecheckAt).not.toBeNull();
    expect(await verdicts(jobId)).toEqual([
      `user-once1@${slow} unknown/greylisted`,
      `user-once2@${slow} unknown/greylisted`,
      `${accepted} deliverable/accepted_email`,
    ]);

    const updated = await rechecked(jobId);
    expect(updated).toMatchObject({ deliverableCount: 3, creditsCharged: 5, creditsRefunded: 2 });
    await expectChargedOnRecheck(jobId, 3, 2);
  });

  it('plans it when the last attempt is greylisted again', async () => {
    const slow = system.world.defendedDomains.slowgreylist;
    const address = `user-twice@${slow}`;
    const jobId = await upload([address], 120);
    const job = await completed(jobId);
    // Two attempts (30 s apart), both inside the server's 45 s: done well before the deadline.
    expect(Date.parse(job.completedAt ?? '') - Date.parse(job.createdAt)).toBeLessThan(100_000);
    expect(job).toMatchObject({ unknownCount: 1, creditsCharged: 1, creditsRefunded: 1 });
    expect(job.nextRecheckAt).not.toBeNull();
    expect(await verdicts(jobId)).toEqual([`${address} unknown/greylisted`]);

    await rechecked(jobId);
    await expectChargedOnRecheck(jobId, 1, 1);
  });
});

describe("greylist follow-up: planned and charged when rcpt's prober is held or gone", () => {
  it('plans it when the deadline ends a retry a prober never answered', async () => {
    const slow = system.world.defendedDomains.slowgreylist;
    const address = `user-held@${slow}`;
    const before = await balanceOf(system);
    const jobId = await upload([address], 40);
    // The first answer is greylisting, kept while its retry (30 s later) is due before the deadline.
    await untilValue(
      async () => {
        const [row] = jobListsRows<{ sub_status: string }>(
          system.stack.d1.persistTo ?? '',
          jobId,
          "SELECT sub_status FROM job_addresses WHERE job_id = ?1 AND state != 'done' AND sub_status IS NOT NULL",
        );
        return row?.sub_status === 'greylisted' ? true : undefined;
      },
      'the greylisted answer is kept as provisional',
      undefined,
      SQL_POLL_MS,
    );
    const resume = system.holdProber();
    let job: Job;
    try {
      job = await completed(jobId);
    } finally {
      resume();
    }
    expect(job).toMatchObject({ unknownCount: 1, creditsCharged: 1, creditsRefunded: 1 });
    expect(job.nextRecheckAt).not.toBeNull();
    expect(await balanceOf(system)).toBe(before);

    const updated = await rechecked(jobId);
    expect(updated).toMatchObject({ deliverableCount: 1, creditsCharged: 2, creditsRefunded: 1 });
    expect(await verdicts(jobId)).toEqual([`${address} deliverable/accepted_email`]);
    expect(await balanceOf(system)).toBe(before - 1);
    await expectChargedOnRecheck(jobId, 1, 1);
  });

  it('charges the follow-up that answers a list refunded for want of a prober: no free verification', async () => {
    const accept = system.world.domains.accept;
    const emails = [`user-farm1@${accept}`, `user-farm2@${accept}`, `user-farm3@${accept}`];
    const before = await balanceOf(system);
    await system.stack.stopProber();
    let job: Job;
    let jobId: string;
    try {
      jobId = await upload(emails, 30);
      job = await completed(jobId);
    } finally {
      await system.stack.startProber();
    }
    expect(job).toMatchObject({ unknownCount: 3, creditsCharged: 3, creditsRefunded: 3 });
    expect(job.nextRecheckAt).not.toBeNull();
    expect(await verdicts(jobId)).toEqual(emails.map((email) => `${email} unknown/smtp_unavailable`));
    expect(await balanceOf(system)).toBe(before);

    const updated = await rechecked(jobId);
    expect(updated).toMatchObject({ deliverableCount: 3, creditsCharged: 6, creditsRefunded: 3 });
    expect(await balanceOf(system)).toBe(before - 3);
    await expectChargedOnRecheck(jobId, 3, 3);
  });
});
