// Every charged request ends in exactly one of its result or its refund, whichever step fails: a
// single call at its account's desk (docs/money.md, "Where the balance lives"), whose refund never
// reaches the ledger and whose charge nobody closed the desk's alarm gives back, and an upload.

import { runDurableObjectAlarm } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import { describe, expect, it } from 'vitest';
import { factsWorld } from '../../../test/domain-facts.ts';
import { failingCalls } from '../../../test/failing-calls.ts';
import { balanceOf, db, ledgerOf, newCaller, quotas } from '../../../test/fixtures.ts';
import { tickAt } from '../../../test/job-store-clock.ts';
import { configOf } from '../../config.ts';
import { recoverStuckJobs } from '../../cron/recovery.ts';
import { DESK_OPEN_CHARGE_MS } from '../../objects/account-desk.ts';
import { listHistory } from '../../storage/verifications.ts';
import { rowsFromJson } from '../batch/input.ts';
import { createBatchJob } from '../batch/jobs.ts';
import type { BatchMessage, WorkMessage } from '../batch/queue.ts';
import { settleDepsOf } from '../batch-lifecycle.ts';
import type { Caller } from '../keys/api-keys.ts';
import { verifyForCaller } from '../verify/single-verification.ts';
import { type AccountDeskStub, deskOf, settleDesk } from './account-desk.ts';

const MX: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.faults.test', preference: 10, ips: ['127.0.0.1'] }],
};

function depsWithProbe(probe: VerifyDeps['prober']): VerifyDeps {
  return {
    mailRoute: async () => MX,
    prober: probe,
    mailFrom: 'verify@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs: 3000,
  };
}

const hubThrows = depsWithProbe({
  probe: async () => {
    throw new Error('ProberHub RPC failed');
  },
});
const hubAnswers = depsWithProbe({ probe: async () => ({ kind: 'unavailable', message: 'no prober' }) });

/**
 * A single verification of one address over `deps`, charged and answered at the caller's desk
 * (`desk`, its stub as the route takes it unless a test breaks it), with domain facts of their own.
 */
function verifyFaulty(
  deps: VerifyDeps,
  caller: Caller,
  requestId: string,
  now: number,
  desk: AccountDeskStub = deskOf(env.ACCOUNT_DESK, caller.accountId),
) {
  return verifyForCaller({
    db: db(),
    deps,
    facts: factsWorld(MX).store(),
    caller,
    email: 'a@faults.test',
    requestId,
    quotas: quotas(),
    now,
    desk,
  });
}

async function liveCaller(credits = 5): Promise<Caller> {
  const caller = await newCaller({ credits });
  return { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: credits };
}

async function historyTotal(accountId: string): Promise<number> {
  return (await listHistory(db(), accountId, {}, { offset: 0, limit: 10 })).total;
}

async function recover(now: number, queue: Queue<BatchMessage> = recordingQueue([])) {
  const config = configOf(env);
  return recoverStuckJobs(settleDepsOf({ db: db(), queue, config, inBackground: () => undefined }), now);
}

function recordingQueue(sent: BatchMessage[]): Queue<BatchMessage> {
  return {
    send: async (message: BatchMessage) => void sent.push(message),
    sendBatch: async (batch: Iterable<MessageSendRequest<BatchMessage>>) => {
      for (const request of batch) sent.push(request.body);
    },
  } as unknown as Queue<BatchMessage>;
}

