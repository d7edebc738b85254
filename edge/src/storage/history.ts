import type { SubStatus, VerificationStatus } from '@rcpt/shared/contract/api';
import type { Db } from './db.ts';
import { verifications } from './schema.ts';

export type NewVerification = typeof verifications.$inferInsert;

export async function insertVerification(db: Db, row: NewVerification): Promise<void> {
  await db.insert(verifications).values(row);
}

export interface HistoryFilters {
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
  const clauses = ['account_id = ?1'];
  const binds: unknown[] = [];
  const add = (clause: (position: number) => string, value: unknown) => {
    binds.push(value);
    clauses.push(clause(binds.length + 1));
  };
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
