// The balance watch (docs/money.md, "Low balance and automatic top-up"): after the balance
// went down, the low-balance email and an automatic top-up, one in flight at most, reconciled
// with Stripe when its webhook is slow or lost; the customer's top-up settings and their bounds;
// and the cron's sweep of every account with something due.
import { ApiError } from '@rcpt/shared/errors';
import Stripe from 'stripe';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  accountsToWatch,
  claimLowBalanceEmail,
  claimTopUp,
  claimTopUpLimitEmail,
  closeUnpaidPurchase,
  findBilling,
  findPurchase,
  markTopUpInFlight,
  needsWatch,
  type Purchase,
  setPaymentIntent,
} from '../../storage/purchases.ts';
import { type NoticeSender, noticeSenderFor } from '../accounts/confirmation-sender.ts';
import { type PaymentDeps, packOf, topUpSettled } from './purchases.ts';
import { utcDayStart } from './quotas.ts';
import { type PaymentsConfig, stripeClientOf } from './stripe-client.ts';

/**
 * How long a top-up may stay in flight (no webhook yet) before the watch asks Stripe what became
 * of it (`reconcileTopUp`): well past a PaymentIntent's answer, so Stripe is asked only about a
 * webhook that is slow or lost. A top-up in flight is never replaced by another without asking.
 */
export const TOP_UP_RECONCILE_AFTER_MS = 600_000;

/** Automatic top-ups a day when the customer has not said (docs/money.md). */
export const DEFAULT_TOP_UPS_PER_DAY = 3;
/** The most automatic top-ups a customer may allow in a day. */
export const MAX_TOP_UPS_PER_DAY = 24;

/**
 * The automatic top-up a customer asks for, or a 400 VALIDATION_ERROR naming the field. The
 * threshold is at most the pack: one top-up then always lifts the balance back to the threshold,
 * so top-ups never follow one another (docs/money.md, "Low balance and automatic top-up").
 */
export function autoTopUpOf(
  config: PaymentsConfig,
  asked: { threshold: number; credits: number; perDay: number },
): { autoTopUpThreshold: number; autoTopUpCredits: number; autoTopUpDailyLimit: number } {
  const pack = packOf(config, asked.credits);
  if (asked.threshold > pack.credits) {
    throw new ApiError('VALIDATION_ERROR', {
      message: `The top-up threshold (${asked.threshold.toLocaleString('en-US')}) is above the pack it buys (${pack.credits.toLocaleString('en-US')} credits): choose a threshold of at most ${pack.credits.toLocaleString('en-US')}, or a larger pack, so that one top-up always lifts the balance above it.`,
      details: { field: 'autoTopUpThreshold', max: pack.credits },
    });
  }
  if (!Number.isInteger(asked.perDay) || asked.perDay < 1 || asked.perDay > MAX_TOP_UPS_PER_DAY) {
    throw new ApiError('VALIDATION_ERROR', {
      message: `Top-ups a day is a whole number from 1 to ${MAX_TOP_UPS_PER_DAY}.`,
      details: { field: 'autoTopUpDailyLimit', max: MAX_TOP_UPS_PER_DAY },
    });
  }
  return {
    autoTopUpThreshold: asked.threshold,
    autoTopUpCredits: pack.credits,
    autoTopUpDailyLimit: asked.perDay,
  };
}

export interface WatchDeps {
  db: Db;
  config: PaymentsConfig;
  /** Null while purchases are off: then only the email is sent. */
  stripe: Stripe | null;
  /** Null where no email can be sent. */
  notices: NoticeSender | null;
  now: number;
}

/** The watch's dependencies from a deployment's config and bindings. */
export function watchDepsOf(
  db: Db,
  config: PaymentsConfig & Parameters<typeof noticeSenderFor>[0],
  env: object,
  now: number,
): WatchDeps {
  let notices: NoticeSender | null = null;
  try {
    notices = noticeSenderFor(config, env);
  } catch (error) {
    log.warn('low-balance emails cannot be sent', errorFields(error));
  }
  return { db, config, stripe: stripeClientOf(config), notices, now };
}

/**
 * After the balance went down: the low-balance email (once per fall below the customer's
 * threshold) and an automatic top-up (one in flight at most). Never throws: a failure is logged
 * and the cron's sweep asks again.
 */
export async function watchBalance(deps: WatchDeps, accountId: string): Promise<void> {
  try {
    if (!(await needsWatch(deps.db, accountId, deps.now - TOP_UP_RECONCILE_AFTER_MS, utcDayStart(deps.now))))
      return;
    const low = await claimLowBalanceEmail(deps.db, accountId, deps.now);
    if (low && deps.notices) {
      await deps.notices.send({
        to: low.email,
        subject: `Your rcpt balance is ${low.balance} credits`,
        text: [
          `Your rcpt account has ${low.balance} credits left, below the ${low.threshold} you asked to be told about.`,
          '',
          'Buy credits or turn on automatic top-up in the dashboard, under Credits, so that your jobs do not stop.',
        ].join('\n'),
      });
    }
    if (deps.stripe) await topUpIfLow({ ...deps, stripe: deps.stripe }, accountId);
  } catch (error) {
    log.error('balance watch failed', { account: accountId, ...errorFields(error) });
  }
}

