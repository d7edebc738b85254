// Disputes (chargebacks) of purchases (docs/money.md, "Disputes"). A cardholder who disputes a
// payment with their bank takes its money back while the dispute runs; rcpt takes back the
// credits it bought as far as the balance still holds them and admits no paid work for the
// account until the dispute closes: won, the credits come back; lost, what was already spent
// becomes a debt that the next purchases settle first.
// Stripe's events: https://docs.stripe.com/api/events/types#event_types-charge.dispute.created,
// the Dispute object: https://docs.stripe.com/api/disputes/object.
import { ApiError } from '@rcpt/shared/errors';
import type Stripe from 'stripe';
import { log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import { hasOpenDispute, openDispute, settleDispute } from '../../storage/disputes.ts';
import { findPurchase, findPurchaseByPaymentIntent, type Purchase } from '../../storage/purchases.ts';
import { type AccountDesks, settleDesk } from './account-desk.ts';

/** What a dispute event did: `deferred` asks Stripe to deliver it again later. */
export type DisputeOutcome =
  | 'dispute_opened'
  | 'dispute_won'
  | 'dispute_lost'
  | 'already_applied'
  | 'ignored'
  | 'deferred';

/**
 * How a closed dispute ends for the account. `won`, and an inquiry that closed without becoming a
 * chargeback (`warning_closed`) or one Stripe's prevention tools stopped (`prevented`), give the
 * credits back; `lost` keeps them. Any other status is not a closing one.
 */
export function closedOutcome(status: Stripe.Dispute.Status): 'won' | 'lost' | null {
  if (status === 'won' || status === 'warning_closed' || status === 'prevented') return 'won';
  if (status === 'lost') return 'lost';
  return null;
}

/**
 * Applies `charge.dispute.created` or `charge.dispute.closed`. Safe to apply any number of times
 * and in any order: a `closed` whose `created` was never applied opens the dispute first.
 */
export async function applyDisputeEvent(
  deps: { db: Db; stripe: Stripe; now: number; desks?: AccountDesks },
  dispute: Stripe.Dispute,
  closed: boolean,
): Promise<DisputeOutcome> {
  const { db, now } = deps;
  const purchase = await disputedPurchase(deps, dispute);
  if (!purchase) {
    log.warn('stripe dispute of no known purchase', { dispute: dispute.id });
    return 'ignored';
  }
  if (purchase.status === 'pending') {
    // The payment's own event has not been applied yet (webhooks come in any order): answering
    // with an error makes Stripe deliver this one again later, after it.
    log.warn('stripe dispute before its payment was recorded', {
      dispute: dispute.id,
      purchase: purchase.id,
    });
    return 'deferred';
  }
  if (
    purchase.status !== 'paid' &&
    purchase.status !== 'partially_refunded' &&
    purchase.status !== 'refunded'
  )
    return 'ignored';
  // The hold takes what the free credits hold, and the desk must charge no more from its block.
  if (deps.desks) await settleDesk(deps.desks, purchase.accountId, { release: true });
  const opened = await openDispute(db, {
    id: dispute.id,
    purchaseId: purchase.id,
    amount: dispute.amount,
    now,
  });
  if (!closed) return opened ? 'dispute_opened' : 'already_applied';
  const outcome = closedOutcome(dispute.status);
  if (!outcome) return 'ignored';
  const settled = await settleDispute(db, { id: dispute.id, outcome, now });
  if (!settled) return 'already_applied';
  return outcome === 'won' ? 'dispute_won' : 'dispute_lost';
}

/**
 * The purchase a dispute is about: by its PaymentIntent, or, while the payment's own event has not
 * been applied (it records the PaymentIntent), by the purchase id the PaymentIntent carries.
 */
async function disputedPurchase(
  deps: { db: Db; stripe: Stripe },
  dispute: Stripe.Dispute,
): Promise<Purchase | null> {
  const paymentIntentId =
    typeof dispute.payment_intent === 'string' ? dispute.payment_intent : dispute.payment_intent?.id;
  if (!paymentIntentId) return null;
  const known = await findPurchaseByPaymentIntent(deps.db, paymentIntentId);
  if (known) return known;
  const intent = await deps.stripe.paymentIntents.retrieve(paymentIntentId);
  const purchaseId = intent.metadata?.purchase_id;
  return purchaseId ? findPurchase(deps.db, purchaseId) : null;
}

/** 403 PAYMENT_DISPUTED when a dispute of the account's payments is open (no new payment meanwhile). */
export async function refuseWhileDisputed(db: Db, accountId: string): Promise<void> {
  if (await hasOpenDispute(db, accountId)) throw new ApiError('PAYMENT_DISPUTED');
}
