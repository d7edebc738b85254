// Outcomes and the verdicts they are matched to (docs/verdicts.md, "Outcomes"), and the accounts'
// endpoints for the sending services' webhooks. A request's outcomes are written in one D1
// transaction that is conditional on the account's storage budget (storage-budget.ts): all of
// them, or none.

import { type DataMode, dataModeSql } from './api-keys.ts';
import { latestBatchVerdicts, type VerdictLookup } from './batch-verdicts.ts';
import { type Db, prepare } from './db.ts';
import { type GuaranteeClaim, refundGuaranteedVerdict } from './ledger.ts';
import { addLookup } from './shards.ts';
import {
  limitOrZeroSql,
  STORAGE_DAYS_ADD,
  type StorageLimit,
  type StorageUse,
  storageFitsSql,
  storageUsedSql,
} from './storage-budget.ts';

/** Rows of one INSERT … SELECT FROM json_each: a JSON parameter stays well under 500 KB. */
const ROWS_PER_STATEMENT = 200;

export interface OutcomeRow {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  source: 'api' | 'dashboard' | 'ses' | 'sendgrid' | 'postmark' | 'mailgun';
  eventKey: string;
  email: string;
  outcome: 'delivered' | 'hard_bounce' | 'soft_bounce' | 'complaint';
  at: number;
  diagnostic: string | null;
  bounceSubStatus: string | null;
  bounceKind: 'mailbox' | 'policy' | 'other' | null;
  verdictSource: 'single' | 'batch' | null;
  verdictRef: string | null;
  verdictAt: number | null;
  verdictStatus: string | null;
  verdictSubStatus: string | null;
  verdictProvider: string | null;
  createdAt: number;
}

const COLUMNS: readonly [keyof OutcomeRow, string][] = [
  ['id', 'id'],
  ['accountId', 'account_id'],
  ['apiKeyId', 'api_key_id'],
  ['source', 'source'],
  ['eventKey', 'event_key'],
  ['email', 'email'],
  ['outcome', 'outcome'],
  ['at', 'at'],
  ['diagnostic', 'diagnostic'],
  ['bounceSubStatus', 'bounce_sub_status'],
  ['bounceKind', 'bounce_kind'],
  ['verdictSource', 'verdict_source'],
  ['verdictRef', 'verdict_ref'],
  ['verdictAt', 'verdict_at'],
  ['verdictStatus', 'verdict_status'],
  ['verdictSubStatus', 'verdict_sub_status'],
  ['verdictProvider', 'verdict_provider'],
  ['createdAt', 'created_at'],
];
const SELECT_COLUMNS = COLUMNS.map(([field, column]) => `o.${column} AS ${field}`).join(', ');

/** A verdict an outcome may be matched to. */
export interface VerdictCandidate {
  /** Index of the outcome it is a candidate for. */
  index: number;
  source: 'single' | 'batch';
  ref: string;
  at: number;
  status: string;
  subStatus: string;
  resultJson: string | null;
}

/**
 * For each `{email, at}` (index = position), the account's latest answered single call and latest
 * answered job address of that address made with keys of `mode`, within `windowMs` before `at`:
 * up to two candidates each; the single calls in one statement whatever the number of outcomes,
 * the jobs' answers from the lists of the jobs that may hold them (batch-verdicts.ts).
 */
export async function verdictCandidates(db: Db, lookup: VerdictLookup): Promise<VerdictCandidate[]> {
  if (lookup.outcomes.length === 0) return [];
  const d1 = db.$client;
  const pairs = JSON.stringify(lookup.outcomes.map(({ email, at }) => [email, at]));
  const email = "json_extract(o.value, '$[0]')";
  const at = "json_extract(o.value, '$[1]')";
  // verifications_address: (account_id, address, created_at).
  const { results: singles } = await d1
    .prepare(
      `SELECT o.key AS "index", v.id AS ref, v.created_at AS at, v.status, v.sub_status AS subStatus,
              v.result_json AS resultJson
       FROM json_each(?2) o JOIN verifications v ON v.id = (
         SELECT id FROM verifications
         WHERE account_id = ?1 AND address = ${email} AND created_at < ${at} AND created_at >= ${at} - ?3
           AND kind = 'single' AND status IS NOT NULL AND ${dataModeSql(lookup.mode)}
         ORDER BY created_at DESC LIMIT 1)`,
    )
    .bind(lookup.accountId, pairs, lookup.windowMs)
    .all<Omit<VerdictCandidate, 'source'>>();
  const batches = await latestBatchVerdicts(db, lookup);
  return [
    ...singles.map((row) => ({ ...row, index: Number(row.index), source: 'single' as const })),
    ...batches.map((row) => ({ ...row, source: 'batch' as const })),
  ];
}

