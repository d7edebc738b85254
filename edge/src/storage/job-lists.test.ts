// A job's lists and D1 as two stores (docs/architecture.md, "Where a job's lists live"): a lists
// write reports the job's counters with a write sequence number, D1 applies the latest report
// once; a crash between the two is healed by replaying the write, and a follow-up round's charge
// is taken once even when its answers are recorded again after a crash.
import { env } from 'cloudflare:workers';
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { describe, expect, it } from 'vitest';
import { balanceOf, countOf, db, ledgerOf, newCaller, quotas } from '../../test/fixtures.ts';
import { jobViewOf, liveJob, recordingDeps } from '../../test/settle-deps.ts';
import { rowsFromJson } from '../services/batch/input.ts';
import { addressResult, createBatchJob } from '../services/batch/jobs.ts';
import { sandboxVerify } from '../services/verify/sandbox.ts';
import { addressFilterOf, filterMayHold } from './address-filter.ts';
import { latestBatchVerdicts } from './batch-verdicts.ts';
import { createDb, prepare } from './db.ts';
import { jobLists } from './job-lists/index.ts';
import { findStaleAddresses } from './job-recovery.ts';
import { applyReport, recordResults } from './job-results.ts';
import { chargeRecheckedAddresses } from './ledger.ts';
import { claimRecheckRound, recordRecheckAnswers } from './rechecks.ts';

function answered(email: string, as: string, now: number): VerificationResult {
  return { ...sandboxVerify(checkSyntax(`${as}@lists.test`), now), email };
}

const EMAILS = ['alice@lists.test', 'bob@lists.test'];

describe("a job's lists and its row", () => {
  it('heals a settlement whose D1 step never ran: the replay completes and refunds the job once', async () => {
    const now = Date.now();
    const { jobId, accountId } = await liveJob({ emails: EMAILS, now });
    const results = [
      addressResult(0, answered(EMAILS[0]!, 'deliverable', now)),
      addressResult(1, answered(EMAILS[1]!, 'greylisted', now), true),
    ];
    // The lists' write only, as if the Worker died before D1's step.
    const lost = await jobLists(db(), jobId).recordFinal(results, false);
    expect(lost).toMatchObject({ processed: 2, pending: 0, refundable: 1 });
    expect(await jobViewOf(jobId)).toMatchObject({ status: 'processing', processedEmails: 0 });
    expect(await balanceOf(accountId)).toBe(8);

    // The redelivered message writes the same answers: nothing changes in the lists, the job completes.
    expect(await recordResults(db(), jobId, results, now + 1)).toEqual({
      completed: true,
      recheckDueAt: null,
    });
    expect(await jobViewOf(jobId)).toMatchObject({
      status: 'completed',
      processedEmails: 2,
      deliverableCount: 1,
      unknownCount: 1,
      creditsRefunded: 1,
    });
    expect(await balanceOf(accountId)).toBe(9);
    // Once more: nothing.
    expect(await recordResults(db(), jobId, results, now + 2)).toEqual({
      completed: false,
      recheckDueAt: null,
    });
    expect(await balanceOf(accountId)).toBe(9);
    expect((await ledgerOf(accountId)).filter((entry) => entry.reason === 'bulk_refund')).toHaveLength(1);
  });

  it('applies the latest report only: an earlier one arriving late changes nothing', async () => {
    const now = Date.now();
    const { jobId } = await liveJob({ emails: EMAILS, now });
    const lists = jobLists(db(), jobId);
    const first = await lists.recordFinal(
      [addressResult(0, answered(EMAILS[0]!, 'deliverable', now))],
      false,
    );
    const second = await lists.recordFinal(
      [addressResult(1, answered(EMAILS[1]!, 'deliverable', now))],
      false,
    );
    expect(second.seq).toBeGreaterThan(first.seq);
    expect((await applyReport(db(), jobId, second, now, null)).completed).toBe(true);
    expect((await applyReport(db(), jobId, first, now, null)).completed).toBe(false);
    expect(await jobViewOf(jobId)).toMatchObject({
      status: 'completed',
      processedEmails: 2,
      deliverableCount: 2,
    });
    expect(await countOf('SELECT lists_seq AS n FROM jobs WHERE id = ?', jobId)).toBe(second.seq);
  });

  it("charges a round's answer once when the lists' record after the charge was lost", async () => {
    const now = Date.now();
    const { jobId, accountId } = await liveJob({ emails: EMAILS, now, recheck: true });
    await recordResults(
      db(),
      jobId,
      [
        addressResult(0, answered(EMAILS[0]!, 'deliverable', now)),
        { ...addressResult(1, answered(EMAILS[1]!, 'greylisted', now), true), recheckable: true },
      ],
      now,
      1000,
    );
    expect(await balanceOf(accountId)).toBe(9);
    const round = await claimRecheckRound(db(), {
      jobId,
      round: 0,
      now: now + 1000,
      endsAt: now + 60_000,
      nextAfterMs: null,
    });
    expect(round?.addresses.map((address) => address.idx)).toEqual([1]);
    // D1's charge of the group, then the Worker dies before the lists record the answer.
    const d1 = env.DB;
    await d1.batch(chargeRecheckedAddresses(jobId, [1], now + 2000).map((s) => prepare(d1, s)));
    expect(await balanceOf(accountId)).toBe(8);

    const known = answered(EMAILS[1]!, 'deliverable', now + 3000);
    const verdict = { ...addressResult(1, known), refundable: false };
    const closed = await recordRecheckAnswers(
      db(),
      jobId,
      [{ idx: 1, verdict, askAgain: false }],
      now + 3000,
    );
    expect(closed).toEqual({ changes: 1 });
    expect(await balanceOf(accountId)).toBe(8);
    expect((await ledgerOf(accountId)).filter((entry) => entry.reason === 'recheck_charge')).toEqual([
      expect.objectContaining({ delta: -1, reference: `${jobId}:round-1` }),
    ]);
    expect(await jobViewOf(jobId)).toMatchObject({
      deliverableCount: 2,
      creditsCharged: 3,
      creditsRefunded: 1,
    });
    // And the answer once more: nothing.
    expect(
      await recordRecheckAnswers(db(), jobId, [{ idx: 1, verdict, askAgain: false }], now + 4000),
    ).toBeNull();
    expect(await balanceOf(accountId)).toBe(8);
  });

  it("finds stale addresses of D1's jobs job by job, each job's lists asked for its own", async () => {
    const now = Date.now();
    const jobs = [
      await liveJob({ emails: EMAILS, now, store: 'd1' }),
      await liveJob({ emails: EMAILS, now, store: 'd1' }),
    ];
    // A job in its object sweeps its own (objects/job-store.ts): the cron's sweep leaves it.
    const inObject = await liveJob({ emails: EMAILS, now });
    const stale = await findStaleAddresses(db(), now + 1, 1000);
    expect(stale.filter((address) => address.jobId === inObject.jobId)).toEqual([]);
    for (const { jobId } of jobs) {
      expect(stale.filter((address) => address.jobId === jobId).map((address) => address.email)).toEqual(
        EMAILS,
      );
    }
    expect(await findStaleAddresses(db(), now + 1, 1)).toHaveLength(1);
    expect(await findStaleAddresses(db(), now - 1, 1000)).toEqual(
      expect.not.arrayContaining([expect.objectContaining({ jobId: jobs[0]!.jobId })]),
    );
  });
});

