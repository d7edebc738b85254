// Customers' job events, signed per Standard Webhooks (signed-post.ts): `webhook-id`, `webhook-timestamp` and
// `webhook-signature: v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`, with the
// account's `whsec_` secret (settings.ts). Failed job events are retried
// with exponential backoff by the cron, fairly across accounts; a test event is sent once, to
// the caller who waits for it. Every attempt is visible to the account.
import type { WatchChange } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import type { Config } from '../../config.ts';
import { findAccount } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { findJobById } from '../../storage/jobs.ts';
import {
  dueDeliveries,
  fixDeliveryPayload,
  insertDeliveryWithin,
  pendingDeliveriesOfJob,
  recordAttempt,
  type WebhookDeliveryRow,
} from '../../storage/webhooks.ts';
import { requireConfirmedEmail } from '../accounts/email-confirmation.ts';
import { openStored } from '../accounts/secret-box.ts';
import { domainChangesOf } from '../batch/domain-changes.ts';
import { jobView } from '../batch/jobs.ts';
import { quotaExceeded, quotasOf, utcDayStart } from '../money/quotas.ts';
import { webhookSecretPlace } from './settings.ts';
import { attemptOutcome, postSignedEvent, WEBHOOK_MAX_ATTEMPTS } from './signed-post.ts';

/**
 * A cron run's share of retries: at most this many due deliveries of one account, oldest first,
 * and this many in all, so that one account's failing endpoint (or its backlog) delays nobody else.
 */
export const RETRIES_PER_ACCOUNT = 5;
export const RETRIES_PER_RUN = 50;
const TEST_EVENT = 'webhook.test';

/**
 * Attempts the job's pending events now (written with the job's completion, in its
 * transaction); what fails here stays pending and the cron delivers it.
 */
export async function deliverJobWebhook(db: Db, jobId: string, config: Config, now: number): Promise<void> {
  const pending = await pendingDeliveriesOfJob(db, jobId);
  await Promise.all(pending.map((delivery) => attemptDelivery(db, delivery, config, now)));
}

/**
 * A test event to the account's default URL, attempted once while the caller waits and never
 * retried: its answer is the test (a flood of tests must not become a flood of retries).
 */
export async function sendTestEvent(
  db: Db,
  accountId: string,
  config: Config,
  now: number,
): Promise<WebhookDeliveryRow> {
  await requireConfirmedEmail(db, accountId);
  const account = await findAccount(db, accountId);
  if (!account?.webhookUrl)
    throw new ApiError('VALIDATION_ERROR', { message: 'Set a default webhook URL first.' });
  if (!account.webhookSecret)
    throw new ApiError('VALIDATION_ERROR', { message: 'Create a webhook secret first.' });
  const delivery: WebhookDeliveryRow = {
    id: `msg_${crypto.randomUUID().replaceAll('-', '')}`,
    accountId,
    jobId: null,
    eventType: TEST_EVENT,
    url: account.webhookUrl,
    payload: JSON.stringify({ type: TEST_EVENT, timestamp: new Date(now).toISOString(), data: {} }),
    state: 'pending',
    attempts: 0,
    lastStatus: null,
    lastError: null,
    // Never due for the cron: this request makes its only attempt.
    nextAttemptAt: null,
    createdAt: now,
    deliveredAt: null,
  };
  // Each test event is a stored row: it counts against the storage budget (docs/money.md).
  const refused = await insertDeliveryWithin(db, delivery, {
    day: utcDayStart(now),
    limit: quotasOf(config).storage,
  });
  if (refused) {
    throw quotaExceeded({
      quota: 'storage_bytes_per_day',
      limit: refused.limitBytes,
      used: refused.usedBytes,
      requested: refused.bytes,
      now,
    });
  }
  return attemptDelivery(db, delivery, config, now);
}

/**
 * The cron's retries: each account's share of due deliveries (dueDeliveries), accounts side by
 * side, each account's one after another in creation order. Returns how many were attempted.
 */
