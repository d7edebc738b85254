// The Stripe client of a deployment (docs/operations.md, "Payments"): the official `stripe`
// library with its fetch HTTP client, as Workers have no Node http module
// (https://github.com/stripe/stripe-node#usage-with-cloudflare-workers-and-other-non-node-environments).
// STRIPE_API_URL points it elsewhere (the fake Stripe of local runs and tests) through the
// library's host, port and protocol options.
import Stripe from 'stripe';
import type { Config } from '../../config.ts';

/** What buying credits needs from the deployment's config. */
export type PaymentsConfig = Pick<
  Config,
  'STRIPE_SECRET_KEY' | 'STRIPE_WEBHOOK_SECRET' | 'STRIPE_API_URL' | 'CREDIT_PACKS' | 'CREDIT_CURRENCY'
>;

/** Purchases are on when both Stripe secrets are set; half of them is a deploy-check finding. */
export function purchasesEnabled(config: PaymentsConfig): boolean {
  return Boolean(config.STRIPE_SECRET_KEY && config.STRIPE_WEBHOOK_SECRET);
}

const clients = new WeakMap<PaymentsConfig, Stripe>();

/** The deployment's Stripe client, made once per parsed config; null while purchases are off. */
export function stripeClientOf(config: PaymentsConfig): Stripe | null {
  if (!purchasesEnabled(config) || !config.STRIPE_SECRET_KEY) return null;
  let client = clients.get(config);
  if (!client) {
    const target = config.STRIPE_API_URL ? new URL(config.STRIPE_API_URL) : null;
    client = new Stripe(config.STRIPE_SECRET_KEY, {
      httpClient: Stripe.createFetchHttpClient(),
      // The library retries network failures with the same Idempotency-Key (its default is 1).
      maxNetworkRetries: 2,
      timeout: 20_000,
      telemetry: false,
      ...(target
        ? {
            host: target.hostname,
            port: target.port || (target.protocol === 'https:' ? 443 : 80),
            protocol: target.protocol === 'https:' ? 'https' : 'http',
          }
        : {}),
    });
    clients.set(config, client);
  }
  return client;
}

/** Web Crypto for the webhook signature: Workers have no Node crypto HMAC in the library's sync path. */
export const webhookCryptoProvider = Stripe.createSubtleCryptoProvider();

/** Where Stripe's hosted Checkout pages are: the fake Stripe's own origin when STRIPE_API_URL points at it. */
export function checkoutOrigin(config: PaymentsConfig): string {
  return config.STRIPE_API_URL ? new URL(config.STRIPE_API_URL).origin : 'https://checkout.stripe.com';
}
