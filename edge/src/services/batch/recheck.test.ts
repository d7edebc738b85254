// Greylist follow-up: a completed job with `recheck` asks its temporary answers again in
// rounds; a round that changes a verdict updates the job (still completed), charges the refunded
// addresses it answered as far as the balance covers, and writes one job.updated event;
// replays, lost messages and lost probes change nothing twice.
import { env } from 'cloudflare:workers';
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { failingD1 } from '../../../test/failing-d1.ts';
import { balanceOf, db, ledgerOf, listsRows, newCaller, quotas } from '../../../test/fixtures.ts';
import { jobViewOf, liveJob, receiveWebhooks, recordingDeps } from '../../../test/settle-deps.ts';
import { configOf } from '../../config.ts';
import { createDb } from '../../storage/db.ts';
import { recordResults } from '../../storage/job-results.ts';
import { findJobById } from '../../storage/jobs.ts';
import { changeAccountSettings } from '../accounts/settings.ts';
import { sandboxVerify } from '../verify/sandbox.ts';
import { readJobResults } from './downloads.ts';
import { rowsFromJson } from './input.ts';
import { addressResult, createBatchJob } from './jobs.ts';
import type { RecheckMessage, WorkMessage } from './queue.ts';
import { recoverRechecks, startRecheckRound } from './recheck.ts';
import { recheckAnswerOf, recordRecheck } from './results.ts';

const FIRST_ROUND_MS = 900_000;

afterEach(() => vi.restoreAllMocks());

function answered(email: string, as: string, now: number): VerificationResult {
  return { ...sandboxVerify(checkSyntax(`${as}@recheck.test`), now), email };
}

async function recheckJob(options: { recheck?: boolean; now: number; webhook?: boolean }) {
  return liveJob({ ...options, emails: ['alice@recheck.test', 'bob@recheck.test'] });
}

/** alice deliverable; bob greylisted (recheckable unless said otherwise) — the job completes. */
async function complete(jobId: string, now: number, bobRecheckable = true) {
  return recordResults(
    db(),
    jobId,
    [
      addressResult(0, answered('alice@recheck.test', 'deliverable', now)),
      {
        ...addressResult(1, answered('bob@recheck.test', 'greylisted', now), true),
        recheckable: bobRecheckable,
      },
    ],
    now,
    FIRST_ROUND_MS,
  );
}

async function eventsOf(jobId: string) {
  const { results } = await env.DB.prepare(
    'SELECT id, event_type AS type FROM webhook_deliveries WHERE job_id = ? ORDER BY created_at, id',
  )
    .bind(jobId)
    .all<{ id: string; type: string }>();
  return results;
}

async function recheckStateOf(jobId: string, idx: number): Promise<string | null> {
  const [row] = await listsRows<{ recheck: string | null }>(
    'SELECT recheck FROM job_addresses WHERE job_id = ? AND idx = ?',
    jobId,
    idx,
  );
  return row?.recheck ?? null;
}

