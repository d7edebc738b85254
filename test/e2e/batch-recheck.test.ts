// Greylist follow-up end to end (issue 13): a job with `recheck` against a server that
// greylists for longer than the job may wait ends `unknown / greylisted` at its deadline;
// a later round, once the server lets the triplet through, turns it deliverable — the job
// stays completed with `recheckedAt`, the address refunded at completion is charged then
// (docs/money.md), and a signed `job.updated` arrives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balanceOf, okJson, type System, sqlRows, startSystem } from './harness.ts';
import { verifiedEvent, WebhookReceiver } from './webhook-receiver.ts';

let system: System;
let receiver: WebhookReceiver;

/** The slow greylisting server lets a triplet through after this long (postgrey waits 300 s). */
const SLOW_GREYLIST_MS = 30_000;
/**
 * Rounds 5 s and 45 s after completion: the first comes while the server still defers (the
 * address stays unknown and nothing is sent), the second after it lets the triplet through.
 */
const RECHECK_SCHEDULE_SECONDS = '5,45';

interface Job {
  id: string;
  status: string;
  processedEmails: number;
  deliverableCount: number;
  unknownCount: number;
  creditsCharged: number;
  creditsRefunded: number;
  recheck: boolean;
  recheckedAt: string | null;
  nextRecheckAt: string | null;
  deadlineAt: string | null;
}

beforeAll(async () => {
  receiver = new WebhookReceiver();
  await receiver.listen();
  system = await startSystem({
    slowGreylistDelayMs: SLOW_GREYLIST_MS,
    vars: {
      SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(9))),
      RECHECK_SCHEDULE_SECONDS,
    },
  });
});

afterAll(async () => {
  await system?.close();
  receiver?.server.close();
});

async function statusOf(jobId: string): Promise<Job> {
  return (await okJson<{ job: Job }>(await system.api(`/api/v1/bulk/status/${jobId}`))).job;
}

async function verdicts(jobId: string): Promise<string[]> {
  const { results } = await okJson<{ results: { email: string; status: string; subStatus: string }[] }>(
    await system.api(`/api/v1/bulk/results/${jobId}`),
  );
  return results.map((result) => `${result.email} ${result.status}/${result.subStatus}`);
}

describe('greylist follow-up', () => {
  it('refuses a recheck that is not a boolean, charging nothing', async () => {
    const before = await balanceOf(system);
    const bad = await system.api('/api/v1/bulk/upload', {
      json: { emails: [`alice@${system.world.domains.accept}`], recheck: 'yes' },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    const form = new FormData();
    form.set(
      'file',
      new Blob([`email\nalice@${system.world.domains.accept}\n`], { type: 'text/csv' }),
      'l.csv',
    );
    form.set('recheck', 'sometimes');
    const badCsv = await system.api('/api/v1/bulk/upload', { body: form });
    expect(badCsv.status).toBe(400);
    expect(await badCsv.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(await balanceOf(system)).toBe(before);
  });

  it('turns a greylisted address deliverable after the job completed, charged then, with a signed job.updated', async () => {
    const { secret } = await okJson<{ secret: string }>(
      await system.api('/api/v1/webhooks/secret', { method: 'POST' }),
    );
    const slow = `user1@${system.world.defendedDomains.slowgreylist}`;
    const accepted = `alice@${system.world.domains.accept}`;
    const before = await balanceOf(system);
    const { jobId } = await okJson<{ jobId: string; creditsCharged: number }>(
      await system.api('/api/v1/bulk/upload', {
        json: { emails: [accepted, slow], recheck: true, maxWaitSeconds: 30, webhookUrl: receiver.url() },
      }),
    );

    // By its deadline the server still defers: unknown / greylisted, refunded per the policy table.
    const completedEvent = verifiedEvent<{ type: string; data: { job: Job } }>(
      secret,
      await receiver.next(jobId, 'job.completed'),
    );
    expect(completedEvent.data.job).toMatchObject({ status: 'completed', recheck: true, recheckedAt: null });
    expect(completedEvent.data.job.nextRecheckAt).not.toBeNull();
    const completed = await statusOf(jobId);
    expect(completed).toMatchObject({
      status: 'completed',
      deliverableCount: 1,
      unknownCount: 1,
      creditsCharged: 2,
      creditsRefunded: 1,
      recheck: true,
      recheckedAt: null,
    });
    expect(await verdicts(jobId)).toEqual([
      `${accepted} deliverable/accepted_email`,
      `${slow} unknown/greylisted`,
    ]);
    expect(await balanceOf(system)).toBe(before - 1);

    // A later round gets through: one job.updated, signed, for the round that changed it.
    const delivery = await receiver.next(jobId, 'job.updated');
    const updatedEvent = verifiedEvent<{ type: string; data: { job: Job; changedAddresses: number } }>(
      secret,
      delivery,
    );
    expect(updatedEvent.type).toBe('job.updated');
    expect(updatedEvent.data.changedAddresses).toBe(1);
    expect(updatedEvent.data.job).toMatchObject({
      id: jobId,
      status: 'completed',
      deliverableCount: 2,
      unknownCount: 0,
    });
    // The first round came while the server still deferred: it changed nothing and sent nothing.
    expect(delivery.headers['webhook-id']).toBe(`msg_${jobId.replaceAll('-', '')}_updated_2`);
    expect(receiver.deliveries.filter((each) => each.body.includes('"job.updated"'))).toHaveLength(1);

    const updated = await statusOf(jobId);
    expect(updated).toMatchObject({
      status: 'completed',
      processedEmails: 2,
      deliverableCount: 2,
      unknownCount: 0,
      creditsCharged: 3,
      creditsRefunded: 1,
      nextRecheckAt: null,
    });
    expect(Date.parse(updated.recheckedAt ?? '')).toBeGreaterThan(Date.parse(completed.deadlineAt ?? ''));
    expect(await verdicts(jobId)).toEqual([
      `${accepted} deliverable/accepted_email`,
      `${slow} deliverable/accepted_email`,
    ]);
    const csv = await (await system.api(`/api/v1/bulk/results/${jobId}?format=csv`)).text();
    // The export quotes every cell (README, "Using the API": formulas neutralised).
    expect(csv.split('\r\n')[2]?.startsWith(`"${slow}","deliverable","accepted_email",`)).toBe(true);
    // The charge and the refund at completion, then the known answer charged by its round: a
    // refund never turns a verdict into zero credits.
    expect(await balanceOf(system)).toBe(before - 2);
    const ledger = await sqlRows(
      system,
      `SELECT reason, delta, reference FROM credit_ledger WHERE reference LIKE '${jobId}%' ORDER BY id`,
    );
    expect(ledger).toEqual([
      { reason: 'bulk_charge', delta: -2, reference: jobId },
      { reason: 'bulk_refund', delta: 1, reference: jobId },
      { reason: 'recheck_charge', delta: -1, reference: `${jobId}:round-2` },
    ]);
  });
});