describe('single verification under faults', () => {
  it('gives the charge back when the hub RPC throws: nothing reaches the ledger or the history', async () => {
    const caller = await liveCaller();
    const requestId = `req_${crypto.randomUUID()}`;
    await expect(verifyFaulty(hubThrows, caller, requestId, Date.now())).rejects.toMatchObject({
      code: 'INTERNAL_ERROR',
    });
    await settledAndReleased(caller.accountId);
    expect(await balanceOf(caller.accountId)).toBe(5);
    expect(await ledgerOf(caller.accountId)).toEqual([
      { delta: 5, reason: 'signup_grant', reference: caller.accountId },
    ]);
    expect(await historyTotal(caller.accountId)).toBe(0);
  });

  it('gives the charge back when recording the answer fails, once: a second refund changes nothing', async () => {
    const caller = await liveCaller();
    const requestId = `req_${crypto.randomUUID()}`;
    const lost = failingCalls('answer');
    const desk = deskOf(env.ACCOUNT_DESK, caller.accountId);
    await expect(
      verifyFaulty(hubAnswers, caller, requestId, Date.now(), lost.of(desk)),
    ).rejects.toMatchObject({
      code: 'INTERNAL_ERROR',
    });
    expect(lost.failed).toBe(1);
    expect(await desk.refund(requestId)).toBe(false);
    await settledAndReleased(caller.accountId);
    expect(await balanceOf(caller.accountId)).toBe(5);
    expect(await historyTotal(caller.accountId)).toBe(0);
  });

  it('when the refund fails too, the desk keeps the credit held and its alarm gives it back once, later', async () => {
    const caller = await liveCaller();
    const requestId = `req_${crypto.randomUUID()}`;
    // A call older than an open charge may be, whose answer and refund never reach the desk.
    const now = Date.now() - DESK_OPEN_CHARGE_MS - 1_000;
    const desk = deskOf(env.ACCOUNT_DESK, caller.accountId);
    const broken = failingCalls('refund').of(failingCalls('answer').of(desk));
    await expect(verifyFaulty(hubAnswers, caller, requestId, now, broken)).rejects.toMatchObject({
      code: 'INTERNAL_ERROR',
    });
    // Held, neither spent nor free: the desk keeps it reserved when it gives the rest back.
    await settledAndReleased(caller.accountId);
    expect(await reservedOf(caller.accountId)).toBe(1);
    expect(await runDurableObjectAlarm(desk)).toBe(true);
    await settledAndReleased(caller.accountId);
    expect(await reservedOf(caller.accountId)).toBe(0);
    expect(await balanceOf(caller.accountId)).toBe(5);
    expect(await desk.refund(requestId)).toBe(false);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reference === requestId)).toEqual([]);
    expect(await historyTotal(caller.accountId)).toBe(0);
  });

  it('an answered verification is never given back by the desk’s alarm', async () => {
    const caller = await liveCaller();
    const requestId = `req_${crypto.randomUUID()}`;
    const now = Date.now() - DESK_OPEN_CHARGE_MS - 1_000;
    const { result } = await verifyFaulty(hubAnswers, caller, requestId, now);
    expect(result.subStatus).toBe('smtp_unavailable');
    await runDurableObjectAlarm(deskOf(env.ACCOUNT_DESK, caller.accountId));
    await settledAndReleased(caller.accountId);
    expect(await balanceOf(caller.accountId)).toBe(4);
    expect(await historyTotal(caller.accountId)).toBe(1);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reference === requestId)).toEqual([
      { delta: -1, reason: 'verify', reference: requestId },
    ]);
  });

  it('never overdraws under concurrent calls, some failing after the charge: each ends in its result or its refund', async () => {
    const caller = await liveCaller(5);
    const calls = Array.from({ length: 24 }, (_, index) => ({
      requestId: `req_${crypto.randomUUID()}`,
      deps: index % 3 === 0 ? hubThrows : hubAnswers,
    }));
    const outcomes = await Promise.allSettled(
      calls.map((call) => verifyFaulty(call.deps, caller, call.requestId, Date.now())),
    );
    const answered = calls.filter((_, index) => outcomes[index]?.status === 'fulfilled');
    const refused = outcomes.filter(
      (outcome) => outcome.status === 'rejected' && outcome.reason?.code === 'INSUFFICIENT_CREDITS',
    );
    // Five credits: no more than five answers, and the calls past them refused, not overdrawn.
    expect(answered.length).toBeLessThanOrEqual(5);
    expect(refused.length).toBeGreaterThan(0);
    await settledAndReleased(caller.accountId);
    expect(await balanceOf(caller.accountId)).toBe(5 - answered.length);
    const charged = (await ledgerOf(caller.accountId)).filter((row) => row.reason === 'verify');
    expect(charged.map((row) => row.reference).sort()).toEqual(answered.map((call) => call.requestId).sort());
    expect(await historyTotal(caller.accountId)).toBe(answered.length);
  });
});

/** What the caller's desk answered, written to D1, and its unspent credits given back. */
async function settledAndReleased(accountId: string): Promise<void> {
  await settleDesk(env.ACCOUNT_DESK, accountId, { release: true });
}

/** The credits the account's desk holds in D1 (`credits_reserved`). */
async function reservedOf(accountId: string): Promise<number> {
  const row = await env.DB.prepare('SELECT credits_reserved AS reserved FROM accounts WHERE id = ?')
    .bind(accountId)
    .first<{ reserved: number }>();
  return row?.reserved ?? Number.NaN;
}

describe('bulk upload under faults', () => {
  it.each([
    ['d1', "the recovery sweep enqueues the work of a job in D1's store (jobs from before)"],
    ['object', "the job's object enqueues its work once the lease has passed"],
  ] as const)('answers the job id when the queue send fails, and %s: %s', async (store, _what) => {
    const caller = await liveCaller(10);
    const now = Date.now();
    const failingQueue = {
      send: async () => {
        throw new Error('Queue send failed');
      },
      sendBatch: async () => {
        throw new Error('Queue send failed');
      },
    } as unknown as Queue<BatchMessage>;
    const response = await createBatchJob({
      db: db(),
      queue: failingQueue,
      caller,
      upload: rowsFromJson(['a@faults.test', 'b@faults.test']),
      source: 'json',
      name: null,
      webhookUrl: null,
      // Past the lease, well before the deadline: the sweep enqueues rather than finishes.
      maxWaitSeconds: 3600,
      quotas: quotas(),
      now,
      store,
    });
    expect(response).toMatchObject({ success: true, totalEmails: 2, creditsCharged: 2 });
    expect(await balanceOf(caller.accountId)).toBe(8);
    const history = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 10 });
    expect(history.rows.map((row) => row.jobId)).toEqual([response.jobId]);

    const pastLease = now + configOf(env).BATCH_LEASE_SECONDS * 1000 + 1000;
    let requeued: string[];
    if (store === 'd1') {
      const sent: BatchMessage[] = [];
      await recover(pastLease, recordingQueue(sent));
      requeued = sent
        .filter(
          (message): message is WorkMessage =>
            message.jobId === response.jobId && message.kind !== 'deadline',
        )
        .flatMap((message) => message.addresses.map((address) => address.email));
    } else {
      const tick = await tickAt(response.jobId, pastLease);
      requeued = tick.requeued.flatMap((batch) => batch.addresses.map((address) => address.email));
    }
    expect(requeued.sort()).toEqual(['a@faults.test', 'b@faults.test']);
  });
});
