// Buying credits (docs/money.md, "Buying credits"): Checkout for a credit pack, the Stripe
// events that grant, take back or fail a purchase, and the balance watch (low-balance email and
// automatic top-up). Credits move only when a signed event says money moved, and every event is
// applied in a transaction guarded by the purchase's state, so replays change nothing.
import { ApiError } from '@rcpt/shared/errors';
import Stripe from 'stripe';
import type { CreditPack } from '../../config.ts';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  accountsToWatch,
  applyRefund,
  claimLowBalanceEmail,
  claimTopUp,
  claimTopUpLimitEmail,
  closeUnpaidPurchase,
  findBilling,
  findPurchase,
  findPurchaseByPaymentIntent,
  grantPaidPurchase,
  insertPurchase,
  keepStripeCustomer,
  markTopUpInFlight,
  needsWatch,
  type Purchase,
  savePaymentMethod,
  setCheckoutSession,
  setPaymentIntent,
} from '../../storage/purchases.ts';
import { type NoticeSender, noticeSenderFor } from '../accounts/confirmation-sender.ts';
import { applyDisputeEvent, type DisputeOutcome, refuseWhileDisputed } from './disputes.ts';
import { utcDayStart } from './quotas.ts';
import { type PaymentsConfig, stripeClientOf } from './stripe-client.ts';

/**
 * How long a top-up may stay in flight (no webhook yet) before the watch asks Stripe what became
 * of it (`reconcileTopUp`): well past a PaymentIntent's answer, so Stripe is asked only about a
 * webhook that is slow or lost. A top-up in flight is never replaced by another without asking.
 */
export const TOP_UP_RECONCILE_AFTER_MS = 600_000;

export interface PaymentDeps {
  db: Db;
  config: PaymentsConfig;
  stripe: Stripe;
  now: number;
}

/** The pack of `credits` on sale, or a 400 naming the packs there are. */
export function packOf(config: PaymentsConfig, credits: number): CreditPack {
  const pack = config.CREDIT_PACKS.find((candidate) => candidate.credits === credits);
  if (!pack) {
    throw new ApiError('VALIDATION_ERROR', {
      message: `There is no pack of ${credits} credits; the packs are ${config.CREDIT_PACKS.map((p) => p.credits).join(', ')}.`,
    });
  }
  return pack;
}

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

/**
 * The price as people read it: `$9.00`, `€49.00`, `¥900`. Amounts are in the currency's minor
 * unit, as Stripe counts them (https://docs.stripe.com/currencies#zero-decimal): its digits are
 * the ones Intl shows for it.
 */
export function formatPrice(amount: number, currency: string): string {
  const format = new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() });
  return format.format(amount / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2));
}

async function customerOf(
  deps: PaymentDeps,
  account: { accountId: string; email: string | null },
): Promise<string> {
  const billing = await findBilling(deps.db, account.accountId);
  if (billing?.stripeCustomerId) return billing.stripeCustomerId;
  const customer = await deps.stripe.customers.create(
    { ...(account.email ? { email: account.email } : {}), metadata: { account_id: account.accountId } },
    // A retry of this request (the library's, or a second click) makes no second customer.
    { idempotencyKey: `customer-${account.accountId}` },
  );
  return keepStripeCustomer(deps.db, account.accountId, customer.id, deps.now);
}

/**
 * Starts a Checkout for a pack: writes the pending purchase, then asks Stripe for a hosted
 * payment page and returns its URL. With `saveCard`, the card is kept for automatic top-ups
 * (`setup_future_usage: off_session`, https://docs.stripe.com/payments/checkout/save-during-payment).
 */
export async function startCheckout(
  deps: PaymentDeps,
  input: { accountId: string; email: string | null; credits: number; saveCard: boolean; origin: string },
): Promise<string> {
  const pack = packOf(deps.config, input.credits);
  // A payment of the account is disputed: no new payment until it closes.
  await refuseWhileDisputed(deps.db, input.accountId);
  const purchaseId = crypto.randomUUID();
  const customer = await customerOf(deps, input);
  await insertPurchase(deps.db, {
    id: purchaseId,
    accountId: input.accountId,
    kind: 'checkout',
    credits: pack.credits,
    amount: pack.price,
    currency: deps.config.CREDIT_CURRENCY,
    now: deps.now,
  });
  const metadata = {
    purchase_id: purchaseId,
    account_id: input.accountId,
    save_card: input.saveCard ? '1' : '0',
  };
  const session = await deps.stripe.checkout.sessions.create(
    {
      mode: 'payment',
      customer,
      client_reference_id: purchaseId,
      line_items: [
        {
          quantity: 1,
          price_data: {
            currency: deps.config.CREDIT_CURRENCY,
            unit_amount: pack.price,
            product_data: { name: `${pack.credits.toLocaleString('en-US')} rcpt credits` },
          },
        },
      ],
      metadata,
      payment_intent_data: {
        metadata,
        ...(input.saveCard ? { setup_future_usage: 'off_session' as const } : {}),
      },
      success_url: `${input.origin}/credits?checkout=paid`,
      cancel_url: `${input.origin}/credits?checkout=cancelled`,
    },
    { idempotencyKey: `checkout-${purchaseId}` },
  );
  await setCheckoutSession(deps.db, purchaseId, session.id);
  if (!session.url) throw new Error('Stripe returned a Checkout Session without a URL');
  return session.url;
}

