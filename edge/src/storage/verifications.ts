// Single verifications in D1 (the table \`verifications\`, which the dashboard shows as history):
// the account's desk writes them (storage/desk-books.ts, docs/money.md "Where the balance lives");
// here are a row's size against the storage budget, a late verdict kept in a written row, the
// verdict cache's lookup, the recovery sweep's unanswered rows (opened in D1 before the desk
// charged single calls), and the history list.
import type { SubStatus, VerificationStatus } from '@rcpt/shared/contract/api';
import { type DataMode, dataModeSql } from './api-keys.ts';
import { type Db, prepare } from './db.ts';
import { type DomainFactsRow, readDomainFactsStatement } from './domain-facts.ts';
import { refundUnansweredVerification } from './ledger.ts';
import { type MailboxBounceRow, mailboxBouncesStatement } from './outcomes.ts';
import { verifications } from './schema.ts';
import { directoryOf } from './shards.ts';
import { rowBytes, type StorageLimit, storedResultBytes } from './storage-budget.ts';

export type NewVerification = typeof verifications.$inferInsert;

export async function insertVerification(db: Db, row: NewVerification): Promise<void> {
  await db.insert(verifications).values(row);
}

/** The storage budget a history row must fit in (storage-budget.ts); a null limit is not checked. */
export interface HistoryBudget {
  day: number;
  limit: StorageLimit | null;
}

/** A refused history row: which condition failed, the bytes the account had written today and its budget. */
export interface HistoryRefusal {
  refused: 'credits' | 'storage';
  storageUsed: number;
  storageLimit: number;
  /** The bytes the row would have taken. */
  bytes: number;
}

/** Bytes of a single verification's history row: its answer, or an estimate of the answer to come. */
export function historyRowBytes(
  row: { id: string; accountId: string; apiKeyId: string | null },
  answer: HistoryAnswer | undefined,
  email: string,
  withEvidence = false,
): number {
  const fixed = rowBytes(row.id, row.accountId, row.apiKeyId, 'single', 0, email);
  return answer
    ? fixed + rowBytes(answer.address, answer.status, answer.subStatus, answer.score, answer.resultJson)
    : fixed + storedResultBytes(withEvidence);
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
 * Keeps the verdict a verification reached after its call was answered `timeout_exceeded`, in the
 * call's history row: the verdict cache finds it there for the next call. Returns false if the
 * row no longer holds that answer.
 */
export async function keepLateVerdict(db: Db, id: string, answer: HistoryAnswer): Promise<boolean> {
  const outcome = await db.$client
    .prepare(
      `UPDATE verifications SET email = ?2, address = ?3, status = ?4, sub_status = ?5, score = ?6, result_json = ?7
       WHERE id = ?1 AND kind = 'single' AND sub_status = 'timeout_exceeded'`,
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

/**
 * `latestVerdict` and the domain's facts, in one round trip to D1 when the account's database is
 * the directory's (where the facts are), else in two at once (storage/shards.ts).
 */
export async function latestVerdictAndFacts(
  db: Db,
  lookup: VerdictLookup,
  domain: string,
  /** Also the account's latest mailbox bounce of the address (docs/verdicts.md, "Learning from outcomes"). */
  withBounce = false,
): Promise<{ resultJson: string | null; facts: DomainFactsRow | null; bounce: MailboxBounceRow | null }> {
  const bounceLookup = { accountId: lookup.accountId, mode: lookup.mode, emails: [lookup.address] };
  const account = [
    latestVerdictStatement(db, lookup),
    ...(withBounce ? [mailboxBouncesStatement(db, bounceLookup)] : []),
  ];
  const factsRead = readDomainFactsStatement(db, domain);
  const [verdict, bounce, facts] =
    directoryOf(db) === db
      ? await db.$client
          .batch([...account, factsRead])
          .then((read) => [read[0], withBounce ? read[1] : undefined, read.at(-1)])
      : await Promise.all([db.$client.batch(account), factsRead.all()]).then(([read, factsResult]) => [
          read[0],
          read[1],
          factsResult,
        ]);
  return {
    resultJson: (verdict?.results[0] as { resultJson: string | null } | undefined)?.resultJson ?? null,
    facts: (facts?.results[0] as DomainFactsRow | undefined) ?? null,
    bounce: (bounce?.results[0] as MailboxBounceRow | undefined) ?? null,
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
