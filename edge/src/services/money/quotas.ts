// Per-account quotas (docs/operations.md): how much one account may store or hold at once, so
// that no account — least of all with work that ends up free: sandbox keys, lists with no valid
// address, refunded answers — can fill the database every account shares. The limits are
// deployment config; each check runs in the same D1 transaction as the insert it guards
// (storage/job-creation.ts, storage/verifications.ts, storage/api-keys.ts, storage/webhooks.ts), so
// two concurrent requests cannot both take the last slot. Past a quota: 429 QUOTA_EXCEEDED, nothing
// stored or charged; past the balance, 402 INSUFFICIENT_CREDITS. Beside them, the store's own
// daily write budget, of what reaches D1: past it, a new list is 503 DAILY_STORAGE_FULL
// (docs/capacity.md).
import { ApiError } from '@rcpt/shared/errors';
import type { Config } from '../../config.ts';
import { readBalance } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { hasOpenDispute } from '../../storage/disputes.ts';
import type { StorageLimit } from '../../storage/storage-budget.ts';

export type QuotaName =
  | 'storage_bytes_per_day'
  | 'publishable_storage_bytes_per_day'
  | 'jobs_in_flight'
  | 'api_keys'
  | 'prober_tokens';

export interface Quotas {
  /** Bytes a UTC day that every write of the account counts against: grows with the credits it bought (docs/money.md). */
  storage: StorageLimit;
  /** Jobs pending or processing at once. */
  jobsInFlight: number;
  /** Active (not revoked) API keys. */
  apiKeys: number;
  /** Live (not revoked) prober tokens of the account's own probers. */
  proberTokens: number;
  /** Bytes a UTC day one publishable key's calls book, apart from the account's budget. */
  publishableStorageBytesPerDay: number;
  /** Not an account's: the bytes all accounts together may write a UTC day before lists are refused. */
  globalStorageBytesPerDay: number;
}

export function quotasOf(config: Config): Quotas {
  return {
    storage: {
      baseBytes: Math.min(config.QUOTA_STORAGE_BASE_BYTES_PER_DAY, config.QUOTA_STORAGE_BYTES_PER_DAY),
      bytesPerCredit: config.QUOTA_STORAGE_BYTES_PER_CREDIT,
      maxBytes: config.QUOTA_STORAGE_BYTES_PER_DAY,
    },
    jobsInFlight: config.QUOTA_JOBS_IN_FLIGHT,
    apiKeys: config.QUOTA_API_KEYS,
    proberTokens: config.QUOTA_PROBER_TOKENS,
    publishableStorageBytesPerDay: config.QUOTA_PUBLISHABLE_STORAGE_BYTES_PER_DAY,
    globalStorageBytesPerDay: globalDailyStorageBytesOf(config),
  };
}

export const DAY_MS = 86_400_000;

/** The start of the UTC day of `now`: the storage budget counts from there. */
export function utcDayStart(now: number): number {
  return now - (now % DAY_MS);
}

export interface QuotaRefusal {
  quota: QuotaName;
  limit: number;
  /** What the account had used when the request was refused. */
  used: number;
  /** What the request would have added. */
  requested: number;
  now: number;
}

/** 429 QUOTA_EXCEEDED: which quota, its limit, what is used, and when it resets (null: when usage falls). */
export function quotaExceeded(refusal: QuotaRefusal): ApiError {
  const { quota, limit, used, requested, now } = refusal;
  const daily = quota === 'storage_bytes_per_day' || quota === 'publishable_storage_bytes_per_day';
  const resetAt = daily ? utcDayStart(now) + DAY_MS : null;
  const resetAtIso = resetAt === null ? null : new Date(resetAt).toISOString();
  return new ApiError('QUOTA_EXCEEDED', {
    message: quotaMessage(refusal, resetAtIso),
    details: { quota, limit, used, requested, resetAt: resetAtIso },
    retryAfterSeconds: resetAt === null ? undefined : Math.max(1, Math.ceil((resetAt - now) / 1000)),
  });
}

