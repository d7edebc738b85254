// Purchases of credits and each account's billing settings (docs/money.md, "Buying credits").
// Every change that moves credits composes ledger.ts statements into one batch with the
// purchase's own state change, guarded by that state, so a webhook delivered twice, or twice at
// once, moves nothing the second time.
import { type Db, prepare } from './db.ts';
import { grantPurchase, takeBackRefundedCredits } from './ledger.ts';

export type PurchaseKind = 'checkout' | 'auto_topup';
export type PurchaseStatus = 'pending' | 'paid' | 'failed' | 'expired' | 'refunded' | 'partially_refunded';

export interface Purchase {
  id: string;
  accountId: string;
  kind: PurchaseKind;
  credits: number;
  amount: number;
  currency: string;
  status: PurchaseStatus;
  checkoutSessionId: string | null;
  paymentIntentId: string | null;
  amountRefunded: number;
  creditsTakenBack: number;
  failureReason: string | null;
  createdAt: number;
  paidAt: number | null;
}

const PURCHASE_COLUMNS = `id, account_id AS accountId, kind, credits, amount, currency, status,
  checkout_session_id AS checkoutSessionId, payment_intent_id AS paymentIntentId,
  amount_refunded AS amountRefunded, credits_taken_back AS creditsTakenBack,
  failure_reason AS failureReason, created_at AS createdAt, paid_at AS paidAt`;

export interface BillingSettings {
  accountId: string;
  stripeCustomerId: string | null;
  paymentMethodId: string | null;
  paymentMethodLabel: string | null;
  lowBalanceThreshold: number | null;
  lowBalanceNotifiedAt: number | null;
  autoTopUpThreshold: number | null;
  autoTopUpCredits: number | null;
  topUpPurchaseId: string | null;
  topUpStartedAt: number | null;
  topUpFailure: string | null;
  autoTopUpDailyLimit: number;
  topUpLimitNotifiedAt: number | null;
}

const BILLING_COLUMNS = `account_id AS accountId, stripe_customer_id AS stripeCustomerId,
  payment_method_id AS paymentMethodId, payment_method_label AS paymentMethodLabel,
  low_balance_threshold AS lowBalanceThreshold, low_balance_notified_at AS lowBalanceNotifiedAt,
  auto_top_up_threshold AS autoTopUpThreshold, auto_top_up_credits AS autoTopUpCredits,
  top_up_purchase_id AS topUpPurchaseId, top_up_started_at AS topUpStartedAt,
  top_up_failure AS topUpFailure, auto_top_up_daily_limit AS autoTopUpDailyLimit,
  top_up_limit_notified_at AS topUpLimitNotifiedAt`;

export type NewPurchase = Pick<Purchase, 'id' | 'accountId' | 'kind' | 'credits' | 'amount' | 'currency'> & {
  now: number;
};

export async function insertPurchase(db: Db, purchase: NewPurchase): Promise<void> {
  await db.$client
    .prepare(
      `INSERT INTO purchases (id, account_id, kind, credits, amount, currency, status, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7)`,
    )
    .bind(
      purchase.id,
      purchase.accountId,
      purchase.kind,
      purchase.credits,
      purchase.amount,
      purchase.currency,
      purchase.now,
    )
    .run();
}

export async function setCheckoutSession(db: Db, purchaseId: string, sessionId: string): Promise<void> {
  await db.$client
    .prepare('UPDATE purchases SET checkout_session_id = ?2 WHERE id = ?1 AND checkout_session_id IS NULL')
    .bind(purchaseId, sessionId)
    .run();
}

export async function setPaymentIntent(db: Db, purchaseId: string, paymentIntentId: string): Promise<void> {
  await db.$client
    .prepare('UPDATE purchases SET payment_intent_id = ?2 WHERE id = ?1 AND payment_intent_id IS NULL')
    .bind(purchaseId, paymentIntentId)
    .run();
}

export async function findPurchase(db: Db, purchaseId: string): Promise<Purchase | null> {
  return db.$client
    .prepare(`SELECT ${PURCHASE_COLUMNS} FROM purchases WHERE id = ?1`)
    .bind(purchaseId)
    .first<Purchase>();
}

