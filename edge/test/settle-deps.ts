// What tests of the batch settlement and its follow-up rounds drive them with: deps whose queue
// records what is sent and whose background work can be awaited, webhook calls to
// hooks.rcpt.test answered 200 and recorded, and a job as the API shows it.
import { env } from 'cloudflare:workers';
import { vi } from 'vitest';
import { configOf } from '../src/config.ts';
import { rowsFromJson } from '../src/services/batch/input.ts';
import { createBatchJob, jobView } from '../src/services/batch/jobs.ts';
import type { BatchMessage } from '../src/services/batch/queue.ts';
import { settleDepsOf } from '../src/services/batch-lifecycle.ts';
import { rotateWebhookSecret } from '../src/services/webhooks/settings.ts';
import type { JobStoreKind } from '../src/storage/job-lists/index.ts';
import { findJobById } from '../src/storage/jobs.ts';
import { setAccountWebhook } from '../src/storage/webhooks.ts';
import { db, newCaller, quotas } from './fixtures.ts';

/** Deps whose queue records what is sent (and with which delay) and whose background work can be awaited. */
export function recordingDeps() {
  const sent: BatchMessage[] = [];
  const delays: (number | undefined)[] = [];
  const background: Promise<unknown>[] = [];
  const queue = {
    send: async (body: BatchMessage) => {
      sent.push(body);
    },
    sendBatch: async (batch: MessageSendRequest<BatchMessage>[]) => {
      sent.push(...batch.map((message) => message.body));
      delays.push(...batch.map((message) => message.delaySeconds));
    },
  } as unknown as Queue<BatchMessage>;
  const deps = settleDepsOf({
    db: db(),
    queue,
    config: configOf(env),
    inBackground: (task) => background.push(task),
  });
  return { deps, sent, delays, settled: () => Promise.all(background.splice(0)) };
}

/** Webhook calls to hooks.rcpt.test, answered 200 and recorded (restore with vi.restoreAllMocks). */
export function receiveWebhooks(): { id: string | null; body: string }[] {
  const received: { id: string | null; body: string }[] = [];
  const passThrough = globalThis.fetch.bind(globalThis);
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (new URL(request.url).hostname !== 'hooks.rcpt.test') return passThrough(input, init);
    received.push({ id: request.headers.get('webhook-id'), body: await request.text() });
    return new Response(null, { status: 200 });
  });
  return received;
}

/** The job as the API shows it. */
export async function jobViewOf(jobId: string) {
  const job = await findJobById(db(), jobId);
  if (!job) throw new Error(`no job ${jobId}`);
  return jobView(job);
}

/**
 * A live job of `emails` on a new account with 10 credits (and, with `webhook`, a signing secret
 * and the default URL https://hooks.rcpt.test/account), its work sent nowhere.
 */
export async function liveJob(options: {
  emails: readonly string[];
  now: number;
  webhook?: boolean;
  recheck?: boolean;
  watchDays?: number | 'off';
  /** Where the job's lists live; absent: where new jobs' live. */
  store?: JobStoreKind;
}): Promise<{ jobId: string; accountId: string }> {
  const caller = await newCaller({ credits: 10 });
  if (options.webhook) {
    await rotateWebhookSecret(db(), caller.accountId, configOf(env).SECRETS_KEY);
    await setAccountWebhook(db(), caller.accountId, { webhookUrl: 'https://hooks.rcpt.test/account' });
  }
  const { jobId } = await createBatchJob({
    db: db(),
    queue: recordingDeps().deps.queue,
    caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live', creditBalance: 10 },
    upload: rowsFromJson([...options.emails]),
    source: 'json',
    name: null,
    webhookUrl: null,
    maxWaitSeconds: null,
    ...(options.recheck === undefined ? {} : { recheck: options.recheck }),
    ...(options.watchDays === undefined ? {} : { watchDays: options.watchDays }),
    ...(options.store === undefined ? {} : { store: options.store }),
    quotas: quotas(),
    now: options.now,
  });
  return { jobId, accountId: caller.accountId };
}