/**
 * After an insert that stores one more item only below `limit` live ones (keys, prober tokens):
 * 429 QUOTA_EXCEEDED when it found the limit reached and stored nothing.
 */
export function assertStoredWithin(
  stored: { inserted: boolean; active: number },
  quota: { quota: QuotaName; limit: number; now: number },
): void {
  if (!stored.inserted) throw quotaExceeded({ ...quota, used: stored.active, requested: 1 });
}

/** Bytes as MB with one decimal (10.5 MB), or in bytes below 0.1 MB. */
export function megabytes(bytes: number): string {
  return bytes < 100_000 ? `${bytes.toLocaleString('en-US')} bytes` : `${(bytes / 1_000_000).toFixed(1)} MB`;
}

function quotaMessage({ quota, limit, used, requested }: QuotaRefusal, resetAt: string | null): string {
  const count = (value: number) => value.toLocaleString('en-US');
  switch (quota) {
    case 'storage_bytes_per_day':
      return (
        `This account may store ${megabytes(limit)} today (lists, their cells and results, history, kept answers, ` +
        `webhook events); ${megabytes(used)} are stored today and this request needs ${megabytes(requested)}. ` +
        `The budget resets at ${resetAt} (midnight UTC), and grows with the credits the account bought in the last ` +
        '30 days or holds.'
      );
    case 'publishable_storage_bytes_per_day':
      return (
        `A publishable key's checks may store ${megabytes(limit)} a day; ${megabytes(used)} are booked today and ` +
        `this check needs ${megabytes(requested)}. The budget resets at ${resetAt} (midnight UTC).`
      );
    case 'jobs_in_flight':
      return (
        `At most ${count(limit)} lists can be in progress at once, and ${count(used)} are; upload this one ` +
        'when one of them completes.'
      );
    case 'api_keys':
      return `An account can have at most ${count(limit)} active API keys; revoke one to create another.`;
    case 'prober_tokens':
      return `An account can have at most ${count(limit)} live prober tokens; revoke one to make another.`;
  }
}

/**
 * The most a D1 database holds on Workers Paid: 10 GB
 * (https://developers.cloudflare.com/d1/platform/limits/).
 */
export const D1_DATABASE_BYTES = 10_000_000_000;

/** The share of the database the default daily budget fills after RETENTION_DAYS full days. */
const DATABASE_SHARE = 0.8;

/**
 * The bytes all accounts' writes may add to D1 in a UTC day before new lists are refused
 * (a job's lists in its own object do not count here; its account's budget counts them):
 * GLOBAL_DAILY_STORAGE_BYTES, or 80 % of the database spread over the retention period (what a
 * day's writes stay for at most), 133 MB a day with the 60-day default.
 */
export function globalDailyStorageBytesOf(config: Config): number {
  return (
    config.GLOBAL_DAILY_STORAGE_BYTES ??
    Math.floor((D1_DATABASE_BYTES * DATABASE_SHARE) / config.RETENTION_DAYS)
  );
}

/**
 * 503 DAILY_STORAGE_FULL: the store has taken its day's writes; lists are taken again at midnight
 * UTC. The store's own figures are for operators (GET /internal/fleet), not for every caller.
 */
export function dailyStorageFull(now: number): ApiError {
  const resetAt = utcDayStart(now) + DAY_MS;
  return new ApiError('DAILY_STORAGE_FULL', {
    details: { resetAt: new Date(resetAt).toISOString() },
    retryAfterSeconds: Math.max(1, Math.ceil((resetAt - now) / 1000)),
  });
}

/**
 * Why a charge was refused: 403 PAYMENT_DISPUTED while a dispute of the account's payments is
 * open (its credits are not spendable, ledger.ts `spendableCreditsSql`), else 402
 * INSUFFICIENT_CREDITS with what was required and what the account has now.
 */
export async function insufficientCredits(db: Db, accountId: string, required: number): Promise<ApiError> {
  if (await hasOpenDispute(db, accountId)) return new ApiError('PAYMENT_DISPUTED');
  const available = (await readBalance(db, accountId)) ?? 0;
  return new ApiError('INSUFFICIENT_CREDITS', { details: { required, available } });
}
