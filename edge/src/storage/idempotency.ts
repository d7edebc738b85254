// Idempotency keys: the first answer to a request sent with an `Idempotency-Key`, per account
// and scope: a test key's keys, a live key's and a publishable key's never meet.
import type { DataMode } from './api-keys.ts';
import type { Db } from './db.ts';
import { countStorage, rowBytes } from './storage-budget.ts';

/** How long a key and its answer are kept. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 3600_000;
/** A key still `running` after this long belongs to a request that died: a retry takes it over. */
export const IDEMPOTENCY_LOCK_MS = 5 * 60_000;

/**
 * Whose keys these are: the secret keys of one mode, or the account's publishable keys, whose
 * callers are the visitors of its pages (docs/publishable-keys.md) and must never take, or be
 * answered, a key the customer's own requests use. Stored in the `mode` column.
 */
export type IdempotencyScope = DataMode | 'publishable';

export type IdempotencyClaim =
  | { kind: 'claimed' }
  | { kind: 'answered'; status: number; body: string }
  | { kind: 'running' }
  /** The holder charged (under `reference`) and its answer was never kept: never run again. */
  | { kind: 'charged'; reference: string }
  | { kind: 'other-request' };

/**
 * SQL: the request holding the key row `idempotency_keys` charged and was not refunded (the
 * ledger has its charge under the reference it claimed the key with, and no refund of it).
 */
const HOLDER_CHARGED = `EXISTS (SELECT 1 FROM credit_ledger
    WHERE reference = idempotency_keys.charge_reference AND reason IN ('verify', 'bulk_charge'))
  AND NOT EXISTS (SELECT 1 FROM credit_ledger
    WHERE reference = idempotency_keys.charge_reference AND reason = 'verify_refund')`;

/**
 * Takes `key` for a request with this fingerprint, or says why not. One statement decides,
 * so two concurrent requests with the same key cannot both take it.
 */
export async function claimIdempotencyKey(
  db: Db,
  claim: {
    accountId: string;
    mode: IdempotencyScope;
    key: string;
    fingerprint: string;
    now: number;
    /** The ledger reference this request will charge under, if it charges. */
    chargeReference: string;
  },
): Promise<IdempotencyClaim> {
  const d1 = db.$client;
  const { accountId, mode, key, fingerprint, now } = claim;
  // A key past its lifetime is free again; a running one is taken over only by the same
  // request once its holder has clearly died — and only if that holder charged nothing, since
  // its answer is then lost and running it again would charge the same request twice.
  const taken = await d1
    .prepare(
      `INSERT INTO idempotency_keys (account_id, key, fingerprint, state, created_at, locked_at, mode, charge_reference)
       VALUES (?1, ?2, ?3, 'running', ?4, ?4, ?7, ?8)
       ON CONFLICT (account_id, mode, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = 'running',
         response_status = NULL, response_body = NULL, created_at = excluded.created_at, locked_at = excluded.locked_at,
         charge_reference = excluded.charge_reference
       WHERE idempotency_keys.created_at <= ?5
         OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_at <= ?6
             AND idempotency_keys.fingerprint = excluded.fingerprint AND NOT (${HOLDER_CHARGED}))
       RETURNING state`,
    )
    .bind(
      accountId,
      key,
      fingerprint,
      now,
      now - IDEMPOTENCY_KEY_TTL_MS,
      now - IDEMPOTENCY_LOCK_MS,
      mode,
      claim.chargeReference,
    )
    .first();
  if (taken) return { kind: 'claimed' };
  const held = await d1
    .prepare(
      `SELECT fingerprint, state, response_status AS status, response_body AS body,
         charge_reference AS reference, (${HOLDER_CHARGED}) AS charged, locked_at <= ?4 AS lapsed
       FROM idempotency_keys WHERE account_id = ?1 AND key = ?2 AND mode = ?3`,
    )
    .bind(accountId, key, mode, now - IDEMPOTENCY_LOCK_MS)
    .first<{
      fingerprint: string;
      state: 'running' | 'done';
      status: number | null;
      body: string | null;
      reference: string | null;
      charged: number;
      lapsed: number;
    }>();
  // Deleted between the two statements (retention): the caller may simply try again.
  if (!held) return { kind: 'running' };
  if (held.fingerprint !== fingerprint) return { kind: 'other-request' };
  if (held.state === 'done' && held.status !== null && held.body !== null) {
    return { kind: 'answered', status: held.status, body: held.body };
  }
  // A holder whose lock lapsed after it charged died or could not keep its answer; a live one
  // may still keep it.
  if (held.charged === 1 && held.lapsed === 1 && held.reference !== null) {
    return { kind: 'charged', reference: held.reference };
  }
  return { kind: 'running' };
}

/** The request holding a key: its account, its scope and the key. */
export interface HeldKey {
  accountId: string;
  mode: IdempotencyScope;
  key: string;
}

/**
 * Keeps the answer of the request that holds the key, and counts the row against the account's
 * storage budget of `day` (not refused: the work it answers was admitted under the budget). A
 * publishable key's answer is not counted there: its call booked it against the key's own budget.
 */
export async function keepIdempotentAnswer(
  db: Db,
  answer: HeldKey & { fingerprint: string; status: number; body: string; day: number },
): Promise<void> {
  const d1 = db.$client;
  const bytes = rowBytes(
    answer.accountId,
    answer.mode,
    answer.key,
    answer.fingerprint,
    answer.body,
    0,
    0,
    0,
    0,
  );
  await d1.batch([
    d1
      .prepare(
        `UPDATE idempotency_keys SET state = 'done', response_status = ?4, response_body = ?5
         WHERE account_id = ?1 AND mode = ?2 AND key = ?3 AND state = 'running'`,
      )
      .bind(answer.accountId, answer.mode, answer.key, answer.status, answer.body),
    ...(answer.mode === 'publishable'
      ? []
      : [countStorage(d1, { accountId: answer.accountId, day: answer.day, bytes })]),
  ]);
}

/** Frees a key whose request did nothing (refused, or failed on rcpt's side and refunded), so a retry runs afresh. */
export async function releaseIdempotencyKey(db: Db, held: HeldKey): Promise<void> {
  await db.$client
    .prepare(
      `DELETE FROM idempotency_keys WHERE account_id = ?1 AND mode = ?2 AND key = ?3 AND state = 'running'`,
    )
    .bind(held.accountId, held.mode, held.key)
    .run();
}
