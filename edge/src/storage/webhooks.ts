import type { Db } from './db.ts';
import { webhookDeliveries } from './schema.ts';

export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;

export async function insertDelivery(db: Db, delivery: typeof webhookDeliveries.$inferInsert): Promise<void> {
  await db.insert(webhookDeliveries).values(delivery).onConflictDoNothing();
}

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
): Promise<void> {
  await db.$client
    .prepare(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?2, last_status = ?3, last_error = ?4,
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

export async function dueDeliveries(db: Db, now: number, limit: number): Promise<WebhookDeliveryRow[]> {
  return db.query.webhookDeliveries.findMany({
    where: (table, { and, eq, lte }) => and(eq(table.state, 'pending'), lte(table.nextAttemptAt, now)),
    limit,
  });
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
