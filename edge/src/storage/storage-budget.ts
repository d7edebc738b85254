// The storage budget (docs/money.md, "Quotas and free work"): the bytes each account writes on a
// UTC day, one counter row per account and day. Every write path counts its bytes in the D1
// transaction of the write it counts, and a write that must fit is conditional on the counter in
// that same transaction, so two concurrent requests cannot both take the last bytes. Beside its
// bytes each count says how many of them went to D1: the store's daily write budget
// (docs/capacity.md, "The daily write budget") is about D1 alone, while an account's counts all.
//
// A write's bytes are the UTF-8 bytes of the values it stores plus ROW_OVERHEAD_BYTES per row;
// what a write will add later (a job's results, its webhook events) is counted when the write
// that causes it is admitted, as a fixed estimate per row.
import { MAX_EVIDENCE_BYTES } from '@rcpt/shared/contract/prober';
import type { Db } from './db.ts';
import type { SqlValue } from './ledger.ts';

/**
 * What a stored row costs beside its values: SQLite's record header and key, and its index
 * entries (https://www.sqlite.org/fileformat2.html#record_format). An estimate, on the high side.
 */
export const ROW_OVERHEAD_BYTES = 100;

/**
 * A verification result as stored (JSON of a VerificationResult): counted for every address a
 * job or a call will answer, before the answer exists. Measured results are 0.7–1.1 KB.
 */
export const RESULT_BYTES = 1_200;

/**
 * The estimate of one stored result: RESULT_BYTES, and with its evidence (asked for with
 * `evidence: true`) the evidence's bound as well, since a dialogue's size is not known before it
 * happens (docs/money.md, "Quotas and free work").
 */
export function storedResultBytes(withEvidence: boolean): number {
  return RESULT_BYTES + (withEvidence ? MAX_EVIDENCE_BYTES : 0);
}

/** The UTF-8 length of `text`, without encoding it. */
export function utf8Bytes(text: string | null | undefined): number {
  if (!text) return 0;
  let bytes = text.length;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff) {
      // A surrogate pair: 2 UTF-16 units, 4 UTF-8 bytes.
      bytes += 2;
      index++;
    } else bytes += 2;
  }
  return bytes;
}

/** Bytes of one row holding these values. */
export function rowBytes(...values: (string | number | null | undefined)[]): number {
  let bytes = ROW_OVERHEAD_BYTES;
  for (const value of values) bytes += typeof value === 'number' ? 8 : utf8Bytes(value);
  return bytes;
}

/** A write to count: `bytes` more for the account on the UTC day starting at `day`. */
export interface StorageCharge {
  accountId: string;
  day: number;
  bytes: number;
  /** The share of `bytes` written to D1: all of them unless said (a job's lists may live elsewhere). */
  d1Bytes?: number;
}