/**
 * The account's latest hard bounce of `email` on a mailbox reason, reported with keys of `mode`
 * (or by its endpoints, live), when no `delivered` outcome of the account came after it
 * (docs/verdicts.md, "Learning from outcomes"). Index outcomes_account_email.
 */
export async function latestMailboxBounce(
  db: Db,
  lookup: MailboxBounceLookup,
): Promise<MailboxBounceRow | null> {
  return mailboxBouncesStatement(db, { ...lookup, emails: [lookup.email] }).first<MailboxBounceRow>();
}

export interface MailboxBounceLookup {
  accountId: string;
  mode: DataMode;
  email: string;
}

export interface MailboxBounceRow {
  at: number;
  subStatus: string | null;
  diagnostic: string | null;
}

/** Addresses a statement of `mailboxBouncesStatement` takes: a bound JSON array well within D1's limits. */
const EMAILS_PER_BOUNCE_READ = 1_000;

/**
 * The bounces `latestMailboxBounce` reads, of each of `emails` that has one (a row per address,
 * `email` naming it), for a batch that needs them beside another read or for a list's addresses.
 * SQLite gives a `MAX()` query's bare columns from the row holding the maximum.
 */
export function mailboxBouncesStatement(
  db: Db,
  lookup: { accountId: string; mode: DataMode; emails: readonly string[] },
): D1PreparedStatement {
  return db.$client
    .prepare(
      `SELECT o.email, MAX(o.at) AS at, o.bounce_sub_status AS subStatus, o.diagnostic FROM outcomes o
       WHERE o.account_id = ?1 AND o.email IN (SELECT value FROM json_each(?2))
         AND o.outcome = 'hard_bounce' AND o.bounce_kind = 'mailbox' AND ${dataModeSql(lookup.mode)}
         AND NOT EXISTS (SELECT 1 FROM outcomes d WHERE d.account_id = ?1 AND d.email = o.email
           AND d.outcome = 'delivered' AND d.at > o.at)
       GROUP BY o.email`,
    )
    .bind(lookup.accountId, JSON.stringify(lookup.emails));
}

/** The account's live mailbox bounces of these addresses (`latestMailboxBounce`'s), by address, in one round trip. */
export async function liveMailboxBounces(
  db: Db,
  accountId: string,
  emails: readonly string[],
): Promise<Map<string, MailboxBounceRow>> {
  const bounces = new Map<string, MailboxBounceRow>();
  if (emails.length === 0) return bounces;
  const statements: D1PreparedStatement[] = [];
  for (let start = 0; start < emails.length; start += EMAILS_PER_BOUNCE_READ) {
    const chunk = emails.slice(start, start + EMAILS_PER_BOUNCE_READ);
    statements.push(mailboxBouncesStatement(db, { accountId, mode: 'live', emails: chunk }));
  }
  for (const result of await db.$client.batch<MailboxBounceRow & { email: string }>(statements)) {
    for (const { email, ...bounce } of result.results) bounces.set(email, bounce);
  }
  return bounces;
}

/** Which of these (eventKey, email) the account has recorded already. */
export async function recordedOutcomes(
  db: Db,
  accountId: string,
  keys: readonly { eventKey: string; email: string }[],
): Promise<OutcomeRow[]> {
  const found: OutcomeRow[] = [];
  for (let start = 0; start < keys.length; start += ROWS_PER_STATEMENT) {
    const chunk = JSON.stringify(
      keys.slice(start, start + ROWS_PER_STATEMENT).map(({ eventKey, email }) => [eventKey, email]),
    );
    const { results } = await db.$client
      .prepare(
        `SELECT ${SELECT_COLUMNS} FROM json_each(?2) k JOIN outcomes o
           ON o.account_id = ?1 AND o.event_key = json_extract(k.value, '$[0]') AND o.email = json_extract(k.value, '$[1]')`,
      )
      .bind(accountId, chunk)
      .all<OutcomeRow>();
    found.push(...results);
  }
  return found;
}

