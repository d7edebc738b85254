// Watched jobs in D1 (docs/architecture.md, "Watched jobs"): a completed job with `watch_days`
// keeps one row per domain in `job_watch_domains` with the domain facts its verdicts rest on.
// The cron looks at the domains, and a job whose domain facts changed gets a follow-up round
// (the same rounds as the greylist follow-up, storage/rechecks.ts, which record, charge and
// close them) for its addresses at the changed domains; the round's claim records the change.
import { WATCH_DEFAULT_DAYS } from '@rcpt/shared/contract/api';
import type { Db } from './db.ts';
import { jobLists } from './job-lists/index.ts';
import type { JsonChunk } from './json-chunks.ts';
import { rowBytes } from './storage-budget.ts';

const DAY_MS = 86_400_000;

/** The days an upload that does not say watches its job: the account's default. */
export async function defaultWatchDays(db: Db, accountId: string): Promise<number | 'off'> {
  const row = await db.$client
    .prepare('SELECT watch_default AS watch FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ watch: number }>();
  return row?.watch === 1 ? WATCH_DEFAULT_DAYS : 'off';
}

/** Sets a new job's watch (`days`, or 'off'). Part of the job's creation batch. */
export function watchDaysStatement(d1: D1Database, jobId: string, days: number | 'off'): D1PreparedStatement {
  return d1
    .prepare('UPDATE jobs SET watch_days = ?2 WHERE id = ?1')
    .bind(jobId, days === 'off' ? null : days);
}

/**
 * What a watched job's domain rows store, counted with the job at upload (docs/money.md, "Quotas
 * and free work"): per domain its row — ids, times, the facts' key (about 150 bytes) — on the
 * high side. A change seen later is rcpt's doing and not counted.
 */
export function watchRowsBytes(jobId: string, domains: Iterable<string>): number {
  let bytes = 0;
  for (const domain of new Set(domains)) bytes += rowBytes(jobId, domain, jobId, 0, 0, 0) + 150;
  return bytes;
}

/**
 * The watch's start, in the transaction that completes the job (before it is finalized): until
 * when it watches, and its domains (`domains`: the lists' distinct domains, IP literals left
 * out — `a@[192.0.2.1]` has no DNS and never changes) with the facts their verdicts were reached
 * on. A domain without facts (its DNS failed) starts with none: facts that appear later are a change.
 */
export function startWatchStatements(
  d1: D1Database,
  jobId: string,
  domains: readonly JsonChunk[],
): D1PreparedStatement[] {
  const starting = `j.watch_days IS NOT NULL AND j.status = 'completed' AND j.finalized = 0`;
  return [
    ...domains.map((chunk) =>
      d1
        .prepare(
          `INSERT INTO job_watch_domains (job_id, domain, account_id, facts_changed_at, facts_key, looked_at)
           SELECT ?1, d.value, j.account_id, COALESCE(f.changed_at, 0),
             CASE WHEN f.domain IS NOT NULL THEN json_array(f.route_key, f.catch_all, f.tenant) END, j.completed_at
           FROM json_each(?2) d
             JOIN jobs j ON j.id = ?1
             LEFT JOIN domain_facts f ON f.domain = d.value
           WHERE ${starting}
           ON CONFLICT (job_id, domain) DO NOTHING`,
        )
        .bind(jobId, chunk.json),
    ),
    d1
      .prepare(
        `UPDATE jobs SET watch_until = completed_at + watch_days * ${DAY_MS}
         WHERE id = ?1 AND watch_days IS NOT NULL AND status = 'completed' AND finalized = 0`,
      )
      .bind(jobId),
  ];
}

/**
 * Up to `limit` domains of running watches, fair across accounts: each account's domain looked
 * at longest ago first, then each one's second, and so on; a domain several accounts watch is
 * one domain.
 */
export async function domainsToLookAt(db: Db, now: number, limit: number): Promise<string[]> {
  const { results } = await db.$client
    .prepare(
      `WITH active AS (
         SELECT w.account_id, w.domain, MIN(w.looked_at) AS looked_at
         FROM job_watch_domains w JOIN jobs j ON j.id = w.job_id
         WHERE j.watch_until > ?1 AND j.status = 'completed'
         GROUP BY w.account_id, w.domain
       ), turns AS (
         SELECT domain, looked_at, ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY looked_at, domain) AS turn
         FROM active
       )
       SELECT domain FROM turns GROUP BY domain ORDER BY MIN(turn), MIN(looked_at), domain LIMIT ?2`,
    )
    .bind(now, limit)
    .all<{ domain: string }>();
  return results.map((row) => row.domain);
}

/** A running watch of one domain by one job, with the facts the job's verdicts there rest on. */
export interface DomainWatcher {
  jobId: string;
  domain: string;
  factsChangedAt: number;
  /** JSON: [route key, catch-all reading, tenant], as the domain facts held them; null: none. */
  factsKey: string | null;
}

/** The running watches of `domains`. */
export async function watchersOf(db: Db, domains: readonly string[], now: number): Promise<DomainWatcher[]> {
  if (domains.length === 0) return [];
  const { results } = await db.$client
    .prepare(
      `SELECT w.job_id AS jobId, w.domain, w.facts_changed_at AS factsChangedAt, w.facts_key AS factsKey
       FROM job_watch_domains w JOIN jobs j ON j.id = w.job_id
       WHERE w.domain IN (SELECT value FROM json_each(?1)) AND j.watch_until > ?2 AND j.status = 'completed'`,
    )
    .bind(JSON.stringify(domains), now)
    .all<DomainWatcher>();
  return results;
}

/** The facts a watcher's verdicts rest on from now, and the change that moved them there. */
export interface SeenFacts {
  domain: string;
  factsChangedAt: number;
  factsKey: string | null;
  /** JSON: the change (WatchChange without the counts); absent when the facts did not change. */
  change?: string;
}

/**
 * Records what the cron looked at: `looked` (job, domain) pairs get `looked_at`, and `seen`
 * watchers whose facts moved without a change (the same answers written again) take them as
 * their baseline.
 */
export async function recordLook(
  db: Db,
  looked: readonly { jobId: string; domain: string }[],
  seen: readonly (SeenFacts & { jobId: string })[],
  now: number,
): Promise<void> {
  const d1 = db.$client;
  const statements: D1PreparedStatement[] = [];
  if (seen.length > 0) {
    statements.push(
      d1
        .prepare(
          `INSERT INTO job_watch_domains (job_id, domain, account_id, facts_changed_at, facts_key, looked_at)
           SELECT j.value->>0, j.value->>1, '', j.value->>2, j.value->>3, ?2 FROM json_each(?1) j
           WHERE EXISTS (SELECT 1 FROM job_watch_domains w WHERE w.job_id = j.value->>0 AND w.domain = j.value->>1)
           ON CONFLICT (job_id, domain) DO UPDATE SET facts_changed_at = excluded.facts_changed_at,
             facts_key = excluded.facts_key`,
        )
        .bind(
          JSON.stringify(seen.map((each) => [each.jobId, each.domain, each.factsChangedAt, each.factsKey])),
          now,
        ),
    );
  }
  if (looked.length > 0) {
    statements.push(
      d1
        .prepare(
          `UPDATE job_watch_domains SET looked_at = ?2
           WHERE (job_id, domain) IN (SELECT value->>0, value->>1 FROM json_each(?1))`,
        )
        .bind(JSON.stringify(looked.map((each) => [each.jobId, each.domain])), now),
    );
  }
  if (statements.length > 0) await d1.batch(statements);
}

export interface WatchRound {
  /** The round's number (the job's follow-up rounds count on from the greylist follow-up's). */
  round: number;
  addresses: { idx: number; email: string; domain: string }[];
}

/**
 * Starts a follow-up round of the job for its addresses at the `changed` domains, if the watch
 * runs and no round does: the addresses become 'asking' until `endsAt`, and each domain's row
 * takes the facts and the change. Null when not started (another round runs: the change is
 * still unseen, and the next look starts it).
 */
export async function claimWatchRound(
  db: Db,
  input: { jobId: string; round: number; changed: readonly SeenFacts[]; now: number; endsAt: number },
): Promise<WatchRound | null> {
  const d1 = db.$client;
  const claimed =
    'EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND recheck_round = ?2 + 1 AND recheck_round_ends_at = ?3)';
  const [claim] = await d1.batch([
    d1
      .prepare(
        `UPDATE jobs SET recheck_round = recheck_round + 1, watch_rounds = watch_rounds + 1, recheck_round_ends_at = ?3
         WHERE id = ?1 AND recheck_round = ?2 AND recheck_round_ends_at IS NULL AND status = 'completed'
           AND watch_until > ?4
         RETURNING recheck_round AS round`,
      )
      .bind(input.jobId, input.round, input.endsAt, input.now),
    d1
      .prepare(
        `INSERT INTO job_watch_domains (job_id, domain, account_id, facts_changed_at, facts_key, looked_at, change, changed_at, round)
         SELECT ?1, j.value->>0, '', j.value->>1, j.value->>2, ?5, j.value->>3, ?5, ?2 + 1
         FROM json_each(?4) j WHERE ${claimed}
         ON CONFLICT (job_id, domain) DO UPDATE SET facts_changed_at = excluded.facts_changed_at,
           facts_key = excluded.facts_key, looked_at = excluded.looked_at, change = excluded.change,
           changed_at = excluded.changed_at, round = excluded.round`,
      )
      .bind(
        input.jobId,
        input.round,
        input.endsAt,
        JSON.stringify(
          input.changed.map((each) => [each.domain, each.factsChangedAt, each.factsKey, each.change ?? null]),
        ),
        input.now,
      ),
  ]);
  const round = (claim?.results[0] as { round: number } | undefined)?.round;
  if (round === undefined) return null;
  // Then the lists: the round's addresses are asked. A crash before this leaves the round with
  // nothing asked: it closes at its end time (storage/rechecks.ts, closeExpiredRounds), and as
  // the domains' change is recorded, their addresses are asked at the domain's next change.
  const addresses = await jobLists(db, input.jobId).claimDomains(input.changed.map((each) => each.domain));
  return { round, addresses };
}

/** A domain change a watch saw, as stored, with the job's addresses there and how many it changed. */
export interface SeenChangeRow {
  domain: string;
  /** JSON: the change (WatchChange without the counts). */
  change: string;
  changedAt: number;
  round: number;
  addresses: number;
  changedAddresses: number;
}

/** The job's domain changes, the latest first; only those of follow-up round `round` when given. */
export async function seenChangesOf(
  db: Db,
  jobId: string,
  options: { round?: number; limit: number },
): Promise<SeenChangeRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT w.domain, w.change, w.changed_at AS changedAt, w.round FROM job_watch_domains w
       WHERE w.job_id = ?1 AND w.change IS NOT NULL AND (?2 IS NULL OR w.round = ?2)
       ORDER BY w.changed_at DESC, w.domain LIMIT ?3`,
    )
    .bind(jobId, options.round ?? null, options.limit)
    .all<Omit<SeenChangeRow, 'addresses' | 'changedAddresses'>>();
  if (results.length === 0) return [];
  const counts = new Map(
    (await jobLists(db, jobId).domainCounts(results)).map((row) => [row.domain, row] as const),
  );
  return results.map((row) => ({
    ...row,
    addresses: counts.get(row.domain)?.addresses ?? 0,
    changedAddresses: counts.get(row.domain)?.changed ?? 0,
  }));
}
