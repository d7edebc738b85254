import type { Db } from './db.ts';
import type { webhookDeliveries } from './schema.ts';
import { insertWithinBudget, rowBytes, type StorageLimit, type StorageUse } from './storage-budget.ts';

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

/**
 * Inserts a delivery the account asked for (a test event) if its row fits the account's storage
 * budget of `budget.day`: the check, the insert and the count in one transaction. Returns null
 * when inserted, else the bytes used that day, the budget and the row's bytes.
 */
export async function insertDeliveryWithin(
  db: Db,
  delivery: WebhookDeliveryRow,
  budget: { day: number; limit: StorageLimit | null },
): Promise<(StorageUse & { bytes: number }) | null> {
  // The values now, and what its attempts will add: a last error of at most 200 characters
  // and five numbers (attempts, last status, next attempt, created, delivered).
  const bytes =
    rowBytes(
      delivery.id,
      delivery.accountId,
      delivery.eventType,
      delivery.url,
      delivery.payload,
      delivery.state,
    ) +
    200 +
    5 * 8;
  const used = await insertWithinBudget(
    db,
    'webhook_deliveries',
    {
      id: delivery.id,
      account_id: delivery.accountId,
      job_id: delivery.jobId,
      event_type: delivery.eventType,
      url: delivery.url,
      payload: delivery.payload,
      state: delivery.state,
      next_attempt_at: delivery.nextAttemptAt,
      created_at: delivery.createdAt,
    },
    { day: budget.day, bytes, limit: budget.limit },
  );
  return used === null ? null : { ...used, bytes };
}

/**
 * Records one attempt of a customer's event (`webhook_deliveries`) or an operator's alert
 * (`operator_alerts`, the same columns): its state, status or error, and when it is due again.
 */
export async function recordAttempt(
  db: Db,
  id: string,
  attempt: {
    state: 'pending' | 'delivered' | 'failed';
    status: number | null;
    error: string | null;
    nextAttemptAt: number | null;
    now: number;
  },
  table: 'webhook_deliveries' | 'operator_alerts' = 'webhook_deliveries',
): Promise<void> {
  await db.$client
    .prepare(
      `UPDATE ${table} SET attempts = attempts + 1, state = ?2, last_status = ?3, last_error = ?4,
         next_attempt_at = ?5, delivered_at = CASE WHEN ?2 = 'delivered' THEN ?6 ELSE delivered_at END
       WHERE id = ?1`,
    )
    .bind(id, attempt.state, attempt.status, attempt.error, attempt.nextAttemptAt, attempt.now)
    .run();
}

/** The job's events still waiting for delivery (written when the job finished). */
export async function pendingDeliveriesOfJob(db: Db, jobId: string): Promise<WebhookDeliveryRow[]> {
  return db.query.webhookDeliveries.findMany({
    where: (table, { and, eq }) => and(eq(table.jobId, jobId), eq(table.state, 'pending')),
  });
}

/** Stores an event's payload once; returns the payload the event carries from now on. */
export async function fixDeliveryPayload(db: Db, id: string, payload: string): Promise<string> {
  const row = await db.$client
    .prepare(
      `UPDATE webhook_deliveries SET payload = CASE WHEN payload = '' THEN ?2 ELSE payload END
       WHERE id = ?1 RETURNING payload`,
    )
    .bind(id, payload)
    .first<{ payload: string }>();
  return row?.payload ?? payload;
}

/**
 * Due deliveries, fair across accounts: each account's oldest `perAccount` (by creation), taken
 * round by round — every account's first, then every account's second … — up to `limit`, so one
 * account's backlog cannot fill a run. Each account's come in creation order.
 */
export async function dueDeliveries(
  db: Db,
  now: number,
  share: { perAccount: number; limit: number },
): Promise<WebhookDeliveryRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT id, account_id AS accountId, job_id AS jobId, event_type AS eventType, url, payload, state,
         attempts, last_status AS lastStatus, last_error AS lastError, next_attempt_at AS nextAttemptAt,
         created_at AS createdAt, delivered_at AS deliveredAt
       FROM (
         SELECT *, ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY created_at, id) AS turn
         FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?1
       )
       WHERE turn <= ?2 ORDER BY turn, created_at, id LIMIT ?3`,
    )
    .bind(now, share.perAccount, share.limit)
    .all<WebhookDeliveryRow>();
  return results;
}

export async function listDeliveries(
  db: Db,
  accountId: string,
  page: { offset: number; limit: number },
): Promise<WebhookDeliveryRow[]> {
  return db.query.webhookDeliveries.findMany({
    where: (table, { eq }) => eq(table.accountId, accountId),
    orderBy: (table, { desc }) => [desc(table.createdAt)],
    offset: page.offset,
    limit: page.limit,
  });
}

export async function setAccountWebhook(
  db: Db,
  accountId: string,
  values: { webhookUrl?: string | null; webhookSecret?: string },
) {
  const sets: string[] = [];
  const binds: unknown[] = [accountId];
  if (values.webhookUrl !== undefined) {
    binds.push(values.webhookUrl);
    sets.push(`webhook_url = ?${binds.length}`);
  }
  if (values.webhookSecret !== undefined) {
    binds.push(values.webhookSecret);
    sets.push(`webhook_secret = ?${binds.length}`);
  }
  if (sets.length === 0) return;
  await db.$client
    .prepare(`UPDATE accounts SET ${sets.join(', ')} WHERE id = ?1`)
    .bind(...binds)
    .run();
}
