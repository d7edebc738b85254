import type { SubStatus, VerificationStatus } from '@rcpt/shared/contract/api';
import { type DataMode, dataModeSql } from './api-keys.ts';
import { type Db, prepare } from './db.ts';
import { type DomainFactsRow, readDomainFactsStatement } from './domain-facts.ts';
import { freeRowsSinceSql } from './free-rows.ts';
import { debit, refundUnansweredVerification } from './ledger.ts';
import { verifications } from './schema.ts';

export type NewVerification = typeof verifications.$inferInsert;

export async function insertVerification(db: Db, row: NewVerification): Promise<void> {
  await db.insert(verifications).values(row);
}

/**
 * Records a free (test-key) single verification with its answer, unless the account has already
 * stored `quota.limit` free rows since `quota.since`: the count and the insert are one
 * transaction. Returns whether it was recorded and the free rows counted before it.
 */
export async function insertFreeVerification(
  db: Db,
  row: { id: string; accountId: string; apiKeyId: string | null; now: number; answer: HistoryAnswer },
  quota: { limit: number; since: number },
): Promise<{ inserted: boolean; used: number }> {
  const d1 = db.$client;
  const { answer } = row;
  const [usage, insert] = await d1.batch([
    d1.prepare(`SELECT ${freeRowsSinceSql('?1', '?2')} AS used`).bind(row.accountId, quota.since),
    d1
      .prepare(
        `INSERT INTO verifications (id, account_id, api_key_id, kind, email, address, status, sub_status, score,
           result_json, created_at)
         SELECT ?1, ?2, ?3, 'single', ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE ${freeRowsSinceSql('?2', '?11')} < ?12
         RETURNING id`,
      )
      .bind(
        row.id,
        row.accountId,
        row.apiKeyId,
        answer.email,
        answer.address,
        answer.status,
        answer.subStatus,
        answer.score,
        answer.resultJson,
        row.now,
        quota.since,
        quota.limit,
      ),
  ]);
  return {
    inserted: (insert?.results.length ?? 0) > 0,
    used: (usage?.results[0] as { used: number } | undefined)?.used ?? 0,
  };
}

/** A single verification's answer as its history row keeps it. */
export interface HistoryAnswer {
  email: string;
  /** The verdict cache's key, or null when the answer is not to be answered again. */
  address: string | null;
  status: string;
  subStatus: string;
  score: number;
  resultJson: string;
}

/**
 * Charges a single verification and opens its history row, in one transaction: either both
 * happen or, when the balance does not cover `amount`, neither. The row is open (no result
 * yet) unless the answer is already known (a cached verdict), in which case it is closed at
 * once. Returns the new balance, or null.
 */
export async function openChargedVerification(
  db: Db,
  opening: {
    id: string;
    accountId: string;
    apiKeyId: string | null;
    amount: number;
    now: number;
    answer?: HistoryAnswer;
  },
): Promise<number | null> {
  const d1 = db.$client;
  const { answer } = opening;
  const charge = debit({
    accountId: opening.accountId,
    amount: opening.amount,
    reason: 'verify',
    reference: opening.id,
    now: opening.now,
  });
  const [, , update] = await d1.batch<{ credit_balance: number }>([
    prepare(d1, charge.entry),
    // Between the debit's two statements the balance is still the one before the charge.
    d1
      .prepare(
        `INSERT INTO verifications (id, account_id, api_key_id, kind, created_at,
           email, address, status, sub_status, score, result_json)
         SELECT ?1, ?2, ?3, 'single', ?4, ?6, ?7, ?8, ?9, ?10, ?11
         WHERE (SELECT credit_balance FROM accounts WHERE id = ?2) >= ?5`,
      )
      .bind(
        opening.id,
        opening.accountId,
        opening.apiKeyId,
        opening.now,
        opening.amount,
        answer?.email ?? null,
        answer?.address ?? null,
        answer?.status ?? null,
        answer?.subStatus ?? null,
        answer?.score ?? null,
        answer?.resultJson ?? null,
      ),
    prepare(d1, charge.balance),
  ]);
  return update?.results[0]?.credit_balance ?? null;
}

/** Closes an open single verification with its result. Returns false if it was not open. */
export async function answerVerification(db: Db, id: string, answer: HistoryAnswer): Promise<boolean> {
  const outcome = await db.$client
    .prepare(
      `UPDATE verifications SET email = ?2, address = ?3, status = ?4, sub_status = ?5, score = ?6, result_json = ?7
       WHERE id = ?1 AND kind = 'single' AND status IS NULL`,
    )
    .bind(id, answer.email, answer.address, answer.status, answer.subStatus, answer.score, answer.resultJson)
    .run();
  return outcome.meta.changes > 0;
}

/**
 * Refunds an open single verification and removes its history row, once: a second call (or
 * one after it was answered) changes nothing. Returns true if this call refunded it.
 */
