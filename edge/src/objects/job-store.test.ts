// A job's JobStore object as the job's clock (docs/architecture.md, "Where a job's lists live"):
// its stale work handed back to the queue and its counters re-reported while the job runs, its
// free rows dropped at FREE_ROWS_RETENTION_DAYS, everything deleted past RETENTION_DAYS. The
// clock steps run on the job's own object storage, with a sink that records what it enqueues.
import { env } from 'cloudflare:workers';
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { describe, expect, it } from 'vitest';
import { countOf, db, ledgerOf, listsCountOf } from '../../test/fixtures.ts';
import { tickAt } from '../../test/job-store-clock.ts';
import { jobViewOf, liveJob } from '../../test/settle-deps.ts';
import { configOf } from '../config.ts';
import { addressResult } from '../services/batch/jobs.ts';
import { sandboxVerify } from '../services/verify/sandbox.ts';
import { jobLists } from '../storage/job-lists/index.ts';
import { failJob } from '../storage/job-results.ts';

const DAY = 86_400_000;
const config = configOf(env);
const LEASE_MS = config.BATCH_LEASE_SECONDS * 1000;
/** Two addresses, a duplicate of the first and an invalid row: two rows that cost nothing. */
const EMAILS = ['alice@clock.test', 'bob@clock.test', 'alice@clock.test', 'nope'];

function answered(email: string, as: string, now: number): VerificationResult {
  return { ...sandboxVerify(checkSyntax(`${as}@clock.test`), now), email };
}

describe("a job's object as its clock", () => {
  it('hands back work whose lease ran out and re-reports counters D1 missed, while the job runs', async () => {
    const now = Date.now();
    const { jobId } = await liveJob({ emails: EMAILS, now });
    expect(
      await countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ? AND rows_stored_at IS NOT NULL', jobId),
    ).toBe(1);
    // The lists' write only, as if the Worker died before D1's step.
    await jobLists(db(), jobId).recordFinal(
      [addressResult(0, answered(EMAILS[0]!, 'deliverable', now))],
      false,
    );
    expect(await jobViewOf(jobId)).toMatchObject({ processedEmails: 0 });

    // Within the lease: nothing is handed back, the counters are healed.
    const early = await tickAt(jobId, now + LEASE_MS - 1);
    expect(early.requeued).toEqual([]);
    expect(await jobViewOf(jobId)).toMatchObject({
      status: 'processing',
      processedEmails: 1,
      deliverableCount: 1,
    });
    expect(early.alarm).toBe(now + 2 * LEASE_MS - 1);

    // Past it: bob, still unanswered, goes back to the queue, his attempt counted.
    const late = await tickAt(jobId, now + LEASE_MS + 1);
    expect(late.requeued).toEqual([
      { jobId, addresses: [expect.objectContaining({ idx: 1, email: 'bob@clock.test', attempts: 0 })] },
    ]);
    expect(await jobLists(db(), jobId).stale(now + 2 * LEASE_MS + 2, 10)).toEqual([
      expect.objectContaining({ idx: 1, attempts: 1 }),
    ]);
    expect((await tickAt(jobId, now + LEASE_MS + 2)).requeued).toEqual([]);
  });

  it('stops asking once D1 no longer runs the job: a failed job waits for its retention only', async () => {
    const now = Date.now();
    const { jobId } = await liveJob({ emails: EMAILS, now });
    expect(await failJob(db(), jobId, 'The job did not finish.', now)).toBe(true);
    const tick = await tickAt(jobId, now + LEASE_MS + 1);
    expect(tick.requeued).toEqual([]);
    expect(tick.alarm).toBe(now + config.FREE_ROWS_RETENTION_DAYS * DAY);
  });

  it('completes a job whose last report D1 missed, once', async () => {
    const now = Date.now();
    const { jobId, accountId } = await liveJob({ emails: EMAILS, now });
    await jobLists(db(), jobId).recordFinal(
      [
        addressResult(0, answered(EMAILS[0]!, 'deliverable', now)),
        addressResult(1, answered(EMAILS[1]!, 'greylisted', now), true),
      ],
      false,
    );
    await tickAt(jobId, now + 1);
    expect(await jobViewOf(jobId)).toMatchObject({
      status: 'completed',
      processedEmails: 2,
      creditsRefunded: 1,
    });
    await tickAt(jobId, now + 2);
    expect((await ledgerOf(accountId)).filter((entry) => entry.reason === 'bulk_refund')).toHaveLength(1);
  });

  it('drops its free rows at FREE_ROWS_RETENTION_DAYS and deletes everything a day past RETENTION_DAYS', async () => {
    const now = Date.now();
    const { jobId } = await liveJob({ emails: EMAILS, now });
    await jobLists(db(), jobId).recordFinal(
      [0, 1].map((idx) => addressResult(idx, answered(EMAILS[idx]!, 'deliverable', now))),
      false,
    );
    const rows = (sql = 'SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?') => listsCountOf(sql, jobId);
    expect(await rows()).toBe(4);
    const freeRowsAt = now + config.FREE_ROWS_RETENTION_DAYS * DAY;
    const deleteAt = now + (config.RETENTION_DAYS + 1) * DAY;
    expect((await tickAt(jobId, freeRowsAt - 1)).alarm).toBe(freeRowsAt);
    expect(await rows()).toBe(4);
    expect((await tickAt(jobId, freeRowsAt)).alarm).toBe(deleteAt);
    expect(await rows()).toBe(2);
    expect((await tickAt(jobId, deleteAt)).alarm).toBeNull();
    expect(await rows()).toBe(0);
    expect(await rows('SELECT COUNT(*) AS n FROM job_addresses WHERE job_id = ?')).toBe(0);
  });
});