export async function findPurchaseByPaymentIntent(db: Db, paymentIntentId: string): Promise<Purchase | null> {
  return db.$client
    .prepare(`SELECT ${PURCHASE_COLUMNS} FROM purchases WHERE payment_intent_id = ?1`)
    .bind(paymentIntentId)
    .first<Purchase>();
}

/** The account's receipts, newest first: what was paid, refunded or declined (not open checkouts). */
export async function listReceipts(db: Db, accountId: string, limit = 100): Promise<Purchase[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT ${PURCHASE_COLUMNS} FROM purchases
       WHERE account_id = ?1 AND status IN ('paid', 'refunded', 'partially_refunded', 'failed')
       ORDER BY created_at DESC, id LIMIT ?2`,
    )
    .bind(accountId, limit)
    .all<Purchase>();
  return results;
}

export async function findBilling(db: Db, accountId: string): Promise<BillingSettings | null> {
  return db.$client
    .prepare(`SELECT ${BILLING_COLUMNS} FROM account_billing WHERE account_id = ?1`)
    .bind(accountId)
    .first<BillingSettings>();
}

/**
 * Stores the account's Stripe customer unless it has one already, and returns the one it has:
 * of two checkouts started at once, both use the customer stored first.
 */
export async function keepStripeCustomer(
  db: Db,
  accountId: string,
  customerId: string,
  now: number,
): Promise<string> {
  const row = await db.$client
    .prepare(
      `INSERT INTO account_billing (account_id, stripe_customer_id, updated_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (account_id) DO UPDATE SET
         stripe_customer_id = COALESCE(account_billing.stripe_customer_id, excluded.stripe_customer_id),
         updated_at = excluded.updated_at
       RETURNING stripe_customer_id AS customerId`,
    )
    .bind(accountId, customerId, now)
    .first<{ customerId: string }>();
  return row?.customerId ?? customerId;
}

export interface BalanceAlerts {
  lowBalanceThreshold: number | null;
  autoTopUpThreshold: number | null;
  autoTopUpCredits: number | null;
  /** Automatic top-ups that may start in a UTC day. */
  autoTopUpDailyLimit: number;
}

/** The customer's thresholds (null: off). A changed setting re-arms the low-balance email. */
export async function saveBalanceAlerts(
  db: Db,
  accountId: string,
  alerts: BalanceAlerts,
  now: number,
): Promise<void> {
  await db.$client
    .prepare(
      `INSERT INTO account_billing (account_id, low_balance_threshold, auto_top_up_threshold, auto_top_up_credits,
         auto_top_up_daily_limit, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?6, ?5)
       ON CONFLICT (account_id) DO UPDATE SET
         auto_top_up_daily_limit = excluded.auto_top_up_daily_limit,
         low_balance_threshold = excluded.low_balance_threshold,
         low_balance_notified_at = CASE
           WHEN account_billing.low_balance_threshold IS excluded.low_balance_threshold
           THEN account_billing.low_balance_notified_at END,
         auto_top_up_threshold = excluded.auto_top_up_threshold,
         auto_top_up_credits = excluded.auto_top_up_credits,
         updated_at = excluded.updated_at`,
    )
    .bind(
      accountId,
      alerts.lowBalanceThreshold,
      alerts.autoTopUpThreshold,
      alerts.autoTopUpCredits,
      now,
      alerts.autoTopUpDailyLimit,
    )
    .run();
}

/** The card a Checkout saved for off-session charges; a new card clears an earlier decline. */
export async function savePaymentMethod(
  db: Db,
  accountId: string,
  method: { id: string; label: string },
  now: number,
): Promise<void> {
  await db.$client
    .prepare(
      `UPDATE account_billing SET payment_method_id = ?2, payment_method_label = ?3, top_up_failure = NULL,
         updated_at = ?4 WHERE account_id = ?1`,
    )
    .bind(accountId, method.id, method.label, now)
    .run();
}

export async function forgetPaymentMethod(db: Db, accountId: string, now: number): Promise<void> {
  await db.$client
    .prepare(
      `UPDATE account_billing SET payment_method_id = NULL, payment_method_label = NULL,
         auto_top_up_threshold = NULL, updated_at = ?2 WHERE account_id = ?1`,
    )
    .bind(accountId, now)
    .run();
}

/** The outcome of a webhook that says a purchase was paid. */
export interface GrantOutcome {
  /** True when this delivery granted the credits; false: granted before, or not pending. */
  granted: boolean;
  accountId: string | null;
}

/**
 * Grants a paid purchase's credits and marks it paid, in one transaction guarded by its pending
 * state (ledger.ts `grantPurchase`, which settles a dispute's debt from them first); ends the
 * account's top-up in flight if it was this one.
 */
export async function grantPaidPurchase(
  db: Db,
  paid: { purchaseId: string; reference: string; paymentIntentId: string | null; now: number },
): Promise<GrantOutcome> {
  const d1 = db.$client;
  const grant = grantPurchase(paid.purchaseId, paid.reference, paid.now);
  const [, , , , marked] = await d1.batch<{ accountId: string }>([
    prepare(d1, grant.entry),
    prepare(d1, grant.balance),
    prepare(d1, grant.settle.entry),
    prepare(d1, grant.settle.balance),
    d1
      .prepare(
        `UPDATE purchases SET status = 'paid', paid_at = ?2, payment_intent_id = COALESCE(payment_intent_id, ?3)
         WHERE id = ?1 AND status = 'pending' RETURNING account_id AS accountId`,
      )
      .bind(paid.purchaseId, paid.now, paid.paymentIntentId),
    d1
      .prepare(
        `UPDATE account_billing SET top_up_purchase_id = NULL, top_up_started_at = NULL
         WHERE top_up_purchase_id = ?1`,
      )
      .bind(paid.purchaseId),
  ]);
  const accountId = marked?.results[0]?.accountId ?? null;
  return { granted: accountId !== null, accountId };
}

/**
 * A purchase that will not be paid: `failed` (a declined top-up: automatic top-ups stop until a
 * card is saved again, so a declined card is not charged again and again) or `expired` (an
 * abandoned checkout). Only while pending.
 */
export async function closeUnpaidPurchase(
  db: Db,
  closed: { purchaseId: string; status: 'failed' | 'expired'; reason: string | null; now: number },
): Promise<boolean> {
  const d1 = db.$client;
  const [updated] = await d1.batch([
    d1
      .prepare(
        `UPDATE purchases SET status = ?2, failure_reason = ?3 WHERE id = ?1 AND status = 'pending'
         RETURNING id`,
      )
      .bind(closed.purchaseId, closed.status, closed.reason),
    d1
      .prepare(
        `UPDATE account_billing SET top_up_purchase_id = NULL, top_up_started_at = NULL,
           top_up_failure = COALESCE(?2, top_up_failure), updated_at = ?3
         WHERE top_up_purchase_id = ?1`,
      )
      .bind(closed.purchaseId, closed.status === 'failed' ? (closed.reason ?? 'declined') : null, closed.now),
  ]);
  return (updated?.results.length ?? 0) > 0;
}

/**
 * Applies a refund of a paid purchase (ledger.ts `takeBackRefundedCredits`). Returns the
 * account when this delivery moved the purchase on, null when it had been applied before.
 */
export async function applyRefund(
  db: Db,
  refund: { purchaseId: string; amountRefunded: number; reference: string; now: number },
): Promise<string | null> {
  const d1 = db.$client;
  const takeBack = takeBackRefundedCredits(
    refund.purchaseId,
    refund.amountRefunded,
    refund.reference,
    refund.now,
  );
  const [, , recorded] = await d1.batch<{ accountId: string }>([
    prepare(d1, takeBack.entry),
    prepare(d1, takeBack.balance),
    prepare(d1, takeBack.record),
  ]);
  return recorded?.results[0]?.accountId ?? null;
}

/** SQL: automatic top-ups of the billing row `b` started since `dayStart` (a UTC day), declined ones included. */
function topUpsSinceSql(dayStart: string): string {
  return `(SELECT COUNT(*) FROM purchases WHERE account_id = b.account_id AND kind = 'auto_topup'
    AND created_at >= ${dayStart} AND status <> 'expired')`;
}

/**
 * Starts an automatic top-up if the account needs one and may have one: in one batch, takes the
 * account's top-up slot (auto top-up on, a saved card that was not declined, the balance below
 * the threshold, no top-up in flight, fewer top-ups today than its daily limit, no dispute open)
 * and writes the pending purchase. True when this call took it. A top-up in flight is never
 * replaced here: it ends with its webhook, or when `reconcileTopUp` learns its outcome from Stripe.
 */
export async function claimTopUp(
  db: Db,
  claim: {
    accountId: string;
    purchaseId: string;
    credits: number;
    amount: number;
    currency: string;
    now: number;
    /** Start of the UTC day the daily limit counts. */
    dayStart: number;
  },
): Promise<boolean> {
  const d1 = db.$client;
  const [claimed] = await d1.batch([
    d1
      .prepare(
        `UPDATE account_billing AS b SET top_up_purchase_id = ?2, top_up_started_at = ?3, updated_at = ?3
         WHERE b.account_id = ?1 AND b.auto_top_up_threshold IS NOT NULL AND b.auto_top_up_credits = ?4
           AND b.payment_method_id IS NOT NULL AND b.stripe_customer_id IS NOT NULL AND b.top_up_failure IS NULL
           AND b.top_up_purchase_id IS NULL
           AND ${topUpsSinceSql('?5')} < b.auto_top_up_daily_limit
           AND (SELECT credit_balance < b.auto_top_up_threshold AND open_disputes = 0 FROM accounts WHERE id = ?1)
         RETURNING account_id`,
      )
      .bind(claim.accountId, claim.purchaseId, claim.now, claim.credits, claim.dayStart),
    d1
      .prepare(
        `INSERT INTO purchases (id, account_id, kind, credits, amount, currency, status, created_at)
         SELECT ?1, ?2, 'auto_topup', ?3, ?4, ?5, 'pending', ?6
         WHERE EXISTS (SELECT 1 FROM account_billing WHERE account_id = ?2 AND top_up_purchase_id = ?1)`,
      )
      .bind(claim.purchaseId, claim.accountId, claim.credits, claim.amount, claim.currency, claim.now),
  ]);
  return (claimed?.results.length ?? 0) > 0;
}

/**
 * The top-up in flight is still in flight at Stripe (its PaymentIntent is processing): it is
 * asked about again once it is in flight past the watch's interval again.
 */
export async function markTopUpInFlight(db: Db, purchaseId: string, now: number): Promise<void> {
  await db.$client
    .prepare('UPDATE account_billing SET top_up_started_at = ?2 WHERE top_up_purchase_id = ?1')
    .bind(purchaseId, now)
    .run();
}

/**
 * Takes the day's email that says automatic top-ups reached their daily limit: once per UTC day,
 * only while a top-up is due (below the threshold, none in flight) and the limit is what stops it.
 * The address, the balance and the limit, or null (not due, or sent today already).
 */
export async function claimTopUpLimitEmail(
  db: Db,
  accountId: string,
  now: number,
  dayStart: number,
): Promise<{ email: string; balance: number; limit: number } | null> {
  const row = await db.$client
    .prepare(
      `UPDATE account_billing AS b SET top_up_limit_notified_at = ?2
       WHERE b.account_id = ?1 AND b.auto_top_up_threshold IS NOT NULL AND b.top_up_failure IS NULL
         AND b.top_up_purchase_id IS NULL
         AND (b.top_up_limit_notified_at IS NULL OR b.top_up_limit_notified_at < ?3)
         AND ${topUpsSinceSql('?3')} >= b.auto_top_up_daily_limit
         AND (SELECT credit_balance FROM accounts WHERE id = ?1) < b.auto_top_up_threshold
       RETURNING (SELECT email FROM accounts WHERE id = ?1) AS email,
         (SELECT credit_balance FROM accounts WHERE id = ?1) AS balance, auto_top_up_daily_limit AS "limit"`,
    )
    .bind(accountId, now, dayStart)
    .first<{ email: string | null; balance: number; limit: number }>();
  return row?.email ? { email: row.email, balance: row.balance, limit: row.limit } : null;
}

/**
 * Takes the account's low-balance email: true once each time the balance goes below the
 * threshold (the caller sends it); re-armed once the balance is back at the threshold.
 */
export async function claimLowBalanceEmail(
  db: Db,
  accountId: string,
  now: number,
): Promise<{ email: string; balance: number; threshold: number } | null> {
  const d1 = db.$client;
  const balance = '(SELECT credit_balance FROM accounts WHERE id = ?1)';
  const [, claimed] = await d1.batch<{ email: string | null; balance: number; threshold: number }>([
    d1
      .prepare(
        `UPDATE account_billing SET low_balance_notified_at = NULL
         WHERE account_id = ?1 AND low_balance_notified_at IS NOT NULL AND ${balance} >= low_balance_threshold`,
      )
      .bind(accountId),
    d1
      .prepare(
        `UPDATE account_billing SET low_balance_notified_at = ?2
         WHERE account_id = ?1 AND low_balance_threshold IS NOT NULL AND low_balance_notified_at IS NULL
           AND ${balance} < low_balance_threshold
         RETURNING (SELECT email FROM accounts WHERE id = ?1) AS email, ${balance} AS balance,
           low_balance_threshold AS threshold`,
      )
      .bind(accountId, now),
  ]);
  const row = claimed?.results[0];
  return row?.email ? { email: row.email, balance: row.balance, threshold: row.threshold } : null;
}

/**
 * Whether an account's balance watch has something to do: a low-balance email to send or re-arm,
 * a top-up to start (none in flight, fewer than the daily limit today, no dispute open), the
 * day's email that the limit stopped one, or a top-up in flight since before `?1` to reconcile
 * with Stripe. `?3` is the start of the UTC day.
 */
const WATCH_NEEDED = `(b.low_balance_threshold IS NOT NULL AND (
     (b.low_balance_notified_at IS NULL AND a.credit_balance < b.low_balance_threshold)
     OR (b.low_balance_notified_at IS NOT NULL AND a.credit_balance >= b.low_balance_threshold)))
  OR (b.top_up_purchase_id IS NOT NULL AND b.top_up_started_at < ?1)
  OR (b.auto_top_up_threshold IS NOT NULL AND b.payment_method_id IS NOT NULL AND b.top_up_failure IS NULL
      AND a.credit_balance < b.auto_top_up_threshold AND b.top_up_purchase_id IS NULL AND a.open_disputes = 0
      AND (${topUpsSinceSql('?3')} < b.auto_top_up_daily_limit
        OR b.top_up_limit_notified_at IS NULL OR b.top_up_limit_notified_at < ?3))`;

/** Whether this account's balance watch has anything to do (one primary-key lookup when it has no settings). */
export async function needsWatch(
  db: Db,
  accountId: string,
  inFlightBefore: number,
  dayStart: number,
): Promise<boolean> {
  const row = await db.$client
    .prepare(
      `SELECT 1 AS due FROM account_billing b JOIN accounts a ON a.id = b.account_id
       WHERE b.account_id = ?2 AND (${WATCH_NEEDED})`,
    )
    .bind(inFlightBefore, accountId, dayStart)
    .first<{ due: number }>();
  return row !== null;
}

/** Accounts whose balance watch has something to do, for the cron's sweep. */
export async function accountsToWatch(
  db: Db,
  inFlightBefore: number,
  dayStart: number,
  limit: number,
): Promise<string[]> {
  const { results } = await db.$client
    .prepare(
      `SELECT b.account_id AS accountId FROM account_billing b JOIN accounts a ON a.id = b.account_id
       WHERE ${WATCH_NEEDED} LIMIT ?2`,
    )
    .bind(inFlightBefore, limit, dayStart)
    .all<{ accountId: string }>();
  return results.map((row) => row.accountId);
}
