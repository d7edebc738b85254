// Every charged request ends in exactly one of its result or its refund, whichever step fails.

import { env } from 'cloudflare:workers';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import { describe, expect, it } from 'vitest';
import { factsWorld } from '../../../test/domain-facts.ts';
import { failingD1 } from '../../../test/failing-d1.ts';
import { balanceOf, db, ledgerOf, newCaller, quotas } from '../../../test/fixtures.ts';
import { tickAt } from '../../../test/job-store-clock.ts';
import { configOf } from '../../config.ts';
import { recoverStuckJobs, UNANSWERED_VERIFICATION_MS } from '../../cron/recovery.ts';
import { createDb, type Db } from '../../storage/db.ts';
import { listHistory } from '../../storage/verifications.ts';
import { rowsFromJson } from '../batch/input.ts';
import { createBatchJob } from '../batch/jobs.ts';
import type { BatchMessage, WorkMessage } from '../batch/queue.ts';
import { settleDepsOf } from '../batch-lifecycle.ts';
import type { Caller } from '../keys/api-keys.ts';
import { verifyForCaller } from '../verify/single-verification.ts';

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

/** A single verification of one address over `database` and `deps`, with domain facts of their own. */
function verifyFaulty(database: Db, deps: VerifyDeps, caller: Caller, requestId: string, now: number) {
  return verifyForCaller({
    db: database,
    deps,
    facts: factsWorld(MX).store(),
    caller,
    email: 'a@faults.test',
    requestId,
    quotas: quotas(),
    now,
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
  it('refunds the charge when the hub RPC throws, and records no history', async () => {
    const caller = await liveCaller();
    const requestId = `req_${crypto.randomUUID()}`;
    await expect(verifyFaulty(db(), hubThrows, caller, requestId, Date.now())).rejects.toMatchObject({
      code: 'INTERNAL_ERROR',
    });
    expect(await balanceOf(caller.accountId)).toBe(5);
    expect(await ledgerOf(caller.accountId)).toEqual([
      { delta: 5, reason: 'signup_grant', reference: caller.accountId },
      { delta: -1, reason: 'verify', reference: requestId },
      { delta: 1, reason: 'verify_refund', reference: requestId },
    ]);
    expect(await historyTotal(caller.accountId)).toBe(0);
  });

  it('refunds the charge when recording the answer fails', async () => {
    const caller = await liveCaller();
    const broken = createDb(failingD1(env.DB, /^\s*UPDATE verifications SET email/));
    await expect(
      verifyFaulty(broken, hubAnswers, caller, `req_${crypto.randomUUID()}`, Date.now()),
    ).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(await balanceOf(caller.accountId)).toBe(5);
    expect(await historyTotal(caller.accountId)).toBe(0);
  });

  it('when the refund fails too, the recovery sweep refunds it once, later', async () => {
    const caller = await liveCaller();
    const requestId = `req_${crypto.randomUUID()}`;
    const now = Date.now();
    // D1 accepts the charge, then every later write fails.
    const broken = createDb(
      failingD1(env.DB, /^\s*(UPDATE verifications|INSERT INTO credit_ledger.*verify_refund)/s),
    );
    await expect(verifyFaulty(broken, hubAnswers, caller, requestId, now)).rejects.toMatchObject({
      code: 'INTERNAL_ERROR',
    });
    expect(await balanceOf(caller.accountId)).toBe(4);

    expect((await recover(now + 1000)).refundedVerifications).toBe(0); // still within its request's time
    expect(
      (await recover(now + UNANSWERED_VERIFICATION_MS + 1000)).refundedVerifications,
    ).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(caller.accountId)).toBe(5);
    await recover(now + UNANSWERED_VERIFICATION_MS + 2000);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reference === requestId)).toEqual([
      { delta: -1, reason: 'verify', reference: requestId },
      { delta: 1, reason: 'verify_refund', reference: requestId },
    ]);
  });

  it('an answered verification is never refunded by the sweep', async () => {
    const caller = await liveCaller();
    const now = Date.now();
    const { result } = await verifyFaulty(db(), hubAnswers, caller, `req_${crypto.randomUUID()}`, now);
    expect(result.subStatus).toBe('smtp_unavailable');
    await recover(now + UNANSWERED_VERIFICATION_MS + 1000);
    expect(await balanceOf(caller.accountId)).toBe(4);
    expect(await historyTotal(caller.accountId)).toBe(1);
  });
});

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
