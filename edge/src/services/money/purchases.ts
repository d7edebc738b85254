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
  closeUnpaidPurchase,
  findBilling,
  findPurchase,
  findPurchaseByPaymentIntent,
  grantPaidPurchase,
  insertPurchase,
  keepStripeCustomer,
  needsWatch,
  savePaymentMethod,
  setCheckoutSession,
  setPaymentIntent,
} from '../../storage/purchases.ts';
import { type NoticeSender, noticeSenderFor } from '../accounts/confirmation-sender.ts';
import { type PaymentsConfig, stripeClientOf } from './stripe-client.ts';

/**
 * How long a top-up may stay in flight (no webhook yet) before the watch may start another: far
 * past a PaymentIntent's answer, so that a slow webhook is not taken for a lost one.
 */
export const TOP_UP_LEASE_MS = 3_600_000;

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

/** What an event did, for the log and the webhook's answer. */
export type EventOutcome = 'granted' | 'refunded' | 'failed' | 'expired' | 'already_applied' | 'ignored';

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
    if (!(await needsWatch(deps.db, accountId, deps.now - TOP_UP_LEASE_MS))) return;
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

async function topUpIfLow(deps: PaymentDeps, accountId: string): Promise<void> {
  const billing = await findBilling(deps.db, accountId);
  if (!billing?.autoTopUpCredits || !billing.paymentMethodId || !billing.stripeCustomerId) return;
  const pack = deps.config.CREDIT_PACKS.find((candidate) => candidate.credits === billing.autoTopUpCredits);
  if (!pack) return;
  const purchaseId = crypto.randomUUID();
  const claimed = await claimTopUp(deps.db, {
    accountId,
    purchaseId,
    credits: pack.credits,
    amount: pack.price,
    currency: deps.config.CREDIT_CURRENCY,
    now: deps.now,
    staleBefore: deps.now - TOP_UP_LEASE_MS,
  });
  if (!claimed) return;
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

/** The cron's sweep: the watch of every account with something due (credits a queue consumer spent, a lost webhook). */
export async function sweepBalances(deps: WatchDeps, limit = 100): Promise<{ watched: number }> {
  const due = await accountsToWatch(deps.db, deps.now - TOP_UP_LEASE_MS, limit);
  for (const accountId of due) await watchBalance(deps, accountId);
  return { watched: due.length };
}
