// POST /stripe/webhook: the events of Stripe that move credits (docs/money.md, "Buying credits").
// Public, outside the API (Stripe authenticates with the `Stripe-Signature` header, checked by
// the library over the raw body with Web Crypto, https://docs.stripe.com/webhooks#verify-events),
// and not in the OpenAPI document: nobody but Stripe calls it. A 2xx tells Stripe to stop
// retrying; an error answer makes it deliver the event again later, which changes nothing twice.
import type { OpenAPIHono } from '@hono/zod-openapi';
import { ApiError } from '@rcpt/shared/errors';
import Stripe from 'stripe';
import type { AppEnv } from '../app-env.ts';
import { log } from '../logger.ts';
import { readBoundedBody } from '../middleware/json-body.ts';
import { enterAccountShard } from '../middleware/services.ts';
import { applyStripeEvent, stripeEventShard } from '../services/money/purchases.ts';
import { stripeClientOf, webhookCryptoProvider } from '../services/money/stripe-client.ts';

export const STRIPE_WEBHOOK_PATH = '/stripe/webhook';

/** Stripe's events are a few kilobytes; anything far larger is not one. */
export const MAX_EVENT_BYTES = 256 * 1024;

const utf8 = new TextDecoder();

export function registerStripeWebhook(app: OpenAPIHono<AppEnv>): void {
  app.post(STRIPE_WEBHOOK_PATH, async (c) => {
    const config = c.get('config');
    const stripe = stripeClientOf(config);
    if (!stripe || !config.STRIPE_WEBHOOK_SECRET) {
      throw new ApiError('SERVICE_UNAVAILABLE', { message: 'Purchases are off on this deployment.' });
    }
    const signature = c.req.header('stripe-signature');
    // The signature covers the exact bytes Stripe sent: read them before anything parses them,
    // and stop reading at the limit whatever Content-Length says (a chunked body has none).
    const payload = await readBoundedBody(c.req.raw, MAX_EVENT_BYTES, (bytes) => utf8.decode(bytes));
    if (!signature) throw new ApiError('WEBHOOK_SIGNATURE_INVALID');
    let event: Stripe.Event;
    try {
      event = await stripe.webhooks.constructEventAsync(
        payload,
        signature,
        config.STRIPE_WEBHOOK_SECRET,
        undefined,
        webhookCryptoProvider,
      );
    } catch (error) {
      if (error instanceof Stripe.errors.StripeSignatureVerificationError)
        throw new ApiError('WEBHOOK_SIGNATURE_INVALID');
      throw error;
    }
    enterAccountShard(c, await stripeEventShard(c.get('shards'), stripe, event));
    const outcome = await applyStripeEvent(
      { db: c.get('db'), config, stripe, now: Date.now(), desks: c.get('services').desks },
      event,
    );
    log.info('stripe event', { event: event.id, type: event.type, outcome });
    if (outcome === 'deferred') {
      // An error answer: Stripe delivers the event again later (https://docs.stripe.com/webhooks#retries).
      throw new ApiError('SERVICE_UNAVAILABLE', {
        message: 'The payment this event is about is not recorded yet; deliver the event again later.',
      });
    }
    return c.json({ received: true, outcome });
  });
}
