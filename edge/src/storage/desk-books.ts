// What an account's desk (objects/account-desk.ts) writes to D1 (docs/money.md, "Where the
// balance lives"): a block of credits taken from the balance into `credits_reserved`, the credits
// it gives back, and a flush of what it did meanwhile — its single calls' history rows, one
// `verify` ledger row per charged call, the balance and the reservation lowered by what was
// spent, and the day's storage counted — as one transaction guarded by its `desk_batches` row.
// Every operation answers the account's figures afterwards, so the desk knows where it stands
// without another round trip.
import type { Db } from './db.ts';
import { freeCreditsSql, spendableCreditsSql } from './ledger.ts';
import { countStorage, limitOrZeroSql, type StorageLimit, storageUsedSql } from './storage-budget.ts';
import type { HistoryAnswer } from './verifications.ts';

/** The storage budget of the desk's calls: the UTC day and the account's limit (null: none counted). */
export interface DeskBudget {
  day: number;
  limit: StorageLimit | null;
}

/** Where the account stands in D1 after a desk's operation. */
export interface DeskStanding {
  /** Credits the desk holds (`credits_reserved`). */
  reserved: number;
  /** The balance less what the desk holds: what the rest of rcpt may still charge. */
  free: number;
  /** Bytes the account has written on the budget's day, and its budget (0 without a limit). */
  storageUsed: number;
  storageLimit: number;
}

/** One single call the desk answered, as its history row and its charge (0 for a test key). */
export interface DeskHistoryRow extends HistoryAnswer {
  id: string;
  apiKeyId: string | null;
  createdAt: number;
  amount: number;
  /** The bytes its row counts against the storage budget, on the UTC day `day`. */
  bytes: number;
  day: number;
}

function standingStatement(d1: D1Database, accountId: string, budget: DeskBudget): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT credits_reserved AS reserved, ${freeCreditsSql()} AS free,
         ${storageUsedSql('?1', budget.day)} AS storageUsed,
         ${limitOrZeroSql('?1', budget.limit, budget.day)} AS storageLimit
       FROM accounts WHERE id = ?1`,
    )
    .bind(accountId);
}

function standingOf(result: D1Result | undefined): DeskStanding {
  const row = result?.results[0] as DeskStanding | undefined;
  if (!row) throw new Error('the desk’s account does not exist');
  return row;
}

/**
 * Takes up to `block` more credits into the desk's reservation, as many as the account may spend
 * (none while a dispute is open), and reads where the account stands. A block of 0 only reads.
 */
export async function reserveCredits(
  db: Db,
  accountId: string,
  block: number,
  budget: DeskBudget,
): Promise<DeskStanding> {
  const d1 = db.$client;
  const spendable = spendableCreditsSql('?1');
  const results = await d1.batch([
    ...(block > 0
      ? [
          d1
            .prepare(
              `UPDATE accounts SET credits_reserved = credits_reserved + MIN(?2, ${spendable})
               WHERE id = ?1 AND ${spendable} > 0`,
            )
            .bind(accountId, block),
        ]
      : []),
    standingStatement(d1, accountId, budget),
  ]);
  return standingOf(results.at(-1));
}

/** Gives `credits` of the desk's reservation back to the balance's free credits. */
export async function releaseCredits(
  db: Db,
  accountId: string,
  credits: number,
  budget: DeskBudget,
): Promise<DeskStanding> {
  const d1 = db.$client;
  const results = await d1.batch([
    d1
      .prepare(
        'UPDATE accounts SET credits_reserved = credits_reserved - ?2 WHERE id = ?1 AND credits_reserved >= ?2',
      )
      .bind(accountId, credits),
    standingStatement(d1, accountId, budget),
  ]);
  return standingOf(results.at(-1));
}

/**
 * Applies a desk's flush `batchId` once: its guard row, the history rows, one `verify` ledger row
 * per charged call (its balance after, in the calls' order), the balance and the reservation
 * lowered by the credits spent, and the bytes counted per day, in one transaction. A flush whose
 * guard row exists already (applied before its answer was lost) fails whole and changes nothing:
 * `applied` says which.
 */
export async function applyDeskFlush(
  db: Db,
  flush: { batchId: string; accountId: string; rows: DeskHistoryRow[]; now: number; budget: DeskBudget },
): Promise<{ applied: boolean; standing: DeskStanding }> {
  const d1 = db.$client;
  const { accountId, rows } = flush;
  const json = JSON.stringify(rows);
  const spent = rows.reduce((sum, row) => sum + row.amount, 0);
  const bytesByDay = new Map<number, number>();
  for (const row of rows) bytesByDay.set(row.day, (bytesByDay.get(row.day) ?? 0) + row.bytes);
  const statements = [
    d1
      .prepare('INSERT INTO desk_batches (id, account_id, created_at) VALUES (?1, ?2, ?3)')
      .bind(flush.batchId, accountId, flush.now),
    d1
      .prepare(
        `INSERT INTO verifications (id, account_id, api_key_id, kind, created_at,
           email, address, status, sub_status, score, result_json)
         SELECT j.value->>'id', ?1, j.value->>'apiKeyId', 'single', j.value->>'createdAt',
           j.value->>'email', j.value->>'address', j.value->>'status', j.value->>'subStatus',
           j.value->>'score', j.value->>'resultJson'
         FROM json_each(?2) j WHERE true ON CONFLICT (id) DO NOTHING`,
      )
      .bind(accountId, json),
    d1
      .prepare(
        `INSERT INTO credit_ledger (account_id, delta, balance_after, reason, reference, created_at)
         SELECT a.id, -c.amount, a.credit_balance - SUM(c.amount) OVER (ORDER BY c.seq), 'verify', c.id, c.createdAt
         FROM (SELECT j.key AS seq, j.value->>'id' AS id, j.value->>'amount' AS amount,
                 j.value->>'createdAt' AS createdAt
               FROM json_each(?2) j WHERE j.value->>'amount' > 0) c
         JOIN accounts a ON a.id = ?1`,
      )
      .bind(accountId, json),
    d1
      .prepare(
        `UPDATE accounts SET credit_balance = credit_balance - ?2, credits_reserved = credits_reserved - ?2
         WHERE id = ?1 AND ?2 > 0`,
      )
      .bind(accountId, spent),
    ...[...bytesByDay].map(([day, bytes]) => countStorage(d1, { accountId, day, bytes })),
    standingStatement(d1, accountId, flush.budget),
  ];
  let results: D1Result[];
  try {
    results = await d1.batch(statements);
  } catch (cause) {
    const applied = await d1
      .prepare('SELECT 1 AS applied FROM desk_batches WHERE id = ?1')
      .bind(flush.batchId)
      .first<{ applied: number }>();
    if (!applied) throw cause;
    return { applied: false, standing: await readStanding(db, accountId, flush.budget) };
  }
  return { applied: true, standing: standingOf(results.at(-1)) };
}

async function readStanding(db: Db, accountId: string, budget: DeskBudget): Promise<DeskStanding> {
  const d1 = db.$client;
  const [standing] = await d1.batch([standingStatement(d1, accountId, budget)]);
  return standingOf(standing);
}
