// Alerts an operator can act on (docs/operations.md, "Alerts"): what a region's hub sees happen
// to its fleet — an egress blocked at a mail server or provider and the block's end, listed on or
// delisted from a blocklist, its reverse DNS failing or passing again, a prober gone, the
// region's last prober gone — kept as rows, posted to OPERATOR_WEBHOOK_URL signed the
// Standard Webhooks way (the same signing and retry rules as customers' job events,
// webhooks/delivery.ts) and emailed to OPERATOR_EMAIL, each with a link to the fleet view.
import type { EgressBlockInfo, EgressHealthInfo } from '@rcpt/shared/contract/prober';
import type { Config } from '../../config.ts';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  claimAlertEmail,
  dueAlerts,
  insertAlerts,
  type OperatorAlertRow,
  recentAlerts,
  unmailedAlerts,
} from '../../storage/operator-alerts.ts';
import { recordAttempt } from '../../storage/webhooks.ts';
import { type NoticeSender, noticeSenderFor } from '../accounts/confirmation-sender.ts';
import { attemptOutcome, postSignedEvent, WEBHOOK_MAX_ATTEMPTS } from '../webhooks/signed-post.ts';

export type FleetAlertType =
  | 'egress.blocked'
  | 'egress.unblocked'
  | 'egress.listed'
  | 'egress.delisted'
  | 'egress.reverse_dns_failed'
  | 'egress.reverse_dns_passed'
  | 'prober.gone'
  | 'region.gone';

/** One thing that happened to the fleet, as a hub saw it. */
export interface FleetAlert {
  type: FleetAlertType;
  region: string;
  /** What the alert is about: the egress and its block, the prober. */
  data: Record<string, unknown>;
}

/** What the hub needs to raise alerts: the database, the config, the email sender if any. */
export interface AlertDeps {
  db: Db;
  config: Config;
  notices: NoticeSender | null;
}

/** The alerts' dependencies from a deployment's config and bindings (no email sender: logged, not thrown). */
export function alertDepsOf(db: Db, config: Config, env: object): AlertDeps {
  let notices: NoticeSender | null = null;
  try {
    notices = config.OPERATOR_EMAIL ? noticeSenderFor(config, env) : null;
  } catch (error) {
    log.warn('fleet alerts cannot be emailed', errorFields(error));
  }
  return { db, config, notices };
}

/** Alerts the cron attempts in one run at most; the rest wait for the next. */
const ALERTS_PER_RUN = 50;
/** How far back the cron looks for alerts whose email was not sent. */
const EMAIL_LOOKBACK_MS = 24 * 60 * 60_000;

/** The alerts that `before` → `after` of one prober's blocks make: each new block, each one ended. */
export function blockAlerts(
  region: string,
  proberId: string,
  before: readonly EgressBlockInfo[],
  after: readonly EgressBlockInfo[],
): FleetAlert[] {
  const key = (block: EgressBlockInfo) => `${block.egress}\n${block.scope.kind}\n${block.scope.name}`;
  const had = new Map(before.map((block) => [key(block), block]));
  const has = new Map(after.map((block) => [key(block), block]));
  const alerts: FleetAlert[] = [];
  for (const [blockKey, block] of has) {
    if (!had.has(blockKey)) alerts.push({ type: 'egress.blocked', region, data: blockData(proberId, block) });
  }
  for (const [blockKey, block] of had) {
    if (!has.has(blockKey))
      alerts.push({ type: 'egress.unblocked', region, data: blockData(proberId, block) });
  }
  return alerts;
}

/**
 * The alerts that a new health check of each egress makes against the one before it (none
 * before: its first check, which alerts what it finds wrong): each blocklist it is newly listed
 * on or delisted from, and its forward-confirmed reverse DNS turning to fail or back to pass.
 */
export function healthAlerts(
  region: string,
  proberId: string,
  before: readonly EgressHealthInfo[],
  after: readonly EgressHealthInfo[],
): FleetAlert[] {
  const alerts: FleetAlert[] = [];
  for (const check of after) {
    const previous = before.find((earlier) => earlier.egress === check.egress);
    const base = {
      proberId,
      egress: check.egress,
      address: check.address,
      checkedAt: new Date(check.checkedAt).toISOString(),
    };
    const zonesBefore = new Set(previous?.listings.map((listing) => listing.zone) ?? []);
    const zonesNow = new Set(check.listings.map((listing) => listing.zone));
    for (const listing of check.listings) {
      if (!zonesBefore.has(listing.zone))
        alerts.push({ type: 'egress.listed', region, data: { ...base, listing } });
    }
    for (const zone of zonesBefore) {
      if (!zonesNow.has(zone)) alerts.push({ type: 'egress.delisted', region, data: { ...base, zone } });
    }
    const reverseDns = { ...base, ptr: check.ptr, fcrdns: check.fcrdns, heloMatches: check.heloMatches };
    if (check.fcrdns === 'fail' && previous?.fcrdns !== 'fail')
      alerts.push({ type: 'egress.reverse_dns_failed', region, data: reverseDns });
    if (check.fcrdns === 'pass' && previous?.fcrdns === 'fail')
      alerts.push({ type: 'egress.reverse_dns_passed', region, data: reverseDns });
  }
  return alerts;
}

function blockData(proberId: string, block: EgressBlockInfo): Record<string, unknown> {
  return {
    proberId,
    egress: block.egress,
    scope: block.scope,
    since: new Date(block.since).toISOString(),
    until: new Date(block.until).toISOString(),
    level: block.level,
    reply: block.reply,
  };
}