export async function refundVerification(db: Db, id: string, now: number): Promise<boolean> {
  const d1 = db.$client;
  const refund = refundUnansweredVerification(id, now);
  const outcome = await d1.batch([
    prepare(d1, refund.entry),
    prepare(d1, refund.balance),
    d1.prepare(`DELETE FROM verifications WHERE id = ?1 AND kind = 'single' AND status IS NULL`).bind(id),
  ]);
  return (outcome.at(-1)?.meta.changes ?? 0) > 0;
}

/**
 * The result of the account's latest answered single verification of `address` made with
 * keys of `mode` since `since`, or null: the verdict cache's lookup (index
 * `verifications_address`).
 */
export async function latestVerdict(db: Db, lookup: VerdictLookup): Promise<string | null> {
  const row = await latestVerdictStatement(db, lookup).first<{ resultJson: string | null }>();
  return row?.resultJson ?? null;
}

/** `latestVerdict` and the domain's facts, in one round trip to D1. */
export async function latestVerdictAndFacts(
  db: Db,
  lookup: VerdictLookup,
  domain: string,
): Promise<{ resultJson: string | null; facts: DomainFactsRow | null }> {
  const [verdict, facts] = await db.$client.batch([
    latestVerdictStatement(db, lookup),
    readDomainFactsStatement(db, domain),
  ]);
  return {
    resultJson: (verdict?.results[0] as { resultJson: string | null } | undefined)?.resultJson ?? null,
    facts: (facts?.results[0] as DomainFactsRow | undefined) ?? null,
  };
}

interface VerdictLookup {
  accountId: string;
  mode: DataMode;
  address: string;
  since: number;
}

function latestVerdictStatement(db: Db, lookup: VerdictLookup): D1PreparedStatement {
  return db.$client
    .prepare(
      `SELECT result_json AS resultJson FROM verifications
       WHERE account_id = ?1 AND address = ?2 AND created_at >= ?3 AND status IS NOT NULL
         AND ${dataModeSql(lookup.mode)}
       ORDER BY created_at DESC LIMIT 1`,
    )
    .bind(lookup.accountId, lookup.address, lookup.since);
}

/** Single verifications opened before `before` and never answered (their request died). */
export async function findUnansweredVerifications(db: Db, before: number, limit: number): Promise<string[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT id FROM verifications WHERE kind = 'single' AND status IS NULL AND created_at < ?1 LIMIT ?2`,
    )
    .bind(before, limit)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

export interface HistoryFilters {
  /** Only this mode's entries (an API key's); all of them when absent (the dashboard). */
  mode?: DataMode;
  kind?: 'single' | 'batch';
  status?: string;
  from?: number;
  to?: number;
}

export interface HistoryRow {
  id: string;
  kind: 'single' | 'batch';
  email: string | null;
  // Written by rcpt from a VerificationResult, so the vocabulary holds.
  status: VerificationStatus | null;
  subStatus: SubStatus | null;
  score: number | null;
  jobId: string | null;
  createdAt: number;
}

function historyWhere(filters: HistoryFilters): { sql: string; binds: unknown[] } {
  // A single verification shows once answered (an open one is still running, or refunded soon).
  const clauses = ['account_id = ?1', "(kind = 'batch' OR status IS NOT NULL)"];
  const binds: unknown[] = [];
  const add = (clause: (position: number) => string, value: unknown) => {
    binds.push(value);
    clauses.push(clause(binds.length + 1));
  };
  if (filters.mode) clauses.push(dataModeSql(filters.mode));
  if (filters.kind) add((n) => `kind = ?${n}`, filters.kind);
  if (filters.status) add((n) => `status = ?${n}`, filters.status);
  if (filters.from !== undefined) add((n) => `created_at >= ?${n}`, filters.from);
  if (filters.to !== undefined) add((n) => `created_at <= ?${n}`, filters.to);
  return { sql: clauses.join(' AND '), binds };
}

/** Single verifications and batch jobs of an account, newest first. */
export async function listHistory(
  db: Db,
  accountId: string,
  filters: HistoryFilters,
  page: { offset: number; limit: number },
): Promise<{ rows: HistoryRow[]; total: number }> {
  const where = historyWhere(filters);
  const d1 = db.$client;
  const [rows, count] = await d1.batch<HistoryRow & { total: number }>([
    d1
      .prepare(
        `SELECT id, kind, email, status, sub_status AS subStatus, score, job_id AS jobId, created_at AS createdAt
         FROM verifications WHERE ${where.sql} ORDER BY created_at DESC, id DESC
         LIMIT ?${where.binds.length + 2} OFFSET ?${where.binds.length + 3}`,
      )
      .bind(accountId, ...where.binds, page.limit, page.offset),
    d1
      .prepare(`SELECT COUNT(*) AS total FROM verifications WHERE ${where.sql}`)
      .bind(accountId, ...where.binds),
  ]);
  return { rows: rows?.results ?? [], total: count?.results[0]?.total ?? 0 };
}