export async function retryDueDeliveries(db: Db, config: Config, now: number): Promise<number> {
  const due = await dueDeliveries(db, now, { perAccount: RETRIES_PER_ACCOUNT, limit: RETRIES_PER_RUN });
  const byAccount = new Map<string, WebhookDeliveryRow[]>();
  for (const delivery of due)
    byAccount.set(delivery.accountId, [...(byAccount.get(delivery.accountId) ?? []), delivery]);
  await Promise.all(
    [...byAccount.values()].map(async (deliveries) => {
      for (const delivery of deliveries) await attemptDelivery(db, delivery, config, now);
    }),
  );
  return due.length;
}

/** How many attempts an event gets: a test event one, a job event WEBHOOK_MAX_ATTEMPTS. */
function maxAttemptsOf(eventType: string): number {
  return eventType === TEST_EVENT ? 1 : WEBHOOK_MAX_ATTEMPTS;
}

async function attemptDelivery(
  db: Db,
  delivery: WebhookDeliveryRow,
  config: Config,
  now: number,
): Promise<WebhookDeliveryRow> {
  const account = await findAccount(db, delivery.accountId);
  let status: number | null = null;
  let error: string | null = null;
  const payload = await payloadOf(db, delivery);
  if (!account?.webhookSecret) {
    error = 'the account has no webhook secret';
  } else if (payload === null) {
    error = 'the job no longer exists';
  } else {
    try {
      const secret = await openStored(
        db,
        config.SECRETS_KEY,
        account.webhookSecret,
        webhookSecretPlace(account.id),
      );
      ({ status, error } = await postSignedEvent(
        delivery.url,
        { id: delivery.id, payload, secret },
        config,
        now,
      ));
    } catch (cause) {
      error = cause instanceof Error ? cause.message.slice(0, 200) : 'delivery failed';
    }
  }
  const { state, nextAttemptAt } = attemptOutcome(
    status,
    delivery.attempts + 1,
    maxAttemptsOf(delivery.eventType),
    now,
  );
  const delivered = state === 'delivered';
  const attempts = delivery.attempts + 1;
  await recordAttempt(db, delivery.id, { state, status, error, nextAttemptAt, now });
  return {
    ...delivery,
    payload: payload ?? delivery.payload,
    attempts,
    state,
    lastStatus: status,
    lastError: error,
    nextAttemptAt,
    deliveredAt: delivered ? now : null,
  };
}

/**
 * The bytes the event carries: a job event's payload is built from the job at its first
 * attempt and kept (its timestamp is when the job finished, or the recheck round closed), so
 * retries send the same. A `job.updated` event (greylist follow-up) also says how many
 * verdicts its round changed. Null when the job is gone (deleted by retention before delivery).
 */
async function payloadOf(db: Db, delivery: WebhookDeliveryRow): Promise<string | null> {
  if (delivery.payload !== '' || delivery.jobId === null) return delivery.payload;
  const job = await findJobById(db, delivery.jobId);
  if (!job) return null;
  const payload = JSON.stringify({
    type: delivery.eventType,
    timestamp: new Date(delivery.createdAt).toISOString(),
    data: {
      job: jobView(job),
      ...(delivery.eventType === 'job.updated' ? await updateOf(db, delivery, job.recheckChanges) : {}),
    },
  });
  return fixDeliveryPayload(db, delivery.id, payload);
}

/**
 * What a `job.updated` event adds: how many verdicts its round changed and why it ran — `recheck`
 * (greylist follow-up) or `watch`, with the domain changes that started it (batch/watch.ts). The
 * round is named by the event's id (`…_updated_<round>`).
 */
async function updateOf(
  db: Db,
  delivery: WebhookDeliveryRow,
  changedAddresses: number,
): Promise<{ changedAddresses: number; cause: 'recheck' | 'watch'; domainChanges: WatchChange[] }> {
  const round = Number(/_updated_(\d+)$/.exec(delivery.id)?.[1]);
  const domainChanges =
    delivery.jobId === null || !Number.isInteger(round)
      ? []
      : await domainChangesOf({ db }, delivery.jobId, round);
  return { changedAddresses, cause: domainChanges.length > 0 ? 'watch' : 'recheck', domainChanges };
}
