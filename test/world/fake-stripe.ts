// A fake Stripe for local runs and tests: a real HTTP server on 127.0.0.1 that answers the part
// of Stripe's API rcpt's edge calls through the official `stripe` library (pointed here with the
// library's host/port/protocol options), a hosted Checkout page a person or a test can pay on,
// and webhook deliveries signed with the library's own `webhooks.generateTestHeaderString`.
//
// It follows Stripe's documented behaviour (https://docs.stripe.com/api):
// - requests are form-encoded with bracketed keys (`line_items[0][price_data][currency]`), the
//   secret key is a Bearer token, and an unknown key answers 401 (`invalid_request_error`);
// - errors are `{ error: { type, code, message, … } }`; a declined card is 402 `card_error`
//   (https://docs.stripe.com/error-codes);
// - an `Idempotency-Key` returns the first answer again for the same parameters (with
//   `Idempotent-Replayed: true`) and 400 `idempotency_error` for others
//   (https://docs.stripe.com/api/idempotent_requests);
// - test cards (https://docs.stripe.com/testing#declined-payments): 4242 4242 4242 4242 pays;
//   4000 0000 0000 0002 is declined (`card_declined`); 4000 0000 0000 0341 attaches to a customer
//   but every later charge of it is declined — the card for a failing automatic top-up;
// - a Checkout Session in `payment` mode completes with `checkout.session.completed`; a
//   PaymentIntent confirmed off-session sends `payment_intent.succeeded` or
//   `payment_intent.payment_failed`; a refund sends `charge.refunded` with the charge's
//   cumulative `amount_refunded` (https://docs.stripe.com/api/events/types);
// - disputes (https://docs.stripe.com/testing#disputes): a charge of 4000 0000 0000 0259 succeeds
//   and is then disputed as fraudulent (`charge.dispute.created`, then
//   `charge.dispute.funds_withdrawn`), one of 4000 0000 0000 1976 opens an inquiry
//   (`warning_needs_response`, no funds withdrawn). Updating the dispute with the evidence text
//   `winning_evidence` or `losing_evidence` closes it won or lost, and closing it
//   (`POST /v1/disputes/:id/close`, accepting it) closes it lost, each with `charge.dispute.closed`
//   (https://docs.stripe.com/disputes/api#test-evidence). The Dispute object has Stripe's shape
//   (https://docs.stripe.com/api/disputes/object);
// - webhooks can be slow: `holdDeliveries` keeps events from the endpoint until released, as a
//   delivery Stripe retries hours later would arrive (https://docs.stripe.com/webhooks#retries).
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Stripe from 'stripe';
import { listenOnLoopback } from './loopback.ts';

type Params = Record<string, unknown>;
type StripeObject = Record<string, unknown> & { id: string };

export interface StripeEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  livemode: false;
  api_version: string;
  pending_webhooks: number;
  request: { id: null; idempotency_key: null };
  data: { object: StripeObject };
}

/** An event as Stripe posts it: the exact body and its `Stripe-Signature` header. */
export interface SignedDelivery {
  event: StripeEvent;
  payload: string;
  signature: string;
}

export interface FakeStripe {
  /** Base URL of the API and the hosted pages, `http://127.0.0.1:port`. */
  url: string;
  secretKey: string;
  webhookSecret: string;
  /** Where events are posted as they happen; null: kept only, for a test to deliver. */
  webhookUrl: string | null;
  /** Every event, oldest first. */
  readonly events: StripeEvent[];
  /** Statuses the webhook endpoint answered, by event id, in delivery order. */
  readonly deliveries: Map<string, number[]>;
  /** Pays an open Checkout Session as its hosted page does, and returns its events. */
  payCheckout(sessionId: string, card?: string): Promise<SignedDelivery[]>;
  /** Refunds (part of) a PaymentIntent's charge as the Dashboard would; returns the events. */
  refund(paymentIntentId: string, amount?: number): Promise<SignedDelivery[]>;
  /** The event signed now, as a delivery of it would be (a replay carries the same id). */
  sign(event: StripeEvent): Promise<SignedDelivery>;
  /** Posts the event to `webhookUrl` again, as Stripe's retries and the Dashboard's "Resend" do. */
  redeliver(eventId: string): Promise<number>;
  /**
   * A slow webhook: events of `types` (every type when omitted) happen (they are recorded, and
   * listed to tests) but are not posted until `release`, which posts them in order and returns
   * the endpoint's answers.
   */
  holdDeliveries(types?: readonly string[]): { release(): Promise<number[]> };
  close(): Promise<void>;
}

