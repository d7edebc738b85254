// The fake Stripe as the official library sees it: the calls rcpt makes succeed or fail as
// Stripe documents, and its webhooks verify with the library's own signature check.
import { createServer } from 'node:http';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { until } from '../eventually.ts';
import { type FakeStripe, startFakeStripe, TEST_CARDS } from './fake-stripe.ts';
import { listenOnLoopback } from './loopback.ts';

let fake: FakeStripe;
let stripe: Stripe;
const received: Stripe.Event[] = [];
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    try {
      received.push(
        stripe.webhooks.constructEvent(
          Buffer.concat(chunks).toString('utf8'),
          String(request.headers['stripe-signature']),
          fake.webhookSecret,
        ),
      );
      response.writeHead(200).end('{}');
    } catch {
      response.writeHead(400).end('{}');
    }
  });
});

beforeAll(async () => {
  const port = await listenOnLoopback(receiver, '127.0.0.1', 0);
  fake = await startFakeStripe({ webhookUrl: `http://127.0.0.1:${port}/` });
  const url = new URL(fake.url);
  stripe = new Stripe(fake.secretKey, {
    host: url.hostname,
    port: url.port,
    protocol: 'http',
    maxNetworkRetries: 0,
  });
});

afterAll(async () => {
  await fake.close();
  await new Promise((resolve) => receiver.close(resolve));
});

async function openSession(saveCard: boolean) {
  const customer = await stripe.customers.create({ email: 'buyer@example.test' });
  return stripe.checkout.sessions.create({
    mode: 'payment',
    customer: customer.id,
    client_reference_id: 'purchase-1',
    line_items: [
      {
        quantity: 1,
        price_data: { currency: 'usd', unit_amount: 900, product_data: { name: '1,000 credits' } },
      },
    ],
    ...(saveCard ? { payment_intent_data: { setup_future_usage: 'off_session' } } : {}),
    success_url: 'http://127.0.0.1/credits?checkout=paid',
  });
}