describe('greylist follow-up', () => {
  it('asks a greylisted answer again after completion and turns it deliverable: once, charged then, one job.updated', async () => {
    const received = receiveWebhooks();
    const now = Date.now();
    const { jobId, accountId } = await recheckJob({ recheck: true, now, webhook: true });
    const completion = await complete(jobId, now);
    expect(completion).toEqual({ completed: true, recheckDueAt: now + FIRST_ROUND_MS });
    expect(await jobViewOf(jobId)).toMatchObject({
      status: 'completed',
      recheck: true,
      recheckedAt: null,
      nextRecheckAt: new Date(now + FIRST_ROUND_MS).toISOString(),
      deliverableCount: 1,
      unknownCount: 1,
      creditsRefunded: 1,
    });
    expect(await balanceOf(accountId)).toBe(9);

    // The round's message: its work goes out marked with the round, and the next is planned.
    const { deps, sent, settled } = recordingDeps();
    const message: RecheckMessage = { kind: 'recheck', jobId, round: 0, dueAt: now + FIRST_ROUND_MS };
    const started = now + FIRST_ROUND_MS;
    await startRecheckRound(deps, message, started);
    const work = sent.filter(
      (body): body is WorkMessage => body.kind !== 'recheck' && body.kind !== 'deadline',
    );
    expect(work).toEqual([
      {
        kind: 'work',
        jobId,
        domain: 'recheck.test',
        attempt: 0,
        recheckRound: 1,
        addresses: [{ idx: 1, email: 'bob@recheck.test' }],
      },
    ]);
    const secondRound = configOf(env).RECHECK_SCHEDULE_SECONDS[1] ?? 0;
    expect(sent.filter((body) => body.kind === 'recheck')).toEqual([
      { kind: 'recheck', jobId, round: 1, dueAt: now + secondRound * 1000 },
    ]);
    // A replayed message claims nothing.
    sent.length = 0;
    await startRecheckRound(deps, message, started + 1);
    expect(sent).toEqual([]);

    const later = started + 5_000;
    const accepted = answered('bob@recheck.test', 'deliverable', later);
    const answer = recheckAnswerOf(1, accepted, { retry: 'none', refundable: false });
    await recordRecheck(deps, jobId, [answer], later);
    await settled();
    const updated = await jobViewOf(jobId);
    expect(updated).toMatchObject({
      status: 'completed',
      recheckedAt: new Date(later).toISOString(),
      nextRecheckAt: null,
      processedEmails: 2,
      deliverableCount: 2,
      unknownCount: 0,
      creditsCharged: 3,
      creditsRefunded: 1,
    });
    const results = await readJobResults(db(), (await findJobById(db(), jobId)) ?? never(), {
      offset: 0,
      limit: 10,
    });
    expect(results.results.map((result) => [result.email, result.status])).toEqual([
      ['alice@recheck.test', 'deliverable'],
      ['bob@recheck.test', 'deliverable'],
    ]);
    // Refunded at completion, known now: charged now, in a row that names the job and the round —
    // a refund never turns a known verdict into zero credits (docs/money.md).
    expect(await balanceOf(accountId)).toBe(8);
    expect((await ledgerOf(accountId)).filter((entry) => entry.reference.startsWith(jobId))).toEqual([
      { delta: -2, reason: 'bulk_charge', reference: jobId },
      { delta: 1, reason: 'bulk_refund', reference: jobId },
      { delta: -1, reason: 'recheck_charge', reference: `${jobId}:round-1` },
    ]);
    const eventId = `msg_${jobId.replaceAll('-', '')}_updated_1`;
    expect((await eventsOf(jobId)).map((event) => event.type)).toEqual(['job.completed', 'job.updated']);
    const event = received.find((delivery) => delivery.id === eventId);
    expect(JSON.parse(event?.body ?? '{}')).toMatchObject({
      type: 'job.updated',
      data: {
        changedAddresses: 1,
        job: { id: jobId, status: 'completed', deliverableCount: 2, unknownCount: 0 },
      },
    });

    // The same answer again (a replayed probe) changes nothing, charges nothing, sends nothing.
    await recordRecheck(deps, jobId, [answer], later + 1_000);
    await settled();
    expect(await jobViewOf(jobId)).toEqual(updated);
    expect(await eventsOf(jobId)).toHaveLength(2);
    expect(await balanceOf(accountId)).toBe(8);
  });

  it('charges refunded addresses a round answers only as far as the balance covers; the rest waits, never below zero', async () => {
    const now = Date.now();
    const caller = await newCaller({ credits: 5 });
    const { deps, settled } = recordingDeps();
    const upload = (emails: string[]) =>
      createBatchJob({
        db: db(),
        queue: deps.queue,
        caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: 5 },
        upload: rowsFromJson(emails),
        source: 'json',
        name: null,
        webhookUrl: null,
        maxWaitSeconds: null,
        recheck: true,
        quotas: quotas(),
        now,
      });
    const emails = ['ann@recheck.test', 'ben@recheck.test', 'cat@recheck.test', 'dan@recheck.test'];
    const { jobId } = await upload(emails);
    // ann deliverable; ben mailbox_not_found; cat and dan greylisted, refunded at completion.
    await recordResults(
      db(),
      jobId,
      [
        addressResult(0, answered(emails[0] ?? '', 'deliverable', now)),
        addressResult(1, answered(emails[1] ?? '', 'undeliverable', now)),
        { ...addressResult(2, answered(emails[2] ?? '', 'greylisted', now), true), recheckable: true },
        { ...addressResult(3, answered(emails[3] ?? '', 'greylisted', now), true), recheckable: true },
      ],
      now,
      FIRST_ROUND_MS,
    );
    expect(await balanceOf(caller.accountId)).toBe(3);
    await upload(['eve@elsewhere.test', 'fay@elsewhere.test']);
    expect(await balanceOf(caller.accountId)).toBe(1);

    const round = async (number: number, at: number) => {
      await startRecheckRound(deps, { kind: 'recheck', jobId, round: number - 1, dueAt: at }, at);
      const known = [2, 3].map((idx) =>
        recheckAnswerOf(idx, answered(emails[idx] ?? '', 'deliverable', at), {
          retry: 'none',
          refundable: false,
        }),
      );
      await recordRecheck(deps, jobId, known, at);
      await settled();
    };
    const first = now + FIRST_ROUND_MS;
    await round(1, first);
    // One credit left: cat (the lower index) is answered and charged; dan keeps its answer, due again.
    expect(await balanceOf(caller.accountId)).toBe(0);
    expect(await recheckStateOf(jobId, 2)).toBeNull();
    expect(await recheckStateOf(jobId, 3)).toBe('due');
    expect(await jobViewOf(jobId)).toMatchObject({ deliverableCount: 2, unknownCount: 1, creditsCharged: 5 });
    const secondAt = now + (configOf(env).RECHECK_SCHEDULE_SECONDS[1] ?? 0) * 1000;
    await round(2, secondAt);
    // Nothing left to pay with: dan's answer is not taken, and the balance stays at zero.
    expect(await balanceOf(caller.accountId)).toBe(0);
    expect(await recheckStateOf(jobId, 3)).toBe('due');
    expect(await jobViewOf(jobId)).toMatchObject({ deliverableCount: 2, unknownCount: 1, creditsCharged: 5 });
    expect((await ledgerOf(caller.accountId)).filter((entry) => entry.reason === 'recheck_charge')).toEqual([
      { delta: -1, reason: 'recheck_charge', reference: `${jobId}:round-1` },
    ]);
  });

  it('takes the job’s recheck from a caller that read it with the job’s row: its results write reads nothing first', async () => {
    const now = Date.now();
    // A read of the job's recheck would fail: the write must not need one.
    const noRecheckRead = createDb(failingD1(env.DB, /^\s*SELECT recheck FROM jobs/));
    const answers = (domain: string) => [
      addressResult(0, answered(`alice@${domain}`, 'deliverable', now)),
      { ...addressResult(1, answered(`bob@${domain}`, 'greylisted', now), true), recheckable: true },
    ];
    const on = await recheckJob({ recheck: true, now });
    expect(
      await recordResults(noRecheckRead, on.jobId, answers('recheck.test'), now, FIRST_ROUND_MS, true),
    ).toEqual({
      completed: true,
      recheckDueAt: now + FIRST_ROUND_MS,
    });
    expect(await recheckStateOf(on.jobId, 1)).toBe('due');
    const off = await recheckJob({ now });
    expect(
      await recordResults(noRecheckRead, off.jobId, answers('recheck.test'), now, FIRST_ROUND_MS, false),
    ).toEqual({
      completed: true,
      recheckDueAt: null,
    });
    expect(await recheckStateOf(off.jobId, 1)).toBeNull();
    // Not known: read, as before.
    const unknown = await recheckJob({ recheck: true, now });
    await expect(
      recordResults(noRecheckRead, unknown.jobId, answers('recheck.test'), now, FIRST_ROUND_MS),
    ).rejects.toThrow();
  });

  it('never plans a recheck for a job without it, nor for a permanent answer; the account default applies', async () => {
    const now = Date.now();
    const off = await recheckJob({ now });
    expect(await complete(off.jobId, now)).toEqual({ completed: true, recheckDueAt: null });
    expect(await jobViewOf(off.jobId)).toMatchObject({ recheck: false, nextRecheckAt: null });
    expect(await recheckStateOf(off.jobId, 1)).toBeNull();

    const permanent = await recheckJob({ recheck: true, now });
    expect(await complete(permanent.jobId, now, false)).toEqual({ completed: true, recheckDueAt: null });
    expect(await recheckStateOf(permanent.jobId, 1)).toBeNull();

    const caller = await newCaller();
    expect(
      await changeAccountSettings({ db: db(), limiters: env.KEY_LIMITER }, caller.accountId, {
        recheck: true,
      }),
    ).toEqual({
      recheck: true,
      watch: false,
      sharedFleetFallback: true,
    });
    expect(
      await changeAccountSettings({ db: db(), limiters: env.KEY_LIMITER }, caller.accountId, {}),
    ).toEqual({
      recheck: true,
      watch: false,
      sharedFleetFallback: true,
    });
    const { deps } = recordingDeps();
    const upload = (recheck?: boolean) =>
      createBatchJob({
        db: db(),
        queue: deps.queue,
        caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: 100 },
        upload: rowsFromJson(['carol@recheck.test']),
        source: 'json',
        name: null,
        webhookUrl: null,
        maxWaitSeconds: null,
        ...(recheck === undefined ? {} : { recheck }),
        quotas: quotas(),
        now,
      });
    expect((await jobViewOf((await upload()).jobId)).recheck).toBe(true);
    expect((await jobViewOf((await upload(false)).jobId)).recheck).toBe(false);
    // Sandbox answers are made up: never asked again.
    const sandbox = await createBatchJob({
      db: db(),
      queue: deps.queue,
      caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'test', creditBalance: 100 },
      upload: rowsFromJson(['greylisted@recheck.test']),
      source: 'json',
      name: null,
      webhookUrl: null,
      maxWaitSeconds: null,
      recheck: true,
      quotas: quotas(),
      now,
    });
    expect(await jobViewOf(sandbox.jobId)).toMatchObject({
      status: 'completed',
      recheck: false,
      nextRecheckAt: null,
    });
  });

  it('sends a round more than 12 hours ahead on in steps Queues allows, and starts nothing early', async () => {
    const now = Date.now();
    const { jobId } = await recheckJob({ recheck: true, now });
    await complete(jobId, now);
    const { deps, sent, delays } = recordingDeps();
    const message: RecheckMessage = { kind: 'recheck', jobId, round: 0, dueAt: now + 20 * 3600_000 };
    await startRecheckRound(deps, message, now);
    expect(sent).toEqual([message]);
    expect(delays).toEqual([43_200]);
    expect(await recheckStateOf(jobId, 1)).toBe('due');
  });

  it('starts a round whose message was lost, closes a round whose answers never came, and asks again later', async () => {
    const now = Date.now();
    const { jobId } = await recheckJob({ recheck: true, now, webhook: true });
    await complete(jobId, now);
    const { deps, sent } = recordingDeps();
    const due = now + FIRST_ROUND_MS;
    // Before its time plus the grace the cron leaves the queue, nothing is sent again.
    await recoverRechecks(deps, due);
    expect(sent.filter((body) => body.jobId === jobId)).toEqual([]);
    const report = await recoverRechecks(deps, due + 61_000);
    expect(report.restartedRounds).toBeGreaterThanOrEqual(1);
    const resent = sent.find((body) => body.kind === 'recheck' && body.jobId === jobId);
    expect(resent).toEqual({ kind: 'recheck', jobId, round: 0, dueAt: due });
    sent.length = 0;
    await startRecheckRound(deps, resent as RecheckMessage, due + 61_000);
    expect(await recheckStateOf(jobId, 1)).toBe('asking');
    expect((await jobViewOf(jobId)).nextRecheckAt).not.toBeNull();

    // A temporary answer again: nothing changes, and bob is due for the next round.
    const again = recheckAnswerOf(1, answered('bob@recheck.test', 'greylisted', due), {
      retry: 'greylist',
      refundable: true,
    });
    expect(again).toEqual({ idx: 1, verdict: null, askAgain: true });
    // No answer comes: past the round's end the cron closes it with nothing changed.
    const afterRound = due + 61_000 + 24 * 3600_000;
    await recoverRechecks(deps, afterRound);
    expect(await recheckStateOf(jobId, 1)).toBe('due');
    expect(await jobViewOf(jobId)).toMatchObject({ recheckedAt: null, unknownCount: 1 });
    expect((await eventsOf(jobId)).map((event) => event.type)).toEqual(['job.completed']);
    // A late answer of the closed round is not taken.
    await recordRecheck(
      deps,
      jobId,
      [
        recheckAnswerOf(1, answered('bob@recheck.test', 'deliverable', afterRound), {
          retry: 'none',
          refundable: false,
        }),
      ],
      afterRound,
    );
    expect(await jobViewOf(jobId)).toMatchObject({ recheckedAt: null, unknownCount: 1 });
  });
});

function never(): never {
  throw new Error('no job');
}