export const TEST_CARDS = {
  pays: '4242424242424242',
  declined: '4000000000000002',
  /** Attaches to a customer; every later charge of it is declined. */
  declinedAfterAttaching: '4000000000000341',
  /** Charges succeed, then each is disputed as fraudulent. */
  disputed: '4000000000000259',
  /** Charges succeed, then each gets an inquiry (a dispute that has not withdrawn funds yet). */
  inquiry: '4000000000001976',
} as const;

/** The edge's settings that point its Stripe library at this fake and turn purchases on. */
export function stripeEdgeVars(stripe: FakeStripe): Record<string, string> {
  return {
    STRIPE_API_URL: stripe.url,
    STRIPE_SECRET_KEY: stripe.secretKey,
    STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
  };
}

class StripeFailure extends Error {
  readonly status: number;
  readonly body: Record<string, unknown>;

  constructor(status: number, body: Record<string, unknown>) {
    super(String(body.message));
    this.status = status;
    this.body = body;
  }
}

function id(prefix: string): string {
  return `${prefix}_test_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
}

const seconds = () => Math.floor(Date.now() / 1000);

/** Decodes Stripe's form encoding (`a[b][0][c]=v`) into nested objects and arrays. */
export function decodeStripeForm(encoded: string): Params {
  const root: Params = {};
  for (const [key, value] of new URLSearchParams(encoded)) {
    const path = key.split(/\[|\]\[|\]/).filter((part) => part !== '');
    let node: Record<string, unknown> = root;
    path.forEach((part, index) => {
      const last = index === path.length - 1;
      if (last) node[part] = value;
      else {
        const nextIsIndex = /^\d+$/.test(path[index + 1] ?? '');
        node[part] ??= nextIsIndex ? [] : {};
        node = node[part] as Record<string, unknown>;
      }
    });
  }
  return root;
}

function invalid(message: string, param?: string): StripeFailure {
  return new StripeFailure(400, { type: 'invalid_request_error', message, ...(param ? { param } : {}) });
}

function required(params: Params, name: string): string {
  const value = params[name];
  if (typeof value !== 'string' || value === '') throw invalid(`Missing required param: ${name}.`, name);
  return value;
}

function integer(value: unknown, param: string): number {
  const number = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || !Number.isSafeInteger(number))
    throw invalid(`Invalid integer: ${String(value)}`, param);
  return number;
}

export async function startFakeStripe(
  options: { port?: number; webhookUrl?: string | null; secretKey?: string; webhookSecret?: string } = {},
): Promise<FakeStripe> {
  const secretKey = options.secretKey ?? `sk_test_${randomBytes(24).toString('base64url')}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString('base64url')}`;
  const customers = new Map<string, StripeObject>();
  const sessions = new Map<string, StripeObject>();
  const intents = new Map<string, StripeObject>();
  const charges = new Map<string, StripeObject>();
  const methods = new Map<string, StripeObject & { cardNumber: string }>();
  const disputes = new Map<string, StripeObject>();
  /** Deliveries held back by `holdDeliveries`: which types, and the events waiting. */
  const holds: { types: readonly string[] | null; waiting: StripeEvent[] }[] = [];
  const idempotent = new Map<string, { digest: string; status: number; body: string }>();
  const events: StripeEvent[] = [];
  const deliveries = new Map<string, number[]>();

  // Web Crypto, async: the same code signs under Node and wherever the library's worker build is
  // resolved (the edge tests' global setup runs with workerd's export conditions).
  const cryptoProvider = Stripe.createSubtleCryptoProvider(globalThis.crypto.subtle);
  const sign = async (event: StripeEvent): Promise<SignedDelivery> => {
    const payload = JSON.stringify(event, null, 2);
    const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
      payload,
      secret: webhookSecret,
      cryptoProvider,
    });
    return { event, payload, signature };
  };

  const deliver = async (event: StripeEvent): Promise<number | null> => {
    if (!fake.webhookUrl) return null;
    const hold = holds.find((candidate) => candidate.types === null || candidate.types.includes(event.type));
    if (hold) {
      hold.waiting.push(event);
      return null;
    }
    const { payload, signature } = await sign(event);
    const response = await fetch(fake.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature },
      body: payload,
    });
    await response.arrayBuffer();
    deliveries.set(event.id, [...(deliveries.get(event.id) ?? []), response.status]);
    return response.status;
  };

  /** Records an event and posts it; resolves once the endpoint answered (or at once without one). */
  const emit = async (type: string, object: StripeObject): Promise<SignedDelivery> => {
    const event: StripeEvent = {
      id: id('evt'),
      object: 'event',
      type,
      created: seconds(),
      livemode: false,
      api_version: Stripe.API_VERSION,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: structuredClone(object) },
    };
    events.push(event);
    await deliver(event);
    return sign(event);
  };

  const paymentMethodFor = (card: string, customer: string | null) => {
    const digits = card.replace(/\s+/g, '');
    if (!/^\d{15,16}$/.test(digits))
      throw new StripeFailure(402, cardError('incorrect_number', 'Your card number is incorrect.'));
    const method = {
      id: id('pm'),
      object: 'payment_method',
      type: 'card',
      card: { brand: 'visa', last4: digits.slice(-4), exp_month: 12, exp_year: new Date().getFullYear() + 3 },
      customer,
      cardNumber: digits,
    };
    methods.set(method.id, method);
    return method;
  };

  /** A charge of `amount` on a payment method; declined cards throw a 402 card_error. */
  const charge = (
    intent: StripeObject,
    method: StripeObject & { cardNumber: string },
    attaching: boolean,
  ): StripeObject => {
    const declined =
      method.cardNumber === TEST_CARDS.declined ||
      (!attaching && method.cardNumber === TEST_CARDS.declinedAfterAttaching);
    if (declined) {
      intent.status = 'requires_payment_method';
      intent.last_payment_error = cardError('card_declined', 'Your card was declined.');
      throw new StripeFailure(402, {
        ...cardError('card_declined', 'Your card was declined.'),
        payment_intent: intent,
      });
    }
    const made = {
      id: id('ch'),
      object: 'charge',
      amount: intent.amount,
      amount_refunded: 0,
      refunded: false,
      currency: intent.currency,
      customer: intent.customer,
      payment_intent: intent.id,
      payment_method: method.id,
      paid: true,
      status: 'succeeded',
      created: seconds(),
      livemode: false,
    };
    charges.set(made.id, made);
    intent.status = 'succeeded';
    intent.latest_charge = made.id;
    intent.payment_method = method.id;
    return made;
  };

  /** The dispute a test card's charge gets once paid (none for other cards): its events, in order. */
  const disputeIfTestCard = async (intent: StripeObject): Promise<SignedDelivery[]> => {
    const paid = typeof intent.latest_charge === 'string' ? charges.get(intent.latest_charge) : undefined;
    const method = typeof intent.payment_method === 'string' ? methods.get(intent.payment_method) : undefined;
    const inquiry = method?.cardNumber === TEST_CARDS.inquiry;
    if (!paid || !method || (method.cardNumber !== TEST_CARDS.disputed && !inquiry)) return [];
    const dispute: StripeObject = {
      id: id('du'),
      object: 'dispute',
      amount: paid.amount,
      balance_transactions: [],
      charge: paid.id,
      created: seconds(),
      currency: paid.currency,
      evidence: Object.fromEntries(DISPUTE_EVIDENCE_FIELDS.map((field) => [field, null])),
      evidence_details: {
        due_by: seconds() + 7 * 86_400,
        has_evidence: false,
        past_due: false,
        submission_count: 0,
      },
      is_charge_refundable: inquiry,
      livemode: false,
      metadata: {},
      payment_intent: intent.id,
      reason: inquiry ? 'general' : 'fraudulent',
      status: inquiry ? 'warning_needs_response' : 'needs_response',
    };
    disputes.set(dispute.id, dispute);
    paid.disputed = true;
    const sent = [await emit('charge.dispute.created', dispute)];
    if (!inquiry) sent.push(await emit('charge.dispute.funds_withdrawn', dispute));
    return sent;
  };

  /** Closes a dispute `won` or `lost` (an inquiry closes `warning_closed` unless lost); its events. */
  const closeDisputeAs = async (dispute: StripeObject, outcome: 'won' | 'lost'): Promise<void> => {
    const inquiry = String(dispute.status).startsWith('warning_');
    dispute.status = outcome === 'won' && inquiry ? 'warning_closed' : outcome;
    await emit('charge.dispute.closed', dispute);
    if (outcome === 'won' && !inquiry) await emit('charge.dispute.funds_reinstated', dispute);
  };

  const expandable = (object: StripeObject, expand: unknown): StripeObject => {
    const copy = structuredClone(object);
    const paths = Array.isArray(expand) ? expand : [];
    // Expanding a nested field expands its parents (https://docs.stripe.com/expand).
    const expandsIntent = paths.some(
      (path) => path === 'payment_intent' || String(path).startsWith('payment_intent.'),
    );
    if (expandsIntent && typeof copy.payment_intent === 'string')
      copy.payment_intent = structuredClone(intents.get(copy.payment_intent) ?? null);
    if (paths.includes('payment_method') && typeof copy.payment_method === 'string') {
      const method = methods.get(copy.payment_method);
      copy.payment_method = method ? publicMethod(method) : null;
    }
    if (paths.includes('payment_intent.payment_method')) {
      const intent = copy.payment_intent as StripeObject | null;
      if (intent && typeof intent.payment_method === 'string') {
        const method = methods.get(intent.payment_method);
        intent.payment_method = method ? publicMethod(method) : null;
      }
    }
    return copy;
  };

  const payCheckout = async (
    sessionId: string,
    card: string = TEST_CARDS.pays,
  ): Promise<SignedDelivery[]> => {
    const session = sessions.get(sessionId);
    if (!session) throw invalid(`No such checkout.session: '${sessionId}'`);
    if (session.status !== 'open') throw invalid('This Checkout Session is no longer open.');
    const intentData = (session.payment_intent_data ?? {}) as Params;
    const saves = intentData.setup_future_usage === 'off_session';
    const customer = typeof session.customer === 'string' ? session.customer : null;
    const method = paymentMethodFor(card, saves ? customer : null);
    const intent: StripeObject = {
      id: id('pi'),
      object: 'payment_intent',
      amount: session.amount_total,
      currency: session.currency,
      customer,
      metadata: (intentData.metadata as Params | undefined) ?? {},
      setup_future_usage: saves ? 'off_session' : null,
      description: null,
      status: 'requires_confirmation',
      created: seconds(),
      livemode: false,
    };
    intents.set(intent.id, intent);
    // A declined card stays on the hosted page with its message: the session remains open.
    charge(intent, method, true);
    Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: intent.id });
    const sent = [await emit('payment_intent.succeeded', intent)];
    sent.push(await emit('checkout.session.completed', publicSession(session)));
    sent.push(...(await disputeIfTestCard(intent)));
    return sent;
  };

  /** Refunds `amount` (default: what is left) of the PaymentIntent's charge; `charge.refunded` follows. */
  const refundIntent = async (
    paymentIntentId: string,
    amount?: number,
  ): Promise<[StripeObject, SignedDelivery]> => {
    const intent = intents.get(paymentIntentId);
    const paid =
      intent && typeof intent.latest_charge === 'string' ? charges.get(intent.latest_charge) : undefined;
    if (!intent || !paid) throw invalid(`No such payment_intent: '${paymentIntentId}'`, 'payment_intent');
    const left = Number(paid.amount) - Number(paid.amount_refunded);
    const refunding = amount ?? left;
    if (refunding <= 0 || refunding > left)
      throw invalid(
        `Refund amount (${refunding}) is greater than unrefunded amount on charge (${left})`,
        'amount',
      );
    paid.amount_refunded = Number(paid.amount_refunded) + refunding;
    paid.refunded = paid.amount_refunded === paid.amount;
    const made = {
      id: id('re'),
      object: 'refund',
      amount: refunding,
      charge: paid.id,
      payment_intent: intent.id,
      currency: paid.currency,
      status: 'succeeded',
      created: seconds(),
    };
    return [made, await emit('charge.refunded', paid)];
  };
  const refund = async (paymentIntentId: string, amount?: number) => [
    (await refundIntent(paymentIntentId, amount))[1],
  ];

  const api = async (
    method: string,
    path: string,
    params: Params,
  ): Promise<[number, unknown, (() => Promise<unknown>)?]> => {
    const route = `${method} ${path.replace(/\/(cus|cs|pi|pm|ch|du)_test_[A-Za-z0-9]+/, '/:id')}`;
    const objectId = /\/((?:cus|cs|pi|pm|ch|du)_test_[A-Za-z0-9]+)/.exec(path)?.[1] ?? '';
    switch (route) {
      case 'POST /v1/customers': {
        const customer = {
          id: id('cus'),
          object: 'customer',
          email: (params.email as string | undefined) ?? null,
          metadata: (params.metadata as Params | undefined) ?? {},
          created: seconds(),
          livemode: false,
        };
        customers.set(customer.id, customer);
        return [200, customer];
      }
      case 'POST /v1/checkout/sessions': {
        if (required(params, 'mode') !== 'payment')
          throw invalid('Only `payment` mode is supported here.', 'mode');
        const successUrl = required(params, 'success_url');
        const items = params.line_items;
        if (!Array.isArray(items) || items.length === 0)
          throw invalid('Missing required param: line_items.', 'line_items');
        let total = 0;
        let currency = '';
        for (const [index, item] of (items as Params[]).entries()) {
          const priceData = item.price_data as Params | undefined;
          if (!priceData)
            throw invalid('Each line item needs price_data here.', `line_items[${index}][price_data]`);
          currency = required(priceData, 'currency');
          const product = priceData.product_data as Params | undefined;
          if (!product || typeof product.name !== 'string')
            throw invalid(
              'Missing product_data[name].',
              `line_items[${index}][price_data][product_data][name]`,
            );
          total += integer(priceData.unit_amount, 'unit_amount') * integer(item.quantity ?? '1', 'quantity');
        }
        const customer = typeof params.customer === 'string' ? params.customer : null;
        if (customer && !customers.has(customer))
          throw invalid(`No such customer: '${customer}'`, 'customer');
        const session: StripeObject = {
          id: id('cs'),
          object: 'checkout.session',
          mode: 'payment',
          status: 'open',
          payment_status: 'unpaid',
          amount_total: total,
          amount_subtotal: total,
          currency,
          customer,
          client_reference_id: (params.client_reference_id as string | undefined) ?? null,
          metadata: (params.metadata as Params | undefined) ?? {},
          payment_intent_data: params.payment_intent_data ?? null,
          success_url: successUrl,
          cancel_url: (params.cancel_url as string | undefined) ?? null,
          payment_intent: null,
          created: seconds(),
          expires_at: seconds() + 86_400,
          livemode: false,
        };
        session.url = `${fake.url}/checkout/${session.id}`;
        sessions.set(session.id, session);
        return [200, publicSession(session)];
      }
      case 'GET /v1/checkout/sessions/:id': {
        const session = sessions.get(objectId);
        if (!session) throw invalid(`No such checkout.session: '${objectId}'`, 'id');
        return [200, expandable(publicSession(session), params.expand)];
      }
      case 'GET /v1/payment_methods/:id': {
        const found = methods.get(objectId);
        if (!found) throw invalid(`No such PaymentMethod: '${objectId}'`, 'id');
        return [200, publicMethod(found)];
      }
      case 'GET /v1/payment_intents/:id': {
        const intent = intents.get(objectId);
        if (!intent) throw invalid(`No such payment_intent: '${objectId}'`, 'id');
        return [200, expandable(intent, params.expand)];
      }
      case 'POST /v1/payment_intents': {
        const amount = integer(params.amount, 'amount');
        const customer = required(params, 'customer');
        const methodId = required(params, 'payment_method');
        const found = methods.get(methodId);
        if (!found || found.customer !== customer)
          throw invalid(
            `The PaymentMethod ${methodId} does not belong to the Customer ${customer}.`,
            'payment_method',
          );
        if (params.confirm !== 'true' || params.off_session !== 'true')
          throw invalid(
            'This fake charges saved cards only with confirm=true and off_session=true.',
            'confirm',
          );
        const intent: StripeObject = {
          id: id('pi'),
          object: 'payment_intent',
          amount,
          currency: required(params, 'currency'),
          customer,
          metadata: (params.metadata as Params | undefined) ?? {},
          description: (params.description as string | undefined) ?? null,
          status: 'requires_confirmation',
          created: seconds(),
          livemode: false,
        };
        intents.set(intent.id, intent);
        try {
          charge(intent, found, false);
        } catch (error) {
          // The failure event follows the answer, as Stripe's webhooks do.
          return [
            402,
            { error: (error as StripeFailure).body },
            () => emit('payment_intent.payment_failed', intent),
          ];
        }
        return [
          200,
          intent,
          async () => {
            await emit('payment_intent.succeeded', intent);
            await disputeIfTestCard(intent);
          },
        ];
      }
      case 'GET /v1/payment_intents': {
        // https://docs.stripe.com/api/payment_intents/list: newest first, filtered by customer.
        const customer = typeof params.customer === 'string' ? params.customer : null;
        const limit = params.limit === undefined ? 10 : integer(params.limit, 'limit');
        const listed = [...intents.values()]
          .filter((intent) => customer === null || intent.customer === customer)
          .reverse();
        return [
          200,
          {
            object: 'list',
            url: '/v1/payment_intents',
            has_more: listed.length > limit,
            data: listed.slice(0, limit),
          },
        ];
      }
      case 'GET /v1/disputes/:id': {
        const dispute = disputes.get(objectId);
        if (!dispute) throw invalid(`No such dispute: '${objectId}'`, 'id');
        return [200, dispute];
      }
      case 'POST /v1/disputes/:id': {
        const dispute = disputes.get(objectId);
        if (!dispute) throw invalid(`No such dispute: '${objectId}'`, 'id');
        if (!['needs_response', 'warning_needs_response'].includes(String(dispute.status)))
          throw invalid('This dispute is already closed or under review.');
        const evidence = (params.evidence ?? {}) as Params;
        Object.assign(dispute.evidence as Params, evidence);
        const text = evidence.uncategorized_text;
        const evidenceDetails = dispute.evidence_details as Params;
        evidenceDetails.has_evidence = true;
        evidenceDetails.submission_count = Number(evidenceDetails.submission_count) + 1;
        const outcome = text === 'winning_evidence' ? 'won' : text === 'losing_evidence' ? 'lost' : null;
        if (outcome === null) {
          await emit('charge.dispute.updated', dispute);
          return [200, dispute];
        }
        return [200, dispute, () => closeDisputeAs(dispute, outcome)];
      }
      case 'POST /v1/disputes/:id/close': {
        const dispute = disputes.get(objectId);
        if (!dispute) throw invalid(`No such dispute: '${objectId}'`, 'id');
        if (['won', 'lost', 'warning_closed'].includes(String(dispute.status)))
          throw invalid('This dispute is already closed.');
        // Closing a dispute accepts it: it is lost (https://docs.stripe.com/api/disputes/close).
        await closeDisputeAs(dispute, 'lost');
        return [200, dispute];
      }
      case 'POST /v1/refunds': {
        const amount = params.amount === undefined ? undefined : integer(params.amount, 'amount');
        const [made] = await refundIntent(required(params, 'payment_intent'), amount);
        return [200, made];
      }
      default:
        throw new StripeFailure(404, {
          type: 'invalid_request_error',
          message: `Unrecognized request URL (${method}: ${path}).`,
        });
    }
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', fake.url);
    const body = await readBody(request);
    const hosted = /^\/checkout\/(cs_test_[A-Za-z0-9]+)$/.exec(url.pathname);
    if (hosted?.[1]) return hostedCheckout(hosted[1], request.method ?? 'GET', body, response);
    if (request.headers.authorization !== `Bearer ${secretKey}`) {
      return sendJson(response, 401, {
        error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' },
      });
    }
    if (url.pathname === '/__fake/events' && request.method === 'GET') {
      // Not Stripe's API: how a test outside this process (the Worker's tests in workerd) reads
      // the events about one object, each signed now as its delivery would be.
      const related = url.searchParams.get('related') ?? '';
      return sendJson(
        response,
        200,
        await Promise.all(events.filter((event) => isAbout(event, related)).map(sign)),
      );
    }
    const params = request.method === 'GET' ? decodeStripeForm(url.search.slice(1)) : decodeStripeForm(body);
    const key = request.method === 'POST' ? request.headers['idempotency-key'] : undefined;
    if (typeof key === 'string') {
      const digest = createHash('sha256').update(`${url.pathname}\n${body}`).digest('hex');
      const kept = idempotent.get(key);
      if (kept) {
        if (kept.digest !== digest) {
          return sendJson(response, 400, {
            error: {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
            },
          });
        }
        response.writeHead(kept.status, {
          'content-type': 'application/json',
          'idempotent-replayed': 'true',
        });
        response.end(kept.body);
        return;
      }
    }
    let status: number;
    let answer: unknown;
    let after: (() => Promise<unknown>) | undefined;
    try {
      [status, answer, after] = await api(request.method ?? 'GET', url.pathname, params);
    } catch (error) {
      if (!(error instanceof StripeFailure)) throw error;
      [status, answer] = [error.status, { error: error.body }];
    }
    const text = JSON.stringify(answer);
    if (typeof key === 'string' && status !== 500) {
      idempotent.set(key, {
        digest: createHash('sha256').update(`${url.pathname}\n${body}`).digest('hex'),
        status,
        body: text,
      });
    }
    response.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
    response.end(text);
    if (after) await after();
  };

  /** The hosted payment page: GET shows the amount and a card field; POST pays and goes back. */
  const hostedCheckout = async (
    sessionId: string,
    method: string,
    body: string,
    response: ServerResponse,
  ) => {
    const session = sessions.get(sessionId);
    if (!session)
      return sendHtml(response, 404, page('Not found', '<p>This checkout link is not valid.</p>'));
    let problem = '';
    if (method === 'POST' && session.status === 'open') {
      const card = new URLSearchParams(body).get('card') ?? '';
      try {
        await payCheckout(sessionId, card);
      } catch (error) {
        if (!(error instanceof StripeFailure)) throw error;
        problem = String(error.body.message);
      }
      if (!problem) {
        response.writeHead(303, {
          location: String(session.success_url).replace('{CHECKOUT_SESSION_ID}', sessionId),
        });
        response.end();
        return;
      }
    }
    const amount = `${(Number(session.amount_total) / 100).toFixed(2)} ${String(session.currency).toUpperCase()}`;
    const form =
      session.status === 'open'
        ? `<form method="post"><label for="card">Card number</label>
           <input id="card" name="card" inputmode="numeric" autocomplete="cc-number" value="${TEST_CARDS.pays}">
           <button type="submit">Pay ${amount}</button></form>
           ${session.cancel_url ? `<p><a href="${escapeHtml(String(session.cancel_url))}">Back</a></p>` : ''}`
        : '<p>This session is complete.</p>';
    return sendHtml(
      response,
      problem ? 402 : 200,
      page(
        'Pay',
        `<h1>Pay ${amount}</h1>${problem ? `<p role="alert">${escapeHtml(problem)}</p>` : ''}${form}`,
      ),
    );
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent)
        sendJson(response, 500, { error: { type: 'api_error', message: String(error) } });
      else response.destroy();
    });
  });
  const port = await listenOnLoopback(server, '127.0.0.1', options.port ?? 0);
  const fake: FakeStripe = {
    url: `http://127.0.0.1:${port}`,
    secretKey,
    webhookSecret,
    webhookUrl: options.webhookUrl ?? null,
    events,
    deliveries,
    payCheckout,
    refund,
    sign,
    holdDeliveries(types) {
      const hold = { types: types ?? null, waiting: [] as StripeEvent[] };
      holds.push(hold);
      return {
        async release() {
          holds.splice(holds.indexOf(hold), 1);
          const statuses: number[] = [];
          for (const event of hold.waiting.splice(0)) {
            const status = await deliver(event);
            if (status !== null) statuses.push(status);
          }
          return statuses;
        },
      };
    },
    async redeliver(eventId) {
      const event = events.find((candidate) => candidate.id === eventId);
      if (!event) throw new Error(`no event ${eventId}`);
      const status = await deliver(event);
      if (status === null) throw new Error('the fake Stripe has no webhook URL to deliver to');
      return status;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

/** Whether the event is about `objectId`: the object itself, its PaymentIntent, or its purchase. */
function isAbout(event: StripeEvent, objectId: string): boolean {
  const object = event.data.object;
  const metadata = (object.metadata ?? {}) as Record<string, unknown>;
  return (
    objectId !== '' &&
    (object.id === objectId ||
      object.payment_intent === objectId ||
      object.client_reference_id === objectId ||
      metadata.purchase_id === objectId)
  );
}

/** The evidence fields of a Dispute object (https://docs.stripe.com/api/disputes/object#dispute_object-evidence). */
const DISPUTE_EVIDENCE_FIELDS = [
  'access_activity_log',
  'billing_address',
  'cancellation_policy',
  'cancellation_policy_disclosure',
  'cancellation_rebuttal',
  'customer_communication',
  'customer_email_address',
  'customer_name',
  'customer_purchase_ip',
  'customer_signature',
  'duplicate_charge_documentation',
  'duplicate_charge_explanation',
  'duplicate_charge_id',
  'product_description',
  'receipt',
  'refund_policy',
  'refund_policy_disclosure',
  'refund_refusal_explanation',
  'service_date',
  'service_documentation',
  'shipping_address',
  'shipping_carrier',
  'shipping_date',
  'shipping_documentation',
  'shipping_tracking_number',
  'uncategorized_file',
  'uncategorized_text',
] as const;

function cardError(code: string, message: string): Record<string, unknown> {
  return {
    type: 'card_error',
    code,
    decline_code: code === 'card_declined' ? 'generic_decline' : undefined,
    message,
  };
}

function publicSession(session: StripeObject): StripeObject {
  const { payment_intent_data: _omitted, ...visible } = session;
  return visible as StripeObject;
}

function publicMethod(method: StripeObject & { cardNumber: string }): StripeObject {
  const { cardNumber: _secret, ...visible } = method;
  return visible as StripeObject;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function sendHtml(response: ServerResponse, status: number, html: string): void {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  response.end(html);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

// The page names its icon, as Stripe's hosted page does: the browser then asks this origin for
// no /favicon.ico, which the fake API would answer 401 like any request without a key.
function page(title: string, body: string): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${title} · fake Stripe Checkout</title></head><body><main>${body}</main></body></html>`;
}
