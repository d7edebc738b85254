// Webhooks at least once: the event is written with the job's completion and the cron
// delivers what is pending, always under the same webhook-id; private targets are refused.
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { db, newCaller, quotas } from '../../test/fixtures.ts';
import { type Config, configOf } from '../config.ts';
import { failJob, recordResults } from '../storage/jobs.ts';
import { setAccountWebhook } from '../storage/webhooks.ts';
import { rowsFromJson } from './batch-input.ts';
import { addressResult, createBatchJob } from './batch-jobs.ts';
import type { BatchMessage } from './batch-queue.ts';
import { sandboxVerify } from './sandbox.ts';
import { retryDueDeliveries, rotateWebhookSecret } from './webhooks.ts';

const MINUTE = 60_000;
const silentQueue = { send: async () => {}, sendBatch: async () => {} } as unknown as Queue<BatchMessage>;

interface Sent {
  url: string;
  id: string | null;
  body: string;
}

/** Answers webhook calls to `host` with `statuses` in turn, recording them; other fetches pass. */
function receiveWebhooks(host: string, statuses: number[]): Sent[] {
  const sent: Sent[] = [];
  // workerd refuses a fetch called detached from the global ("Illegal invocation").
  const passThrough = globalThis.fetch.bind(globalThis);
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (new URL(url).hostname !== host) return passThrough(input, init);
    const request = new Request(input, init);
    sent.push({ url: request.url, id: request.headers.get('webhook-id'), body: await request.text() });
    return new Response(null, { status: statuses.shift() ?? 200 });
  });
  return sent;
}

afterEach(() => vi.restoreAllMocks());

async function jobWithWebhook(webhookUrl: string | null, now: number) {
  const caller = await newCaller({ credits: 10 });
  const config = configOf(env);
  await rotateWebhookSecret(db(), caller.accountId, config.SECRETS_KEY);
  await setAccountWebhook(db(), caller.accountId, { webhookUrl: 'https://hooks.rcpt.test/account' });
  const emails = ['deliverable@outbox.test', 'undeliverable@outbox.test'];
  const { jobId } = await createBatchJob({
    db: db(),
    queue: silentQueue,
    caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: 10 },
    upload: rowsFromJson(emails),
    source: 'json',
    name: null,
    webhookUrl,
    maxWaitSeconds: null,
    quotas: quotas(),
    now,
  });
  const results = emails.map((email, idx) => addressResult(idx, sandboxVerify(email, now)));
  return { jobId, results, accountId: caller.accountId };
}

async function deliveriesOf(jobId: string) {
  const { results } = await env.DB.prepare(
    'SELECT id, state, attempts, last_error AS lastError, event_type AS type FROM webhook_deliveries WHERE job_id = ?',
  )
    .bind(jobId)
    .all<{ id: string; state: string; attempts: number; lastError: string | null; type: string }>();
  return results;
}

describe('webhook outbox', () => {
  it('writes the event with the completion, once, and the cron delivers it under one webhook-id', async () => {
    const now = Date.now();
    const { jobId, results } = await jobWithWebhook(null, now);
    expect(await deliveriesOf(jobId)).toEqual([]);
    expect(await recordResults(db(), jobId, results, now)).toEqual({ completed: true, recheckDueAt: null });
    const eventId = `msg_${jobId.replaceAll('-', '')}_completed`;
    expect(await deliveriesOf(jobId)).toEqual([
      { id: eventId, state: 'pending', attempts: 0, lastError: null, type: 'job.completed' },
    ]);
    // A replayed write completes nothing and records no second event.
    expect(await recordResults(db(), jobId, results, now)).toEqual({ completed: false, recheckDueAt: null });
    expect(await deliveriesOf(jobId)).toHaveLength(1);

    const sent = receiveWebhooks('hooks.rcpt.test', [503, 200]);
    // hooks.rcpt.test is not in the test world's DNS, so the private-target guard (tested
    // below) is off here.
    const open: Config = { ...configOf(env), ALLOW_PRIVATE_TARGETS: true };
    await retryDueDeliveries(db(), open, now);
    expect(await deliveriesOf(jobId)).toMatchObject([{ state: 'pending', attempts: 1 }]);
    await retryDueDeliveries(db(), open, now + 10 * MINUTE);
    expect(await deliveriesOf(jobId)).toMatchObject([{ state: 'delivered', attempts: 2 }]);
    const ours = sent.filter((call) => call.id === eventId);
    expect(ours).toHaveLength(2);
    expect(ours[1]?.body).toBe(ours[0]?.body);
    expect(JSON.parse(ours[0]?.body ?? '{}')).toMatchObject({
      type: 'job.completed',
      data: { job: { id: jobId, status: 'completed', processedEmails: 2 } },
    });
  });

  it('writes job.failed with a failed job', async () => {
    const now = Date.now();
    const { jobId } = await jobWithWebhook(null, now);
    expect(await failJob(db(), jobId, 'test', now)).toBe(true);
    expect(await deliveriesOf(jobId)).toMatchObject([
      { id: `msg_${jobId.replaceAll('-', '')}_failed`, type: 'job.failed' },
    ]);
  });

  it('refuses at delivery a host that resolves to a loopback address', async () => {
    const now = Date.now();
    // mx.accept.test resolves to 127.0.0.10 in the test world's DNS.
    const { jobId, results } = await jobWithWebhook('https://mx.accept.test/hook', now);
    await recordResults(db(), jobId, results, now);
    const sent = receiveWebhooks('mx.accept.test', []);
    await retryDueDeliveries(db(), { ...configOf(env), ALLOW_PRIVATE_TARGETS: false }, now);
    expect(sent).toEqual([]);
    const [delivery] = await deliveriesOf(jobId);
    expect(delivery).toMatchObject({ state: 'pending', attempts: 1 });
    expect(delivery?.lastError, delivery?.lastError ?? '').toMatch(
      /mx\.accept\.test resolves to a private or reserved address \(127\.0\.0\.10\)/,
    );
  });
});
