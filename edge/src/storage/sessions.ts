import type { Db } from './db.ts';

export interface SessionRow {
  tokenHash: string;
  accountId: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
}

export async function insertSession(db: Db, session: SessionRow): Promise<void> {
  await db.$client
    .prepare(
      'INSERT INTO sessions (token_hash, account_id, created_at, expires_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?5)',
    )
    .bind(session.tokenHash, session.accountId, session.createdAt, session.expiresAt, session.lastSeenAt)
    .run();
}

/** The account facts every dashboard page needs, read with the session. */
export interface SessionAccount {
  creditBalance: number;
  email: string | null;
  emailConfirmedAt: number | null;
  sharedFleetFallback: number;
}

/** The live session with this hash and its account's balance and confirmation, in one query. */
export async function findLiveSession(
  db: Db,
  tokenHash: string,
  now: number,
): Promise<(SessionRow & SessionAccount) | null> {
  return db.$client
    .prepare(
      `SELECT s.token_hash AS tokenHash, s.account_id AS accountId, s.created_at AS createdAt, s.expires_at AS expiresAt,
         s.last_seen_at AS lastSeenAt, a.credit_balance AS creditBalance, a.email AS email,
         a.email_confirmed_at AS emailConfirmedAt, a.shared_fleet_fallback AS sharedFleetFallback
       FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ?1 AND s.expires_at > ?2`,
    )
    .bind(tokenHash, now)
    .first<SessionRow & SessionAccount>();
}

export async function deleteSession(db: Db, tokenHash: string): Promise<void> {
  await db.$client.prepare('DELETE FROM sessions WHERE token_hash = ?1').bind(tokenHash).run();
}

/** Ends every session of an account except, optionally, one (after a password change). */
export async function deleteAccountSessions(
  db: Db,
  accountId: string,
  keepTokenHash: string | null,
): Promise<void> {
  await db.$client
    .prepare('DELETE FROM sessions WHERE account_id = ?1 AND token_hash IS NOT ?2')
    .bind(accountId, keepTokenHash)
    .run();
}

export async function touchSession(db: Db, tokenHash: string, now: number, expiresAt: number): Promise<void> {
  await db.$client
    .prepare('UPDATE sessions SET last_seen_at = ?2, expires_at = ?3 WHERE token_hash = ?1')
    .bind(tokenHash, now, expiresAt)
    .run();
}

export async function setPasswordHash(db: Db, accountId: string, passwordHash: string): Promise<void> {
  await db.$client
    .prepare('UPDATE accounts SET password_hash = ?2 WHERE id = ?1')
    .bind(accountId, passwordHash)
    .run();
}

/** Replaces the password hash only if it is still `current`; whether it did. */
export async function replacePasswordHash(
  db: Db,
  change: {
    accountId: string;
    current: string;
    next: string;
    /** Set through a reset link at this time: the keys made before it are listed for review. */
    resetAt?: number;
  },
): Promise<boolean> {
  const result = await db.$client
    .prepare(
      `UPDATE accounts SET password_hash = ?3, keys_review_before = COALESCE(?4, keys_review_before)
       WHERE id = ?1 AND password_hash = ?2`,
    )
    .bind(change.accountId, change.current, change.next, change.resetAt ?? null)
    .run();
  return result.meta.changes === 1;
}
