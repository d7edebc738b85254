// Dashboard sessions: a random token in an HttpOnly cookie, stored only as its SHA-256 hash.
// Sliding expiry (7 days idle, 30 days at most); a new token at sign-in and password change.
// The CSRF token of a session is an HMAC of its token, so forms need no stored state.
import { hashSecret, issueSecret } from '@rcpt/shared/secret-tokens';
import type { Db } from '../../storage/db.ts';
import {
  deleteSession,
  findLiveSession,
  insertSession,
  SESSION_ABSOLUTE_MS,
  touchSession,
} from '../../storage/sessions.ts';
import type { Shards } from '../../storage/shards.ts';

/**
 * `__Host-`: browsers accept it only Secure, with Path=/ and no Domain (RFC 6265bis §4.1.3.2),
 * so a sibling subdomain or an http page cannot set or shadow the session (session fixation).
 */
export const SESSION_COOKIE = '__Host-rcpt_session';
const IDLE_MS = 7 * 86_400_000;
/** Seen-at is written at most this often, so a busy session costs no write per page. */
const TOUCH_EVERY_MS = 5 * 60_000;

export interface ActiveSession {
  token: string;
  tokenHash: string;
  accountId: string;
  expiresAt: number;
}

/** A session resumed from its cookie, with the account's balance read in the same query. */
export interface ResumedSession extends ActiveSession {
  creditBalance: number;
  /** The account's email while it is not confirmed (no free credits yet); otherwise null. */
  unconfirmedEmail: string | null;
  /** The account turned the shared fleet's fallback off: only its own probers probe for it. */
  ownProbersOnly: boolean;
  /** The shard that holds the account (storage/shards.ts). */
  shard: number;
}

export async function startSession(db: Db, accountId: string, now: number): Promise<ActiveSession> {
  const issued = await issueSecret('session');
  const expiresAt = now + IDLE_MS;
  await insertSession(db, { tokenHash: issued.hash, accountId, createdAt: now, expiresAt, lastSeenAt: now });
  return { token: issued.secret, tokenHash: issued.hash, accountId, expiresAt };
}

/** The live session behind a cookie value, its idle expiry slid forward; null if none. */
export async function resumeSession(
  shards: Shards,
  token: string | undefined,
  now: number,
): Promise<ResumedSession | null> {
  if (!token?.startsWith('rks_') || token.length > 100) return null;
  const tokenHash = await hashSecret(token);
  const row = await findLiveSession(shards, tokenHash, now);
  if (!row) return null;
  let expiresAt = row.expiresAt;
  if (now - row.lastSeenAt > TOUCH_EVERY_MS) {
    expiresAt = Math.min(row.createdAt + SESSION_ABSOLUTE_MS, now + IDLE_MS);
    await touchSession(shards.db(row.shard), tokenHash, now, expiresAt);
  }
  return {
    shard: row.shard,
    token,
    tokenHash,
    accountId: row.accountId,
    expiresAt,
    creditBalance: row.creditBalance,
    unconfirmedEmail: row.emailConfirmedAt === null ? row.email : null,
    ownProbersOnly: row.sharedFleetFallback === 0,
  };
}

export async function endSession(db: Db, session: ActiveSession): Promise<void> {
  await deleteSession(db, session.tokenHash);
}

/** The CSRF token bound to a session (or to a pre-session cookie on the sign-in forms). */
export async function csrfTokenFor(secret: string): Promise<string> {
  return (await hashSecret(`csrf:${secret}`)).slice(0, 43);
}

export async function isValidCsrfToken(secret: string, presented: unknown): Promise<boolean> {
  if (typeof presented !== 'string' || presented.length !== 43) return false;
  const expected = new TextEncoder().encode(await csrfTokenFor(secret));
  const actual = new TextEncoder().encode(presented);
  return crypto.subtle.timingSafeEqual(expected, actual);
}