/**
 * Inserts the rows (each with its `bytes`) in one transaction if their bytes fit the account's
 * budget of `day`, and counts the bytes of those inserted (a row recorded meanwhile by another
 * request is skipped and not counted). Returns null when stored, else the bytes used on the day
 * and the day's budget.
 */
export async function insertOutcomes(
  db: Db,
  accountId: string,
  rows: readonly (OutcomeRow & { bytes: number })[],
  fit: { day: number; limit: StorageLimit | null },
): Promise<StorageUse | null> {
  if (rows.length === 0) return null;
  const d1 = db.$client;
  const total = rows.reduce((sum, row) => sum + row.bytes, 0);
  // Every insert is conditional on the usage before this request's count, the last statement.
  const fits = storageFitsSql('?2', { day: fit.day, bytes: total, limit: fit.limit });
  const columns = COLUMNS.map(([, column]) => column).join(', ');
  const values = COLUMNS.map(([field]) => `json_extract(value, '$.${field}')`).join(', ');
  const statements: D1PreparedStatement[] = [
    d1
      .prepare(
        `SELECT ${storageUsedSql('?1', fit.day)} AS usedBytes, ${limitOrZeroSql('?1', fit.limit, fit.day)} AS limitBytes`,
      )
      .bind(accountId),
  ];
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(start, start + ROWS_PER_STATEMENT).map(({ bytes: _bytes, ...row }) => row);
    statements.push(
      d1
        .prepare(
          `INSERT INTO outcomes (${columns}) SELECT ${values} FROM json_each(?1) WHERE ${fits}
           ON CONFLICT (account_id, event_key, email) DO NOTHING`,
        )
        .bind(JSON.stringify(chunk), accountId),
    );
  }
  const sizes = JSON.stringify(rows.map((row) => [row.id, row.bytes]));
  statements.push(
    d1
      .prepare(
        `INSERT INTO storage_days (account_id, day, bytes, d1_bytes)
         SELECT ?1, ?2, total, total FROM (
           SELECT SUM(json_extract(s.value, '$[1]')) AS total FROM json_each(?3) s
           WHERE EXISTS (SELECT 1 FROM outcomes WHERE id = json_extract(s.value, '$[0]')))
         WHERE total IS NOT NULL
         ${STORAGE_DAYS_ADD}`,
      )
      .bind(accountId, fit.day, sizes),
  );
  const results = await d1.batch(statements);
  const counted = results.at(-1)?.meta.changes ?? 0;
  const inserted = results.slice(1, -1).reduce((sum, result) => sum + (result.meta.changes ?? 0), 0);
  if (inserted > 0 || counted > 0) return null;
  const use = (results[0]?.results[0] as StorageUse | undefined) ?? { usedBytes: 0, limitBytes: 0 };
  // Nothing inserted: either every row was recorded meanwhile, or the budget refused them.
  return fit.limit !== null && use.usedBytes + total > use.limitBytes ? use : null;
}

// ── Endpoints ────────────────────────────────────────────────────────────────────────────

export interface OutcomeEndpointRow {
  id: string;
  accountId: string;
  provider: 'ses' | 'sendgrid' | 'postmark' | 'mailgun';
  credential: string;
  createdAt: number;
  revokedAt: number | null;
}

const ENDPOINT_COLUMNS =
  'id, account_id AS accountId, provider, credential, created_at AS createdAt, revoked_at AS revokedAt';

/**
 * Inserts the endpoint in its account's shard, `db`, while the account has fewer than
 * `maxActive`; false when it had as many. Its id's lookup goes to the directory first, so the
 * hook finds the shard (a lookup whose endpoint was refused finds no endpoint there).
 */
export async function insertOutcomeEndpoint(
  db: Db,
  endpoint: Omit<OutcomeEndpointRow, 'revokedAt'>,
  maxActive: number,
): Promise<boolean> {
  await addLookup(db, {
    kind: 'endpoint',
    value: endpoint.id,
    accountId: endpoint.accountId,
    createdAt: endpoint.createdAt,
  });
  const { meta } = await db.$client
    .prepare(
      `INSERT INTO outcome_endpoints (id, account_id, provider, credential, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5
       WHERE (SELECT COUNT(*) FROM outcome_endpoints WHERE account_id = ?2 AND revoked_at IS NULL) < ?6`,
    )
    .bind(
      endpoint.id,
      endpoint.accountId,
      endpoint.provider,
      endpoint.credential,
      endpoint.createdAt,
      maxActive,
    )
    .run();
  return meta.changes > 0;
}

