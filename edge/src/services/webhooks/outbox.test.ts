// Webhooks at least once: the event is written with the job's completion and the cron
// delivers what is pending, always under the same webhook-id; private targets are refused.
import { env } from 'cloudflare:workers';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { call, db, newCaller, quotas } from '../../../test/fixtures.ts';
import { type Config, configOf } from '../../config.ts';
import { failJob, recordResults } from '../../storage/job-results.ts';
import { dueDeliveries, setAccountWebhook } from '../../storage/webhooks.ts';
import { rowsFromJson } from '../batch/input.ts';
import { addressResult, createBatchJob } from '../batch/jobs.ts';
import type { BatchMessage } from '../batch/queue.ts';
import { sandboxVerify } from '../verify/sandbox.ts';
import { RETRIES_PER_ACCOUNT, retryDueDeliveries } from './delivery.ts';
import { rotateWebhookSecret } from './settings.ts';

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
  const results = emails.map((email, idx) => addressResult(idx, sandboxVerify(checkSyntax(email), now)));
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

/** An account with a webhook secret and `url` as its default webhook URL. */
async function accountWithWebhook(url: string) {
  const caller = await newCaller({ credits: 10 });
  await rotateWebhookSecret(db(), caller.accountId, configOf(env).SECRETS_KEY);
  await setAccountWebhook(db(), caller.accountId, { webhookUrl: url });
  return caller;
}

/** `count` job events of the account, due since `now - 1000`, created in order from `createdFrom`. */
async function dueEvents(accountId: string, url: string, count: number, createdFrom: number, now: number) {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const id = `msg_${accountId.replaceAll('-', '')}_${String(index).padStart(3, '0')}`;
    ids.push(id);
    // Job events are written by the job's completion; here, straight into the table.
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (id, account_id, job_id, event_type, url, payload, state, attempts, next_attempt_at, created_at)
       VALUES (?1, ?2, NULL, 'job.completed', ?3, ?4, 'pending', 1, ?5, ?6)`,
    )
      .bind(
        id,
        accountId,
        url,
        JSON.stringify({ type: 'job.completed', data: { index } }),
        now - 1000,
        createdFrom + index,
      )
      .run();
  }
  return ids;
}

describe('webhook retries', () => {
  // hooks.rcpt.test is not in the test world's DNS: the private-target guard is off here.
  const open = (): Config => ({ ...configOf(env), ALLOW_PRIVATE_TARGETS: true });

  it("take each account's oldest few per run, in order, so one account's backlog delays nobody else", async () => {
    const now = Date.now();
    const flood = await accountWithWebhook('https://hooks.rcpt.test/flood');
    const quiet = await accountWithWebhook('https://hooks.rcpt.test/quiet');
    // Sixty events of one account, all older than the other account's one.
    const floodIds = await dueEvents(flood.accountId, 'https://hooks.rcpt.test/flood', 60, now - 60_000, now);
    const [quietId] = await dueEvents(quiet.accountId, 'https://hooks.rcpt.test/quiet', 1, now - 1000, now);
    const sent = receiveWebhooks('hooks.rcpt.test', []);
    const sentOf = (path: string) => sent.filter((call) => call.url.endsWith(path)).map((call) => call.id);

    await retryDueDeliveries(db(), open(), now);
    expect(sentOf('/quiet')).toEqual([quietId]);
    // The flooding account's oldest, one after another in the order they were created.
    expect(sentOf('/flood')).toEqual(floodIds.slice(0, RETRIES_PER_ACCOUNT));

    await retryDueDeliveries(db(), open(), now);
    expect(sentOf('/quiet')).toEqual([quietId]);
    expect(sentOf('/flood')).toEqual(floodIds.slice(0, 2 * RETRIES_PER_ACCOUNT));
  });

  it('sends a test event once, while the caller waits, and never retries it', async () => {
    const caller = await accountWithWebhook('https://hooks.rcpt.test/test-event');
    const sent = receiveWebhooks('hooks.rcpt.test', [503, 503]);
    const response = await call('/api/v1/webhooks/test', { key: caller.apiKey, method: 'POST' });
    expect(response.status).toBe(200);
    const { delivery } = await response.json<{ delivery: Record<string, unknown> }>();
    expect(delivery).toMatchObject({
      eventType: 'webhook.test',
      state: 'failed',
      attempts: 1,
      lastStatus: 503,
      nextAttemptAt: null,
    });
    expect(sent.filter((call) => call.url.endsWith('/test-event'))).toHaveLength(1);
    // However late the cron runs, it finds nothing of this account to send again.
    const due = await dueDeliveries(db(), Date.now() + 86_400_000, { perAccount: 1000, limit: 1000 });
    expect(due.filter((row) => row.accountId === caller.accountId)).toEqual([]);
  });
});