async function topUpIfLow(deps: WatchDeps & { stripe: Stripe }, accountId: string): Promise<void> {
  const billing = await findBilling(deps.db, accountId);
  if (!billing?.stripeCustomerId) return;
  if (billing.topUpPurchaseId) {
    // One in flight: never a second charge beside it. Past the interval, ask Stripe what became of
    // it (its webhook may be slow or lost); once settled, a top-up may start again.
    if ((billing.topUpStartedAt ?? 0) >= deps.now - TOP_UP_RECONCILE_AFTER_MS) return;
    const purchase = await findPurchase(deps.db, billing.topUpPurchaseId);
    if (!purchase || !(await reconcileTopUp(deps, purchase, billing.stripeCustomerId))) return;
  }
  if (!billing.autoTopUpCredits || !billing.paymentMethodId) return;
  const pack = deps.config.CREDIT_PACKS.find((candidate) => candidate.credits === billing.autoTopUpCredits);
  if (!pack) return;
  const purchaseId = crypto.randomUUID();
  const dayStart = utcDayStart(deps.now);
  const claimed = await claimTopUp(deps.db, {
    accountId,
    purchaseId,
    credits: pack.credits,
    amount: pack.price,
    currency: deps.config.CREDIT_CURRENCY,
    now: deps.now,
    dayStart,
  });
  if (!claimed) {
    await tellTopUpLimit(deps, accountId, dayStart);
    return;
  }
  try {
    const intent = await deps.stripe.paymentIntents.create(
      {
        amount: pack.price,
        currency: deps.config.CREDIT_CURRENCY,
        customer: billing.stripeCustomerId,
        payment_method: billing.paymentMethodId,
        off_session: true,
        confirm: true,
        description: `${pack.credits} rcpt credits (automatic top-up)`,
        metadata: { purchase_id: purchaseId, account_id: accountId },
      },
      // The purchase is the payment: however often this request is sent, Stripe charges once
      // (https://docs.stripe.com/api/idempotent_requests).
      { idempotencyKey: `top-up-${purchaseId}` },
    );
    await setPaymentIntent(deps.db, purchaseId, intent.id);
  } catch (error) {
    if (error instanceof Stripe.errors.StripeCardError) {
      const intentId = error.payment_intent?.id;
      if (intentId) await setPaymentIntent(deps.db, purchaseId, intentId);
      await closeUnpaidPurchase(deps.db, {
        purchaseId,
        status: 'failed',
        reason: error.message,
        now: deps.now,
      });
      return;
    }
    throw error;
  }
}

/**
 * What became of a top-up whose webhook has not come: its PaymentIntent, asked of Stripe (by id,
 * or among the customer's when the answer to its creation was lost), settles the purchase as its
 * webhook would — the same grant, once, whichever comes first. True when the top-up is no longer
 * in flight; false while Stripe is still processing it (asked again after the interval).
 */
export async function reconcileTopUp(
  deps: PaymentDeps,
  purchase: Purchase,
  customerId: string,
): Promise<boolean> {
  // Settled already (its webhook came between two reads), or unknown to Stripe (its creation
  // never reached Stripe: nothing was charged): closing it frees the slot, and closes a pending one.
  const intent =
    purchase.status !== 'pending'
      ? null
      : purchase.paymentIntentId
        ? await deps.stripe.paymentIntents.retrieve(purchase.paymentIntentId)
        : await intentOfPurchase(deps.stripe, customerId, purchase.id);
  if (!intent) {
    await closeUnpaidPurchase(deps.db, {
      purchaseId: purchase.id,
      status: 'expired',
      reason: null,
      now: deps.now,
    });
    return true;
  }
  log.info('top-up reconciled with stripe', {
    purchase: purchase.id,
    intent: intent.id,
    status: intent.status,
  });
  switch (intent.status) {
    case 'succeeded':
      await topUpSettled(deps, intent, true);
      return true;
    case 'canceled':
    case 'requires_payment_method':
      await topUpSettled(deps, intent, false);
      return true;
    default:
      // processing (or waiting on the customer): still in flight.
      await markTopUpInFlight(deps.db, purchase.id, deps.now);
      return false;
  }
}

/** The PaymentIntent Stripe made for the purchase, found among its customer's newest ones. */
async function intentOfPurchase(
  stripe: Stripe,
  customerId: string,
  purchaseId: string,
): Promise<Stripe.PaymentIntent | null> {
  // The list is read from Stripe's primary store (unlike search, which may lag by minutes:
  // https://docs.stripe.com/search#data-freshness). A top-up is among the customer's newest.
  const page = await stripe.paymentIntents.list({ customer: customerId, limit: 100 });
  return page.data.find((intent) => intent.metadata?.purchase_id === purchaseId) ?? null;
}

/** The day's email that automatic top-ups reached their daily limit, once a day. */
async function tellTopUpLimit(deps: WatchDeps, accountId: string, dayStart: number): Promise<void> {
  if (!deps.notices) return;
  const reached = await claimTopUpLimitEmail(deps.db, accountId, deps.now, dayStart);
  if (!reached) return;
  await deps.notices.send({
    to: reached.email,
    subject: `rcpt: automatic top-up paused for today (${reached.limit} a day)`,
    text: [
      `Your rcpt account has been topped up automatically ${reached.limit} times today, the most you allowed a day, and its balance is ${reached.balance} credits.`,
      '',
      'Automatic top-up starts again tomorrow (midnight UTC). To go on now, buy a pack in the dashboard, under Credits, where you can also change the daily limit.',
    ].join('\n'),
  });
}

/** The cron's sweep: the watch of every account with something due (credits a queue consumer spent, a lost webhook). */
export async function sweepBalances(deps: WatchDeps, limit = 100): Promise<{ watched: number }> {
  const due = await accountsToWatch(
    deps.db,
    deps.now - TOP_UP_RECONCILE_AFTER_MS,
    utcDayStart(deps.now),
    limit,
  );
  for (const accountId of due) await watchBalance(deps, accountId);
  return { watched: due.length };
}
