// The domain facts table: one row per domain, each fact with its expiry. A write changes
// `changed_at` only when it replaces a different answer of the same fact, in the same
// statement, so concurrent writers cannot lose a change.
import type { Db } from './db.ts';
import { directoryOf } from './shards.ts';

export interface DomainFactsRow {
  domain: string;
  route: string | null;
  routeKey: string | null;
  routeExpiresAt: number | null;
  provider: string | null;
  catchAllReply: string | null;
  catchAll: number | null;
  catchAllExpiresAt: number | null;
  tenant: string | null;
  tenantExpiresAt: number | null;
  greylistDelaySeconds: number | null;
  greylistDelayExpiresAt: number | null;
  slowProbeSeconds: number | null;
  slowProbeTimedOut: number | null;
  slowProbeExpiresAt: number | null;
  acceptedBounces: number | null;
  acceptedBounceAccounts: number | null;
  acceptedBouncesAt: number | null;
  changedAt: number;
  updatedAt: number;
}

const FACTS_COLUMNS = `domain, route, route_key AS routeKey, route_expires_at AS routeExpiresAt, provider,
  catch_all_reply AS catchAllReply, catch_all AS catchAll, catch_all_expires_at AS catchAllExpiresAt,
  tenant, tenant_expires_at AS tenantExpiresAt, greylist_delay_s AS greylistDelaySeconds,
  greylist_delay_expires_at AS greylistDelayExpiresAt, slow_probe_s AS slowProbeSeconds,
  slow_probe_timed_out AS slowProbeTimedOut, slow_probe_expires_at AS slowProbeExpiresAt,
  accepted_bounces AS acceptedBounces, accepted_bounce_accounts AS acceptedBounceAccounts,
  accepted_bounces_at AS acceptedBouncesAt, changed_at AS changedAt, updated_at AS updatedAt`;

/**
 * The database of the domain facts: every account shares them, so they live in the directory's
 * database whichever shard's database the caller holds (storage/shards.ts).
 */
function factsD1(db: Db): D1Database {
  return directoryOf(db).$client;
}

export async function readDomainFacts(db: Db, domain: string): Promise<DomainFactsRow | null> {
  return readDomainFactsStatement(db, domain).first<DomainFactsRow>();
}

/** The statement `readDomainFacts` runs, for a batch that needs the facts beside another read. */
export function readDomainFactsStatement(db: Db, domain: string): D1PreparedStatement {
  return factsD1(db).prepare(`SELECT ${FACTS_COLUMNS} FROM domain_facts WHERE domain = ?1`).bind(domain);
}

/** The rows of those of `domains` that have one, in one statement. */
export async function readManyDomainFacts(db: Db, domains: readonly string[]): Promise<DomainFactsRow[]> {
  if (domains.length === 0) return [];
  const { results } = await factsD1(db)
    .prepare(`SELECT ${FACTS_COLUMNS} FROM domain_facts WHERE domain IN (SELECT value FROM json_each(?1))`)
    .bind(JSON.stringify(domains))
    .all<DomainFactsRow>();
  return results;
}

/** Records a resolved mail route; a different `routeKey` than the one kept is a change. Returns `changed_at`. */
export async function recordMailRoute(
  db: Db,
  fact: {
    domain: string;
    route: string;
    routeKey: string;
    provider: string | null;
    expiresAt: number;
    now: number;
  },
): Promise<number> {
  const row = await factsD1(db)
    .prepare(
      `INSERT INTO domain_facts (domain, route, route_key, route_expires_at, provider, changed_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
       ON CONFLICT (domain) DO UPDATE SET route = excluded.route, route_key = excluded.route_key,
         route_expires_at = excluded.route_expires_at, provider = excluded.provider, updated_at = excluded.updated_at,
         changed_at = CASE WHEN domain_facts.route_key IS NOT NULL AND domain_facts.route_key IS NOT excluded.route_key
           THEN excluded.changed_at ELSE domain_facts.changed_at END
       RETURNING changed_at AS changedAt`,
    )
    .bind(fact.domain, fact.route, fact.routeKey, fact.expiresAt, fact.provider, fact.now)
    .first<{ changedAt: number }>();
  return row?.changedAt ?? fact.now;
}