/** The endpoint, when it exists and is not revoked. */
export async function findOutcomeEndpoint(db: Db, id: string): Promise<OutcomeEndpointRow | null> {
  return db.$client
    .prepare(`SELECT ${ENDPOINT_COLUMNS} FROM outcome_endpoints WHERE id = ?1 AND revoked_at IS NULL`)
    .bind(id)
    .first<OutcomeEndpointRow>();
}

/** The account's endpoints not revoked, newest first. */
export async function listOutcomeEndpoints(db: Db, accountId: string): Promise<OutcomeEndpointRow[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT ${ENDPOINT_COLUMNS} FROM outcome_endpoints WHERE account_id = ?1 AND revoked_at IS NULL
       ORDER BY created_at DESC`,
    )
    .bind(accountId)
    .all<OutcomeEndpointRow>();
  return results;
}

/** Revokes the account's endpoint; false when it had none of that id. */
export async function revokeOutcomeEndpoint(
  db: Db,
  accountId: string,
  id: string,
  now: number,
): Promise<boolean> {
  const { meta } = await db.$client
    .prepare(
      'UPDATE outcome_endpoints SET revoked_at = ?3 WHERE id = ?1 AND account_id = ?2 AND revoked_at IS NULL',
    )
    .bind(id, accountId, now)
    .run();
  return meta.changes > 0;
}

/**
 * Records that the endpoint saw `nonce` with a body of `bodyDigest`: 'new' the first time, 'same'
 * when it was seen with the same body (a redelivery), 'other' when with another (a replay).
 */
export async function recordHookNonce(
  db: Db,
  nonce: { endpointId: string; nonce: string; bodyDigest: string; now: number },
): Promise<'new' | 'same' | 'other'> {
  const d1 = db.$client;
  const [insert, seen] = await d1.batch([
    d1
      .prepare(
        `INSERT INTO outcome_hook_nonces (endpoint_id, nonce, body_digest, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (endpoint_id, nonce) DO NOTHING`,
      )
      .bind(nonce.endpointId, nonce.nonce, nonce.bodyDigest, nonce.now),
    d1
      .prepare(
        'SELECT body_digest AS bodyDigest FROM outcome_hook_nonces WHERE endpoint_id = ?1 AND nonce = ?2',
      )
      .bind(nonce.endpointId, nonce.nonce),
  ]);
  if ((insert?.meta.changes ?? 0) > 0) return 'new';
  const stored = (seen?.results[0] as { bodyDigest: string } | undefined)?.bodyDigest;
  return stored === nonce.bodyDigest ? 'same' : 'other';
}

/**
 * How many guarantee refunds the account's month still allows: its charged verifications of the
 * month (charges less refunds) ÷ `verificationsPerRefund`, rounded down, less the refunds made.
 * The refund itself checks the same in its transaction (`refundGuaranteedVerdict`); this only
 * spares a large webhook a statement pair per claim the cap would refuse anyway.
 */
export async function guaranteeAllowance(
  db: Db,
  account: { accountId: string; monthStart: number; verificationsPerRefund: number },
): Promise<number> {
  const row = await db.$client
    .prepare(
      `SELECT (SELECT COALESCE(-SUM(delta), 0) FROM credit_ledger WHERE account_id = ?1 AND created_at >= ?2
                AND reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'recheck_charge')) / ?3
              - (SELECT COUNT(*) FROM credit_ledger WHERE account_id = ?1 AND created_at >= ?2
                AND reason = 'guarantee_refund') AS allowance`,
    )
    .bind(account.accountId, account.monthStart, account.verificationsPerRefund)
    .first<{ allowance: number }>();
  return Math.max(0, Math.floor(row?.allowance ?? 0));
}

/**
 * The guarantee's refunds of `claims` (docs/money.md, "The guarantee"), in one transaction, each
 * under the conditions of `refundGuaranteedVerdict`. Returns how many were refunded.
 */
export async function refundGuaranteed(db: Db, claims: readonly GuaranteeClaim[]): Promise<number> {
  if (claims.length === 0) return 0;
  const d1 = db.$client;
  const statements = claims.flatMap((claim) => {
    const pair = refundGuaranteedVerdict(claim);
    return [prepare(d1, pair.entry), prepare(d1, pair.balance)];
  });
  const results = await d1.batch(statements);
  return results.filter((result, index) => index % 2 === 0 && (result.meta.changes ?? 0) > 0).length;
}