function integer(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${what} must be a non-negative integer`);
  return value;
}

/** SQL: the bytes the account in parameter `account` (e.g. `?2`) has written on `day`. */
export function storageUsedSql(account: string, day: number): string {
  return `COALESCE((SELECT bytes FROM storage_days WHERE account_id = ${account} AND day = ${integer(day, 'day')}), 0)`;
}

/**
 * An account's daily storage budget (docs/money.md, "Quotas and free work"): `baseBytes`, plus
 * `bytesPerCredit` for each credit it bought since BOUGHT_WINDOW_DAYS before the day began or
 * holds now (the larger of the two), at most `maxBytes`. Read in SQL inside the transaction of
 * the write it admits, so the purchase or the charge of a concurrent request is seen as D1
 * orders it.
 */
export interface StorageLimit {
  baseBytes: number;
  bytesPerCredit: number;
  maxBytes: number;
}

/** Purchases paid from this many days before the UTC day's start raise the day's budget. */
export const BOUGHT_WINDOW_DAYS = 30;

/**
 * SQL: the credits a paid purchase of the account in parameter `account` granted since `since`,
 * net of those taken back. A purchase under a dispute not won counts nothing: the bank holds or
 * took back its money (docs/money.md, "Disputes").
 */
function creditsBoughtSql(account: string, since: number): string {
  return `COALESCE((SELECT SUM(credits - credits_taken_back) FROM purchases
    WHERE account_id = ${account} AND status IN ('paid', 'partially_refunded') AND paid_at >= ${integer(since, 'since')}
      AND NOT EXISTS (SELECT 1 FROM disputes WHERE disputes.account_id = ${account}
        AND disputes.purchase_id = purchases.id AND disputes.status <> 'won')), 0)`;
}

/** SQL: the storage budget, in bytes, of the account in parameter `account` on `day`. */
export function storageLimitSql(account: string, limit: StorageLimit, day: number): string {
  const held = `COALESCE((SELECT credit_balance FROM accounts WHERE id = ${account}), 0)`;
  const since = integer(day, 'day') - BOUGHT_WINDOW_DAYS * 86_400_000;
  const credits = `MAX(0, ${held}, ${creditsBoughtSql(account, since)})`;
  return `MIN(${integer(limit.maxBytes, 'maxBytes')}, ${integer(limit.baseBytes, 'baseBytes')} + ${integer(limit.bytesPerCredit, 'bytesPerCredit')} * ${credits})`;
}

/** SQL: whether `bytes` more fit in `limit` (null: no limit) for the account in parameter `account`. */
export function storageFitsSql(
  account: string,
  fit: { day: number; bytes: number; limit: StorageLimit | null },
): string {
  if (fit.limit === null) return '1';
  return `(${storageUsedSql(account, fit.day)} + ${integer(fit.bytes, 'bytes')} <= ${storageLimitSql(account, fit.limit, fit.day)})`;
}

/**
 * SQL: the bytes all accounts together have written to D1 on `day`, which the store's daily write
 * budget bounds (docs/capacity.md, "The daily write budget").
 */
export function d1BytesWrittenByAllSql(day: number): string {
  return `COALESCE((SELECT SUM(d1_bytes) FROM storage_days WHERE day = ${integer(day, 'day')}), 0)`;
}

/** What an account or the whole store had written on a day, against its budget of the day. */
export interface StorageUse {
  usedBytes: number;
  limitBytes: number;
}

/**
 * Adds the charge to the day's counter; with `onlyIf`, only when that SQL condition holds (it
 * may use `?4` and on for `params`), e.g. that the row it counts was written earlier in the batch.
 */
export function countStorage(
  d1: D1Database,
  charge: StorageCharge,
  onlyIf?: { sql: string; params: unknown[] },
): D1PreparedStatement {
  const bytes = integer(charge.bytes, 'bytes');
  const d1Bytes = integer(charge.d1Bytes ?? bytes, 'd1Bytes');
  if (d1Bytes > bytes) throw new Error('a write cannot put more bytes in D1 than it writes');
  return d1
    .prepare(
      `INSERT INTO storage_days (account_id, day, bytes, d1_bytes) SELECT ?1, ?2, ?3, ${d1Bytes}
       WHERE ${onlyIf ? onlyIf.sql : 'true'} ${STORAGE_DAYS_ADD}`,
    )
    .bind(charge.accountId, charge.day, bytes, ...(onlyIf?.params ?? []));
}

/** The upsert's tail: a day already counted adds both counts. */
export const STORAGE_DAYS_ADD =
  'ON CONFLICT (account_id, day) DO UPDATE SET bytes = bytes + excluded.bytes, d1_bytes = d1_bytes + excluded.d1_bytes';

/**
 * Inserts `row` into `table` only if `fit.bytes` more fit the account's budget of the day, and
 * counts them, in one transaction. `row` names its columns; it has the table's `id` and the
 * account's `account_id`. Returns null when the row was inserted, else the bytes the account had
 * used on the day and its budget.
 */
export async function insertWithinBudget(
  db: Db,
  table: string,
  row: { id: string; account_id: string } & Record<string, SqlValue>,
  fit: { day: number; bytes: number; limit: StorageLimit | null },
): Promise<StorageUse | null> {
  const d1 = db.$client;
  const columns = Object.keys(row);
  const params = Object.values(row);
  const account = `?${columns.indexOf('account_id') + 1}`;
  const [usage, insert] = await d1.batch([
    d1
      .prepare(
        `SELECT ${storageUsedSql('?1', fit.day)} AS usedBytes, ${limitOrZeroSql('?1', fit.limit, fit.day)} AS limitBytes`,
      )
      .bind(row.account_id),
    d1
      .prepare(
        `INSERT INTO ${table} (${columns.join(', ')})
         SELECT ${columns.map((_, index) => `?${index + 1}`).join(', ')}
         WHERE ${storageFitsSql(account, fit)} RETURNING id`,
      )
      .bind(...params),
    countStorage(
      d1,
      { accountId: row.account_id, day: fit.day, bytes: fit.bytes },
      { sql: `EXISTS (SELECT 1 FROM ${table} WHERE id = ?4)`, params: [row.id] },
    ),
  ]);
  if ((insert?.results.length ?? 0) > 0) return null;
  return (usage?.results[0] as StorageUse | undefined) ?? { usedBytes: 0, limitBytes: 0 };
}

/** SQL: the account's budget, or 0 where no limit applies (it is only read for a refusal). */
export function limitOrZeroSql(account: string, limit: StorageLimit | null, day: number): string {
  return limit === null ? '0' : storageLimitSql(account, limit, day);
}

/** The bytes the account has written on `day`. */
export async function storageUsedOn(db: Db, accountId: string, day: number): Promise<number> {
  const row = await db.$client
    .prepare(`SELECT ${storageUsedSql('?1', day)} AS used`)
    .bind(accountId)
    .first<{ used: number }>();
  return row?.used ?? 0;
}

/** The bytes the account has written on `day`, and its budget of the day. */
export async function storageUseOf(
  db: Db,
  accountId: string,
  day: number,
  limit: StorageLimit,
): Promise<StorageUse> {
  const row = await db.$client
    .prepare(
      `SELECT ${storageUsedSql('?1', day)} AS usedBytes, ${storageLimitSql('?1', limit, day)} AS limitBytes`,
    )
    .bind(accountId)
    .first<StorageUse>();
  return row ?? { usedBytes: 0, limitBytes: 0 };
}

/** The bytes all accounts together have written on `day`: to D1, and anywhere (D1 and the jobs' objects). */
export async function bytesWrittenByAll(db: Db, day: number): Promise<{ d1Bytes: number; allBytes: number }> {
  const row = await db.$client
    .prepare(
      `SELECT ${d1BytesWrittenByAllSql(day)} AS d1Bytes,
         COALESCE((SELECT SUM(bytes) FROM storage_days WHERE day = ${integer(day, 'day')}), 0) AS allBytes`,
    )
    .first<{ d1Bytes: number; allBytes: number }>();
  return row ?? { d1Bytes: 0, allBytes: 0 };
}