describe("a job's address filter", () => {
  it('holds every address it was built of, and about 1 % of the others', () => {
    const addresses = Array.from({ length: 10_000 }, (_, index) => `user${index}@example.test`);
    const filter = addressFilterOf(addresses);
    expect(filter?.byteLength).toBe(12_000);
    expect(addresses.every((address) => filterMayHold(filter!, address))).toBe(true);
    const others = Array.from({ length: 10_000 }, (_, index) => `other${index}@example.test`);
    const held = others.filter((address) => filterMayHold(filter!, address)).length;
    expect(held).toBeLessThan(200);
    expect(addressFilterOf([])).toBeNull();
  });
});

describe("an outcome's batch verdict", () => {
  it("reads only the lists of the account's jobs whose address filter may hold the email, the latest first", async () => {
    const now = Date.now();
    const caller = await newCaller({ credits: 10 });
    const upload = async (emails: string[], at: number) =>
      (
        await createBatchJob({
          db: db(),
          queue: recordingDeps().deps.queue,
          caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: 10 },
          upload: rowsFromJson(emails),
          source: 'json',
          name: null,
          webhookUrl: null,
          maxWaitSeconds: null,
          quotas: quotas(),
          // D1's statements are recorded below; which jobs are asked is the same in either store.
          store: 'd1',
          now: at,
        })
      ).jobId;
    const older = await upload(['alice@lists.test'], now - 2000);
    const newer = await upload(['bob@lists.test'], now - 1000);
    await recordResults(
      db(),
      older,
      [addressResult(0, answered('alice@lists.test', 'deliverable', now))],
      now,
    );
    await recordResults(db(), newer, [addressResult(0, answered('bob@lists.test', 'deliverable', now))], now);
    // Which jobs' lists are read: the job bound to each statement on job_addresses.
    const asked: unknown[] = [];
    const recording = new Proxy(env.DB, {
      get(target, property) {
        if (property !== 'prepare') return Reflect.get(target, property).bind(target);
        return (sql: string) => {
          const statement = target.prepare(sql);
          if (!sql.includes('FROM job_addresses')) return statement;
          return {
            bind: (...values: unknown[]) => {
              asked.push(values[0]);
              return statement.bind(...values);
            },
          };
        };
      },
    });
    const found = await latestBatchVerdicts(createDb(recording as D1Database), {
      accountId: caller.accountId,
      mode: 'live',
      windowMs: 60_000,
      outcomes: [
        { email: 'alice@lists.test', at: now },
        { email: 'carol@lists.test', at: now },
      ],
    });
    expect(found).toEqual([expect.objectContaining({ index: 0, ref: older, status: 'deliverable' })]);
    expect(asked).toEqual([older]);
    // Outside the window, nothing is asked.
    asked.length = 0;
    const late = { accountId: caller.accountId, mode: 'live' as const, windowMs: 500 };
    expect(
      await latestBatchVerdicts(createDb(recording as D1Database), {
        ...late,
        outcomes: [{ email: 'alice@lists.test', at: now }],
      }),
    ).toEqual([]);
    expect(asked).toEqual([]);
  });
});