/** Records a catch-all answer; a different reading (catch-all or not) than the one kept is a change. Returns `changed_at`. */
export async function recordCatchAll(
  db: Db,
  fact: { domain: string; reply: string; catchAll: boolean; expiresAt: number; now: number },
): Promise<number> {
  const row = await factsD1(db)
    .prepare(
      `INSERT INTO domain_facts (domain, catch_all_reply, catch_all, catch_all_expires_at, changed_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?5)
       ON CONFLICT (domain) DO UPDATE SET catch_all_reply = excluded.catch_all_reply, catch_all = excluded.catch_all,
         catch_all_expires_at = excluded.catch_all_expires_at, updated_at = excluded.updated_at,
         changed_at = CASE WHEN domain_facts.catch_all IS NOT NULL AND domain_facts.catch_all IS NOT excluded.catch_all
           THEN excluded.changed_at ELSE domain_facts.changed_at END
       RETURNING changed_at AS changedAt`,
    )
    .bind(fact.domain, fact.reply, fact.catchAll ? 1 : 0, fact.expiresAt, fact.now)
    .first<{ changedAt: number }>();
  return row?.changedAt ?? fact.now;
}

/**
 * Records a tenant detection (JSON: the tenant, or that there is none); a different one than the
 * one kept is a change, since verdicts reached through a tenant rest on it. Returns `changed_at`.
 */
export async function recordTenant(
  db: Db,
  fact: { domain: string; tenant: string; expiresAt: number; now: number },
): Promise<number> {
  const row = await factsD1(db)
    .prepare(
      `INSERT INTO domain_facts (domain, tenant, tenant_expires_at, changed_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?4)
       ON CONFLICT (domain) DO UPDATE SET tenant = excluded.tenant, tenant_expires_at = excluded.tenant_expires_at,
         updated_at = excluded.updated_at,
         changed_at = CASE WHEN domain_facts.tenant IS NOT NULL AND domain_facts.tenant IS NOT excluded.tenant
           THEN excluded.changed_at ELSE domain_facts.changed_at END
       RETURNING changed_at AS changedAt`,
    )
    .bind(fact.domain, fact.tenant, fact.expiresAt, fact.now)
    .first<{ changedAt: number }>();
  return row?.changedAt ?? fact.now;
}

/**
 * Records how long the domain's greylisting held an address back, as last measured. A delay is
 * no verdict's ground, so `changed_at` stays.
 */
export async function recordGreylistDelay(
  db: Db,
  fact: { domain: string; seconds: number; expiresAt: number; now: number },
): Promise<void> {
  await factsD1(db)
    .prepare(
      `INSERT INTO domain_facts (domain, greylist_delay_s, greylist_delay_expires_at, changed_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?4)
       ON CONFLICT (domain) DO UPDATE SET greylist_delay_s = excluded.greylist_delay_s,
         greylist_delay_expires_at = excluded.greylist_delay_expires_at, updated_at = excluded.updated_at`,
    )
    .bind(fact.domain, fact.seconds, fact.expiresAt, fact.now)
    .run();
}

/**
 * Records the domain's slowest recent batch probe, as last measured. Like the greylisting
 * delay it is no verdict's ground, so `changed_at` stays.
 */
export async function recordSlowProbe(
  db: Db,
  fact: { domain: string; seconds: number; timedOut: boolean; expiresAt: number; now: number },
): Promise<void> {
  await factsD1(db)
    .prepare(
      `INSERT INTO domain_facts (domain, slow_probe_s, slow_probe_timed_out, slow_probe_expires_at, changed_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?5)
       ON CONFLICT (domain) DO UPDATE SET slow_probe_s = excluded.slow_probe_s,
         slow_probe_timed_out = excluded.slow_probe_timed_out,
         slow_probe_expires_at = excluded.slow_probe_expires_at, updated_at = excluded.updated_at`,
    )
    .bind(fact.domain, fact.seconds, fact.timedOut ? 1 : 0, fact.expiresAt, fact.now)
    .run();
}

/** An account's new bounces of addresses a domain had accepted (docs/verdicts.md, "Learning from outcomes"). */
export interface AcceptedBouncesSeen {
  domain: string;
  accountId: string;
  bounces: number;
  lastAt: number;
}

/**
 * Records accounts' hard bounces on a mailbox reason of addresses their domains had accepted,
 * and sums, per domain, the accounts whose latest one is since `window.start` into its facts —
 * every domain in one transaction, one round trip. A domain's answer changes — and `changed_at`
 * with it — when its sum crosses the thresholds (`minAccounts` accounts and `minBounces`
 * bounces), either way.
 */
