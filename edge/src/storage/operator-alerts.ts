// The operator's alerts (schema.ts, "Operator alerts"): written by the fleet's hubs, attempted
// at once, retried by the cron until delivered or out of attempts, emailed once.
import type { Db } from './db.ts';
import type { operatorAlerts } from './schema.ts';

export type OperatorAlertRow = typeof operatorAlerts.$inferSelect;

const COLUMNS = `id, event_type AS eventType, region, payload, state, attempts, last_status AS lastStatus,
  last_error AS lastError, next_attempt_at AS nextAttemptAt, emailed_at AS emailedAt,
  created_at AS createdAt, delivered_at AS deliveredAt`;

export async function insertAlerts(db: Db, alerts: readonly OperatorAlertRow[]): Promise<void> {
  if (alerts.length === 0) return;
  const d1 = db.$client;
  await d1.batch(
    alerts.map((alert) =>
      d1
        .prepare(
          `INSERT INTO operator_alerts (id, event_type, region, payload, state, attempts, next_attempt_at, created_at)
           VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7)`,
        )
        .bind(
          alert.id,
          alert.eventType,
          alert.region,
          alert.payload,
          alert.state,
          alert.nextAttemptAt,
          alert.createdAt,
        ),
    ),
  );
}

/** Alerts due for an attempt, oldest first. */
export async function dueAlerts(db: Db, now: number, limit: number): Promise<OperatorAlertRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT ${COLUMNS} FROM operator_alerts WHERE state = 'pending' AND next_attempt_at <= ?1
       ORDER BY created_at, rowid LIMIT ?2`,
    )
    .bind(now, limit)
    .all<OperatorAlertRow>();
  return results;
}

/** Alerts not emailed yet, oldest first. */
export async function unmailedAlerts(db: Db, since: number, limit: number): Promise<OperatorAlertRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT ${COLUMNS} FROM operator_alerts WHERE emailed_at IS NULL AND created_at >= ?1
       ORDER BY created_at, rowid LIMIT ?2`,
    )
    .bind(since, limit)
    .all<OperatorAlertRow>();
  return results;
}

/** The newest alerts, for the operator's view. */
export async function recentAlerts(db: Db, limit: number): Promise<OperatorAlertRow[]> {
  const { results } = await db.$client
    .prepare(`SELECT ${COLUMNS} FROM operator_alerts ORDER BY created_at DESC, rowid DESC LIMIT ?1`)
    .bind(limit)
    .all<OperatorAlertRow>();
  return results;
}

/** Claims the alerts' email: true for the one caller that gets to send it. */
export async function claimAlertEmail(db: Db, ids: readonly string[], now: number): Promise<string[]> {
  if (ids.length === 0) return [];
  const { results } = await db.$client
    .prepare(
      `UPDATE operator_alerts SET emailed_at = ?1
       WHERE emailed_at IS NULL AND id IN (SELECT value FROM json_each(?2)) RETURNING id`,
    )
    .bind(now, JSON.stringify(ids))
    .all<{ id: string }>();
  return results.map((row) => row.id);
}