describe('fake Stripe', () => {
  test('refuses a wrong secret key with 401, as Stripe does', async () => {
    const url = new URL(fake.url);
    const stranger = new Stripe('sk_test_wrong', { host: url.hostname, port: url.port, protocol: 'http' });
    await expect(stranger.customers.create({})).rejects.toMatchObject({ statusCode: 401 });
  });

  test('a paid hosted Checkout completes the session and posts a signed checkout.session.completed', async () => {
    const session = await openSession(false);
    expect(session.url).toBe(`${fake.url}/checkout/${session.id}`);
    const page = await fetch(session.url as string);
    expect(await page.text()).toContain('Pay 9.00 USD');
    const paid = await fetch(session.url as string, {
      method: 'POST',
      body: new URLSearchParams({ card: TEST_CARDS.pays }),
      redirect: 'manual',
    });
    expect(paid.status).toBe(303);
    expect(paid.headers.get('location')).toBe('http://127.0.0.1/credits?checkout=paid');
    const completed = received.find(
      (event) => event.type === 'checkout.session.completed' && event.data.object.id === session.id,
    );
    expect(completed?.data.object).toMatchObject({
      payment_status: 'paid',
      amount_total: 900,
      currency: 'usd',
    });
    const again = await stripe.checkout.sessions.retrieve(session.id, { expand: ['payment_intent'] });
    expect(again.status).toBe('complete');
    expect(typeof again.payment_intent === 'object' && again.payment_intent?.status).toBe('succeeded');
  });

  test('a declined card stays on the hosted page with the decline, and the session stays open', async () => {
    const session = await openSession(false);
    const declined = await fetch(session.url as string, {
      method: 'POST',
      body: new URLSearchParams({ card: TEST_CARDS.declined }),
      redirect: 'manual',
    });
    expect(declined.status).toBe(402);
    expect(await declined.text()).toContain('Your card was declined.');
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe('open');
  });

  test('a saved card is charged off-session once per Idempotency-Key; the 0341 card is declined later', async () => {
    for (const [card, declined] of [
      [TEST_CARDS.pays, false],
      [TEST_CARDS.declinedAfterAttaching, true],
    ] as const) {
      const session = await openSession(true);
      await fake.payCheckout(session.id, card);
      const saved = await stripe.checkout.sessions.retrieve(session.id, {
        expand: ['payment_intent.payment_method'],
      });
      const intent = saved.payment_intent as Stripe.PaymentIntent;
      const method = intent.payment_method as Stripe.PaymentMethod;
      expect(method.card?.last4).toBe(card.slice(-4));
      const charge = () =>
        stripe.paymentIntents.create(
          {
            amount: 900,
            currency: 'usd',
            customer: saved.customer as string,
            payment_method: method.id,
            off_session: true,
            confirm: true,
          },
          { idempotencyKey: `top-up-${card}` },
        );
      if (declined) {
        await expect(charge()).rejects.toBeInstanceOf(Stripe.errors.StripeCardError);
        continue;
      }
      const first = await charge();
      const replay = await charge();
      expect(replay.id).toBe(first.id);
      expect(first.status).toBe('succeeded');
      // The event follows the answer, as Stripe's do: wait for its delivery, then count.
      const succeeded = (event: Stripe.Event) =>
        event.type === 'payment_intent.succeeded' && event.data.object.id === first.id;
      await until(() => received.some(succeeded), 'the payment_intent.succeeded delivery');
      expect(
        fake.events.filter(
          (event) => event.type === 'payment_intent.succeeded' && event.data.object.id === first.id,
        ),
      ).toHaveLength(1);
      expect(received.filter(succeeded)).toHaveLength(1);
    }
  });

  test('a refund sends charge.refunded with the cumulative refunded amount', async () => {
    const session = await openSession(false);
    await fake.payCheckout(session.id);
    const intentId = (await stripe.checkout.sessions.retrieve(session.id)).payment_intent as string;
    await stripe.refunds.create({ payment_intent: intentId, amount: 300 });
    await stripe.refunds.create({ payment_intent: intentId });
    const refunds = received.filter(
      (event) =>
        event.type === 'charge.refunded' && (event.data.object as Stripe.Charge).payment_intent === intentId,
    );
    expect(refunds.map((event) => (event.data.object as Stripe.Charge).amount_refunded)).toEqual([300, 900]);
    await expect(stripe.refunds.create({ payment_intent: intentId, amount: 1 })).rejects.toMatchObject({
      statusCode: 400,
    });
  });

  test('the 0259 card is paid, then disputed; the dispute closes won or lost with the evidence text, as Stripe test mode does', async () => {
    const outcomes: Record<string, string> = {};
    for (const evidence of ['winning_evidence', 'losing_evidence', null] as const) {
      const session = await openSession(false);
      await fake.payCheckout(session.id, TEST_CARDS.disputed);
      const intentId = (await stripe.checkout.sessions.retrieve(session.id)).payment_intent as string;
      const created = received.find(
        (event) =>
          event.type === 'charge.dispute.created' &&
          (event.data.object as Stripe.Dispute).payment_intent === intentId,
      );
      const dispute = created?.data.object as Stripe.Dispute;
      // The Dispute object as Stripe documents it (https://docs.stripe.com/api/disputes/object).
      expect(dispute).toMatchObject({
        object: 'dispute',
        amount: 900,
        currency: 'usd',
        reason: 'fraudulent',
        status: 'needs_response',
        charge: expect.stringMatching(/^ch_/),
        evidence: expect.objectContaining({ uncategorized_text: null }),
        evidence_details: expect.objectContaining({ has_evidence: false, submission_count: 0 }),
      });
      expect(dispute.id).toMatch(/^du_/);
      expect((await stripe.disputes.retrieve(dispute.id)).status).toBe('needs_response');
      if (evidence === null) await stripe.disputes.close(dispute.id);
      else await stripe.disputes.update(dispute.id, { evidence: { uncategorized_text: evidence } });
      await until(
        () =>
          received.some(
            (event) => event.type === 'charge.dispute.closed' && event.data.object.id === dispute.id,
          ),
        'the charge.dispute.closed delivery',
      );
      const closed = received.find(
        (event) => event.type === 'charge.dispute.closed' && event.data.object.id === dispute.id,
      );
      outcomes[evidence ?? 'accepted'] = String((closed?.data.object as Stripe.Dispute | undefined)?.status);
      await expect(stripe.disputes.close(dispute.id)).rejects.toMatchObject({ statusCode: 400 });
    }
    expect(outcomes).toEqual({ winning_evidence: 'won', losing_evidence: 'lost', accepted: 'lost' });
  });

  test('a held delivery is posted only when released, after events that happened later', async () => {
    const hold = fake.holdDeliveries(['payment_intent.succeeded']);
    const session = await openSession(false);
    await fake.payCheckout(session.id);
    const intentId = (await stripe.checkout.sessions.retrieve(session.id)).payment_intent as string;
    const about = (event: Stripe.Event) =>
      event.type === 'payment_intent.succeeded' && event.data.object.id === intentId;
    // The event happened (its object says so, and it is listed), but the endpoint has not seen it;
    // the session's own event, which came after it, was delivered.
    expect(fake.events.some((event) => about(event as unknown as Stripe.Event))).toBe(true);
    expect(received.some(about)).toBe(false);
    expect(
      received.some(
        (event) => event.type === 'checkout.session.completed' && event.data.object.id === session.id,
      ),
    ).toBe(true);
    expect(await hold.release()).toEqual([200]);
    expect(received.filter(about)).toHaveLength(1);
  });

  test('lists PaymentIntents of a customer, newest first', async () => {
    const session = await openSession(true);
    await fake.payCheckout(session.id);
    const customer = (await stripe.checkout.sessions.retrieve(session.id)).customer as string;
    const listed = await stripe.paymentIntents.list({ customer, limit: 100 });
    expect(listed.data.map((intent) => intent.customer)).toEqual([customer]);
    expect(listed.data[0]?.id).toBe((await stripe.checkout.sessions.retrieve(session.id)).payment_intent);
  });
});