export async function recordAcceptedBounces(
  db: Db,
  seen: readonly AcceptedBouncesSeen[],
  window: { start: number; minAccounts: number; minBounces: number; now: number },
): Promise<void> {
  if (seen.length === 0) return;
  const d1 = factsD1(db);
  const learntSql = (table: string) =>
    `(COALESCE(${table}.accepted_bounce_accounts, 0) >= ?4 AND COALESCE(${table}.accepted_bounces, 0) >= ?5)`;
  const rows = JSON.stringify(seen);
  await d1.batch([
    d1
      .prepare(
        `INSERT INTO domain_accepted_bounces (domain, account_id, bounces, last_at)
         SELECT json_extract(value, '$.domain'), json_extract(value, '$.accountId'),
           json_extract(value, '$.bounces'), json_extract(value, '$.lastAt') FROM json_each(?1) WHERE true
         ON CONFLICT (domain, account_id) DO UPDATE SET bounces = bounces + excluded.bounces,
           last_at = MAX(last_at, excluded.last_at)`,
      )
      .bind(rows),
    d1
      .prepare(
        `INSERT INTO domain_facts (domain, accepted_bounces, accepted_bounce_accounts, accepted_bounces_at, changed_at, updated_at)
         SELECT domain, SUM(bounces), COUNT(*), MAX(last_at), ?3, ?3 FROM domain_accepted_bounces
         WHERE domain IN (SELECT json_extract(value, '$.domain') FROM json_each(?1)) AND last_at >= ?2
         GROUP BY domain
         ON CONFLICT (domain) DO UPDATE SET accepted_bounces = excluded.accepted_bounces,
           accepted_bounce_accounts = excluded.accepted_bounce_accounts,
           accepted_bounces_at = excluded.accepted_bounces_at, updated_at = excluded.updated_at,
           changed_at = CASE WHEN ${learntSql('domain_facts')} IS NOT ${learntSql('excluded')}
             THEN excluded.changed_at ELSE domain_facts.changed_at END`,
      )
      .bind(rows, window.start, window.now, window.minAccounts, window.minBounces),
  ]);
}

/**
 * What an upload's estimate reads of one domain rcpt knows: what slows its batch work, as last
 * measured (its greylisting delay and its slowest probe), both null when nothing does.
 */
export interface DomainPaceRow {
  domain: string;
  greylistDelaySeconds: number | null;
  slowProbeSeconds: number | null;
  slowProbeTimedOut: number | null;
}

/**
 * Those of `domains` whose pace rcpt knows, with their still-trusted greylisting delays and slow
 * probes, in one statement: what a new job's estimate counts on. Known: a pace measured (a delay,
 * a slow probe), or a probe answered within the catch-all fact's life (every probe asks the
 * made-up address, and a quick one is not written as slow), or a route with no mail server to
 * probe. A domain not in the answer has not been met, or not lately.
 */
export async function readDomainPaces(
  db: Db,
  domains: readonly string[],
  now: number,
): Promise<DomainPaceRow[]> {
  if (domains.length === 0) return [];
  const { results } = await factsD1(db)
    .prepare(
      `SELECT domain,
         CASE WHEN greylist_delay_expires_at > ?2 THEN greylist_delay_s END AS greylistDelaySeconds,
         CASE WHEN slow_probe_expires_at > ?2 THEN slow_probe_s END AS slowProbeSeconds,
         CASE WHEN slow_probe_expires_at > ?2 THEN slow_probe_timed_out END AS slowProbeTimedOut
       FROM domain_facts WHERE domain IN (SELECT value FROM json_each(?1))
         AND (greylist_delay_expires_at > ?2 OR slow_probe_expires_at > ?2 OR catch_all_expires_at > ?2
           OR (route_expires_at > ?2 AND route_key NOT LIKE 'mx|%'))`,
    )
    .bind(JSON.stringify(domains), now)
    .all<DomainPaceRow>();
  return results;
}

/**
 * The still-trusted greylisting delays (seconds) of any domains, the `limit` newest measures
 * first (the `domain_facts_greylist_delay` index): what greylisters hold addresses back for.
 */
export async function recentGreylistDelays(db: Db, now: number, limit: number): Promise<number[]> {
  const { results } = await factsD1(db)
    .prepare(
      `SELECT greylist_delay_s AS seconds FROM domain_facts
       WHERE greylist_delay_s IS NOT NULL AND greylist_delay_expires_at > ?1
       ORDER BY greylist_delay_expires_at DESC LIMIT ?2`,
    )
    .bind(now, limit)
    .all<{ seconds: number }>();
  return results.map((row) => row.seconds);
}