/** What an event did, for the log and the webhook's answer (`deferred`: deliver it again later). */
export type EventOutcome =
  | 'granted'
  | 'refunded'
  | 'failed'
  | 'expired'
  | 'already_applied'
  | 'ignored'
  | DisputeOutcome;

/** Applies one verified Stripe event. Safe to call any number of times with the same event. */
export async function applyStripeEvent(deps: PaymentDeps, event: Stripe.Event): Promise<EventOutcome> {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return checkoutPaid(deps, event.data.object);
    case 'checkout.session.expired':
    case 'checkout.session.async_payment_failed': {
      const purchaseId = event.data.object.client_reference_id;
      if (!purchaseId) return 'ignored';
      const status = event.type === 'checkout.session.expired' ? 'expired' : 'failed';
      const closed = await closeUnpaidPurchase(deps.db, { purchaseId, status, reason: null, now: deps.now });
      return closed ? status : 'already_applied';
    }
    case 'payment_intent.succeeded':
    case 'payment_intent.payment_failed':
      return topUpSettled(deps, event.data.object, event.type === 'payment_intent.succeeded');
    case 'charge.refunded':
      return chargeRefunded(deps, event.data.object);
    case 'charge.dispute.created':
    case 'charge.dispute.closed':
      return applyDisputeEvent(deps, event.data.object, event.type === 'charge.dispute.closed');
    default:
      return 'ignored';
  }
}

async function checkoutPaid(deps: PaymentDeps, session: Stripe.Checkout.Session): Promise<EventOutcome> {
  // Delayed payment methods complete the session unpaid; `async_payment_succeeded` follows.
  if (session.payment_status !== 'paid') return 'ignored';
  const purchase = session.client_reference_id
    ? await findPurchase(deps.db, session.client_reference_id)
    : null;
  if (purchase?.kind !== 'checkout') {
    log.warn('stripe checkout for no known purchase', { session: session.id });
    return 'ignored';
  }
  if (session.amount_total !== purchase.amount || session.currency !== purchase.currency) {
    // Never grant credits for another amount than the pack's: an operator looks at it.
    log.error('stripe checkout amount differs from its purchase', {
      session: session.id,
      purchase: purchase.id,
      amount: session.amount_total,
      expected: purchase.amount,
    });
    return 'ignored';
  }
  const paymentIntentId =
    typeof session.payment_intent === 'string'
      ? session.payment_intent
      : (session.payment_intent?.id ?? null);
  const outcome = await grantPaidPurchase(deps.db, {
    purchaseId: purchase.id,
    reference: session.id,
    paymentIntentId,
    now: deps.now,
  });
  if (outcome.granted && session.metadata?.save_card === '1')
    await keepCard(deps, purchase.accountId, session.id);
  return outcome.granted ? 'granted' : 'already_applied';
}

/** Stores the card a Checkout saved for off-session use, with a label people recognise. */
async function keepCard(deps: PaymentDeps, accountId: string, sessionId: string): Promise<void> {
  const session = await deps.stripe.checkout.sessions.retrieve(sessionId, {
    expand: ['payment_intent.payment_method'],
  });
  const intent = session.payment_intent;
  const method = intent && typeof intent !== 'string' ? intent.payment_method : null;
  if (!method || typeof method === 'string') return;
  const label = method.card ? `${method.card.brand} ···· ${method.card.last4}` : method.type;
  await savePaymentMethod(deps.db, accountId, { id: method.id, label }, deps.now);
}

async function topUpSettled(
  deps: PaymentDeps,
  intent: Stripe.PaymentIntent,
  succeeded: boolean,
): Promise<EventOutcome> {
  const purchaseId = intent.metadata?.purchase_id;
  const purchase = purchaseId ? await findPurchase(deps.db, purchaseId) : null;
  // A Checkout's own PaymentIntent carries the purchase too: its session's event grants it.
  if (purchase?.kind !== 'auto_topup') return 'ignored';
  if (succeeded) {
    if (intent.amount !== purchase.amount || intent.currency !== purchase.currency) {
      log.error('stripe top-up amount differs from its purchase', {
        intent: intent.id,
        purchase: purchase.id,
      });
      return 'ignored';
    }
    const outcome = await grantPaidPurchase(deps.db, {
      purchaseId: purchase.id,
      reference: intent.id,
      paymentIntentId: intent.id,
      now: deps.now,
    });
    return outcome.granted ? 'granted' : 'already_applied';
  }
  const reason = intent.last_payment_error?.message ?? 'The card was declined.';
  const closed = await closeUnpaidPurchase(deps.db, {
    purchaseId: purchase.id,
    status: 'failed',
    reason,
    now: deps.now,
  });
  return closed ? 'failed' : 'already_applied';
}

async function chargeRefunded(deps: PaymentDeps, charge: Stripe.Charge): Promise<EventOutcome> {
  const paymentIntentId =
    typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
  const purchase = paymentIntentId ? await findPurchaseByPaymentIntent(deps.db, paymentIntentId) : null;
  if (!purchase) return 'ignored';
  const moved = await applyRefund(deps.db, {
    purchaseId: purchase.id,
    amountRefunded: charge.amount_refunded,
    // Each refunded total of the charge moves once, whichever event carries it.
    reference: `${charge.id}:${charge.amount_refunded}`,
    now: deps.now,
  });
  return moved ? 'refunded' : 'already_applied';
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
