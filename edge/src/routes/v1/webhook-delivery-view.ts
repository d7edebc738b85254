import type { WebhookDeliveryRow } from '../../storage/webhooks.ts';

/** A stored delivery as the API shows it (times as ISO 8601). */
export function deliveryView(row: WebhookDeliveryRow) {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: row.id,
    eventType: row.eventType,
    jobId: row.jobId,
    url: row.url,
    state: row.state,
    attempts: row.attempts,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    nextAttemptAt: iso(row.nextAttemptAt),
    createdAt: new Date(row.createdAt).toISOString(),
    deliveredAt: iso(row.deliveredAt),
  };
}