/** Keeps the alerts and attempts each at once; what fails is retried by the cron (`deliverDueAlerts`). */
export async function raiseAlerts(
  deps: AlertDeps,
  alerts: readonly FleetAlert[],
  now: number,
): Promise<void> {
  if (alerts.length === 0) return;
  const rows = alerts.map((alert) => alertRow(deps.config, alert, now));
  await insertAlerts(deps.db, rows);
  for (const alert of alerts) log.warn('fleet alert', { event: alert.type, region: alert.region });
  await Promise.all([...rows.map((row) => attemptAlert(deps, row, now)), emailAlerts(deps, rows, now)]);
}

/** The cron's part: alerts due again, and the email of any alert whose email was not sent. */
export async function deliverDueAlerts(deps: AlertDeps, now: number): Promise<{ attempted: number }> {
  const due = await dueAlerts(deps.db, now, ALERTS_PER_RUN);
  for (const row of due) await attemptAlert(deps, row, now);
  await emailAlerts(deps, await unmailedAlerts(deps.db, now - EMAIL_LOOKBACK_MS, ALERTS_PER_RUN), now);
  return { attempted: due.length };
}

function alertRow(config: Config, alert: FleetAlert, now: number): OperatorAlertRow {
  const id = `msg_${crypto.randomUUID().replaceAll('-', '')}`;
  const payload = JSON.stringify({
    type: alert.type,
    timestamp: new Date(now).toISOString(),
    data: { region: alert.region, ...alert.data, fleetUrl: fleetUrlOf(config, alert.region) },
  });
  return {
    id,
    eventType: alert.type,
    region: alert.region,
    payload,
    // Without a URL there is nothing to attempt: the row is the record, and the email the alert.
    state: config.OPERATOR_WEBHOOK_URL ? 'pending' : 'failed',
    attempts: 0,
    lastStatus: null,
    lastError: config.OPERATOR_WEBHOOK_URL ? null : 'OPERATOR_WEBHOOK_URL is not set',
    nextAttemptAt: config.OPERATOR_WEBHOOK_URL ? now : null,
    emailedAt: null,
    createdAt: now,
    deliveredAt: null,
  };
}

/** The fleet view of `region`: absolute when PUBLIC_URL says where this edge is. */
export function fleetUrlOf(config: Config, region: string): string {
  const path = `/internal/fleet?region=${encodeURIComponent(region)}`;
  return config.PUBLIC_URL ? new URL(path, config.PUBLIC_URL).toString() : path;
}

async function attemptAlert(deps: AlertDeps, row: OperatorAlertRow, now: number): Promise<void> {
  const { OPERATOR_WEBHOOK_URL: url, OPERATOR_WEBHOOK_SECRET: secret } = deps.config;
  if (!url || !secret || row.state !== 'pending') return;
  let sent: { status: number | null; error: string | null };
  try {
    sent = await postSignedEvent(url, { id: row.id, payload: row.payload, secret }, deps.config, now);
  } catch (cause) {
    sent = { status: null, error: cause instanceof Error ? cause.message.slice(0, 200) : 'delivery failed' };
  }
  const outcome = attemptOutcome(sent.status, row.attempts + 1, WEBHOOK_MAX_ATTEMPTS, now);
  await recordAttempt(
    deps.db,
    row.id,
    { ...outcome, status: sent.status, error: sent.error, now },
    'operator_alerts',
  );
}

/** One email for the alerts not emailed yet, claimed first so two runs never both send it. */
async function emailAlerts(deps: AlertDeps, rows: readonly OperatorAlertRow[], now: number): Promise<void> {
  const to = deps.config.OPERATOR_EMAIL;
  if (!to || !deps.notices || rows.length === 0) return;
  const claimed = new Set(
    await claimAlertEmail(
      deps.db,
      rows.map((row) => row.id),
      now,
    ),
  );
  const mine = rows.filter((row) => claimed.has(row.id));
  if (mine.length === 0) return;
  const lines = mine.map((row) => {
    const { data } = JSON.parse(row.payload) as {
      data: { fleetUrl: string; egress?: string; proberId?: string };
    };
    const subject = data.egress ?? data.proberId ?? row.region;
    return `${row.eventType} in ${row.region}: ${subject} — ${data.fleetUrl}`;
  });
  const regions = [...new Set(mine.map((row) => row.region))].join(', ');
  try {
    await deps.notices.send({
      to,
      subject: `rcpt fleet: ${mine.length} alert${mine.length === 1 ? '' : 's'} in ${regions}`,
      text: `${lines.join('\n')}\n\nThe fleet view: ${fleetUrlOf(deps.config, mine[0]?.region ?? '')}\n`,
    });
  } catch (error) {
    log.error('fleet alert email failed', errorFields(error));
  }
}

/** Alerts the operator's view lists, newest first. */
const ALERTS_SHOWN = 20;

/** The newest alerts as the operator's view shows them: what, where, when, how its delivery stands. */
export async function alertsView(deps: { db: Db }) {
  return (await recentAlerts(deps.db, ALERTS_SHOWN)).map((row) => {
    const { data } = JSON.parse(row.payload) as { data: { egress?: string; proberId?: string } };
    return {
      id: row.id,
      type: row.eventType,
      region: row.region,
      at: new Date(row.createdAt).toISOString(),
      delivery: row.state,
      subject: data.egress ?? data.proberId ?? null,
      data,
    };
  });
}
