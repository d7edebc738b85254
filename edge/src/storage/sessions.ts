import { type Db, prepare } from './db.ts';
import { lookupInsert } from './inserts.ts';
import { directoryOf, type Shards } from './shards.ts';

/** The longest a session lives, however busy (30 days): retention drops the lookups of older ones. */
export const SESSION_ABSOLUTE_MS = 30 * 86_400_000;

export interface SessionRow {
  tokenHash: string;
  accountId: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
}

/**
 * Stores a session in its account's shard, `db`, after the directory's lookup that finds it by its
 * token hash (one batch when `db` is the directory's).
 */
export async function insertSession(db: Db, session: SessionRow): Promise<void> {
  const d1 = db.$client;
  const directory = directoryOf(db).$client;
  const lookup = prepare(
    directory,
    lookupInsert('session', session.tokenHash, session.accountId, session.createdAt),
  );
  const row = d1
    .prepare(
      'INSERT INTO sessions (token_hash, account_id, created_at, expires_at, last_seen_at) VALUES (?1, ?2, ?3, ?4, ?5)',
    )
    .bind(session.tokenHash, session.accountId, session.createdAt, session.expiresAt, session.lastSeenAt);
  if (directory === d1) {
    await d1.batch([lookup, row]);
    return;
  }
  await lookup.run();
  await row.run();
}

/** The account facts every dashboard page needs, read with the session. */
export interface SessionAccount {
  creditBalance: number;
  email: string | null;
  emailConfirmedAt: number | null;
  sharedFleetFallback: number;
}

const SESSION_COLUMNS = `s.token_hash AS tokenHash, s.account_id AS accountId, s.created_at AS createdAt,
  s.expires_at AS expiresAt, s.last_seen_at AS lastSeenAt, a.credit_balance AS creditBalance, a.email AS email,
  a.email_confirmed_at AS emailConfirmedAt, a.shared_fleet_fallback AS sharedFleetFallback`;

/**
 * The live session with this hash, its account's balance and confirmation, and the shard that
 * holds them: one query to the directory (its lookup, joined to the session and the account there
 * for an account of shard 0), one more to the account's shard for any other.
 */
export async function findLiveSession(
  shards: Shards,
  tokenHash: string,
  now: number,
): Promise<(SessionRow & SessionAccount & { shard: number }) | null> {
  const found = await shards.directory.$client
    .prepare(
      `SELECT COALESCE(sh.shard, 0) AS shard, ${SESSION_COLUMNS}
       FROM account_lookups l LEFT JOIN account_shards sh ON sh.account_id = l.account_id
         LEFT JOIN sessions s ON s.token_hash = l.value AND s.expires_at > ?2
         LEFT JOIN accounts a ON a.id = s.account_id
       WHERE l.kind = 'session' AND l.value = ?1`,
    )
    .bind(tokenHash, now)
    .first<SessionRow & SessionAccount & { shard: number }>();
  if (!found || found.shard >= shards.count) return null;
  const row =
    found.shard === 0
      ? found
      : await shards
          .db(found.shard)
          .$client.prepare(
            `SELECT ${SESSION_COLUMNS} FROM sessions s JOIN accounts a ON a.id = s.account_id
             WHERE s.token_hash = ?1 AND s.expires_at > ?2`,
          )
          .bind(tokenHash, now)
          .first<SessionRow & SessionAccount>();
  return row?.tokenHash && row.creditBalance !== null ? { ...row, shard: found.shard } : null;
}

/** Ends a session: its row in its account's shard, `db`, and its lookup in the directory. */
export async function deleteSession(db: Db, tokenHash: string): Promise<void> {
  await db.$client.prepare('DELETE FROM sessions WHERE token_hash = ?1').bind(tokenHash).run();
  await directoryOf(db)
    .$client.prepare("DELETE FROM account_lookups WHERE kind = 'session' AND value = ?1")
    .bind(tokenHash)
    .run();
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
