// Buying credits (docs/money.md, "Buying credits"): Checkout for a credit pack and the Stripe
// events that grant, take back or fail a purchase; the balance watch that starts automatic
// top-ups is balance-watch.ts. Credits move only when a signed event says money moved, and every event is
// applied in a transaction guarded by the purchase's state, so replays change nothing.
import { ApiError } from '@rcpt/shared/errors';
import type Stripe from 'stripe';
import type { CreditPack } from '../../config.ts';
import { log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  applyRefund,
  closeUnpaidPurchase,
  findBilling,
  findPurchase,
  findPurchaseByPaymentIntent,
  grantPaidPurchase,
  insertPurchase,
  keepStripeCustomer,
  savePaymentMethod,
  setCheckoutSession,
} from '../../storage/purchases.ts';
import { addLookup, findLookup, type Shards, shardOfAccount } from '../../storage/shards.ts';
import { type AccountDesks, settleDesk } from './account-desk.ts';
import { applyDisputeEvent, type DisputeOutcome, refuseWhileDisputed } from './disputes.ts';
import type { PaymentsConfig } from './stripe-client.ts';

export interface PaymentDeps {
  db: Db;
  config: PaymentsConfig;
  stripe: Stripe;
  now: number;
  /**
   * The accounts' desks: a refund or a dispute takes credits back as far as the free credits hold
   * them, so the account's desk gives its unspent block back first (docs/money.md, "Where the
   * balance lives"). Absent where no desk can hold any (tests of the D1 path).
   */
  desks?: AccountDesks;
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

/**
 * The shard of the account a verified Stripe event is about (docs/architecture.md, "Sharding what
 * still grows"): its Checkout Session and PaymentIntents name the account in their metadata
 * (`startCheckout`, the balance watch's top-ups); a charge or a dispute names only its
 * PaymentIntent, which the directory finds once it paid (`addPaymentLookup`), or, for an event
 * that came before the payment's, Stripe's PaymentIntent names. Shard 0 for anything else.
 */
export async function stripeEventShard(shards: Shards, stripe: Stripe, event: Stripe.Event): Promise<number> {
  const object = event.data.object as {
    metadata?: Record<string, string> | null;
    payment_intent?: string | { id: string } | null;
  };
  const named = object.metadata?.account_id;
  if (named) return shardOfAccount(shards, named);
  const intent =
    typeof object.payment_intent === 'string' ? object.payment_intent : object.payment_intent?.id;
  if (!intent) return 0;
  const found = await findLookup(shards, 'payment_intent', intent);
  if (found) return found.shard;
  const accountId = (await stripe.paymentIntents.retrieve(intent)).metadata?.account_id;
  return accountId ? shardOfAccount(shards, accountId) : 0;
}

/** Lets the PaymentIntent that paid a purchase find its account, before the purchase is granted. */
async function addPaymentLookup(
  deps: PaymentDeps,
  accountId: string,
  paymentIntentId: string,
): Promise<void> {
  await addLookup(deps.db, {
    kind: 'payment_intent',
    value: paymentIntentId,
    accountId,
    createdAt: deps.now,
  });
}

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
  if (paymentIntentId) await addPaymentLookup(deps, purchase.accountId, paymentIntentId);
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

/**
 * An automatic top-up's PaymentIntent ended: its purchase granted or closed. Also how the balance
 * watch applies what Stripe says of a top-up whose webhook is slow or lost (balance-watch.ts).
 */
export async function topUpSettled(
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
    await addPaymentLookup(deps, purchase.accountId, intent.id);
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
  if (deps.desks) await settleDesk(deps.desks, purchase.accountId, { release: true });
  const moved = await applyRefund(deps.db, {
    purchaseId: purchase.id,
    amountRefunded: charge.amount_refunded,
    // Each refunded total of the charge moves once, whichever event carries it.
    reference: `${charge.id}:${charge.amount_refunded}`,
    now: deps.now,
  });
  return moved ? 'refunded' : 'already_applied';
}
