// Buying credits inside workerd against the fake Stripe (test/world/fake-stripe.ts): the Credits
// page starts a Checkout, the fake's hosted page takes the payment, and its signed events are
// delivered to POST /stripe/webhook by the test, once, again, and several at once.
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { until, untilValue } from '../../../../test/eventually.ts';
import {
  CookieClient,
  signedInAccount,
  signedInAccountIn,
  uniqueEmail,
} from '../../../test/cookie-client.ts';
import { accountD1, balanceOf, call, dbOfAccount, fetchWithVars, ledgerOf } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { createApiKey } from '../../services/keys/api-keys.ts';
import { watchBalance, watchDepsOf } from '../../services/money/balance-watch.ts';
import { formatPrice } from '../../services/money/purchases.ts';
import { MAX_EVENT_BYTES } from '../stripe-webhook.ts';

const FAKE_STRIPE = env.STRIPE_API_URL;
const PACK = configOf(env).CREDIT_PACKS[0] as { credits: number; price: number };
// Automatic top-ups buy the larger pack: a threshold above a new account's balance fits under it.
const TOP_UP_PACK = configOf(env).CREDIT_PACKS[1] as { credits: number; price: number };
const DAY_MS = 86_400_000;

interface Delivery {
  event: { id: string; type: string; data: { object: Record<string, unknown> } };
  payload: string;
  signature: string;
}

/** The fake Stripe's events about an object (a session, a PaymentIntent, a purchase), each signed now. */
async function eventsAbout(objectId: string): Promise<Delivery[]> {
  const response = await fetch(`${FAKE_STRIPE}/__fake/events?related=${encodeURIComponent(objectId)}`, {
    headers: { authorization: `Bearer ${env.STRIPE_SECRET_KEY}` },
  });
  return (await response.json()) as Delivery[];
}

async function eventOf(objectId: string, type: string): Promise<Delivery> {
  return untilValue(
    async () => (await eventsAbout(objectId)).find((delivery) => delivery.event.type === type),
    `a ${type} event about ${objectId}`,
  );
}

/** A request to the fake Stripe's API, as the library would send it. */
async function stripeApi(path: string, form?: Record<string, string>): Promise<Record<string, unknown>> {
  const response = await fetch(`${FAKE_STRIPE}${path}`, {
    method: form ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${env.STRIPE_SECRET_KEY}` },
    ...(form ? { body: new URLSearchParams(form) } : {}),
  });
  expect(response.status, path).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

async function deliverEvent(
  delivery: Delivery,
): Promise<{ status: number; outcome?: string; code?: string }> {
  const response = await deliver(delivery.payload, delivery.signature);
  return { status: response.status, ...((await response.json()) as { outcome?: string; code?: string }) };
}

/** Spends credits as verifications would, leaving `left` (ledger row and balance together). */
async function spendDownTo(accountId: string, left: number): Promise<void> {
  const d1 = await accountD1(accountId);
  await d1.batch([
    d1
      .prepare(
        `INSERT INTO credit_ledger (account_id, delta, balance_after, reason, reference, created_at)
       SELECT id, -(credit_balance - ?2), ?2, 'verify', ?3, ?4 FROM accounts WHERE id = ?1 AND credit_balance > ?2`,
      )
      .bind(accountId, left, `spent-${crypto.randomUUID()}`, Date.now()),
    d1
      .prepare('UPDATE accounts SET credit_balance = ?2 WHERE id = ?1 AND credit_balance > ?2')
      .bind(accountId, left),
  ]);
}

function deliver(payload: string, signature: string | null): Promise<Response> {
  const headers = new Headers({ 'content-type': 'application/json' });
  if (signature !== null) headers.set('stripe-signature', signature);
  return exports.default.fetch(
    new Request('https://edge.test/stripe/webhook', { method: 'POST', headers, body: payload }),
  );
}

/** Starts a Checkout from the Credits page and pays it on the fake's hosted page; the session id. */
async function buy(
  client: CookieClient,
  options: { saveCard?: boolean; card?: string } = {},
): Promise<string> {
  const started = await client.submit('/credits', '/credits/checkout', {
    credits: String(PACK.credits),
    ...(options.saveCard ? { saveCard: 'true' } : {}),
  });
  expect(started.status, await started.clone().text()).toBe(303);
  const hosted = started.headers.get('location') ?? '';
  expect(hosted.startsWith(`${FAKE_STRIPE}/checkout/cs_test_`)).toBe(true);
  const paid = await fetch(hosted, {
    method: 'POST',
    body: new URLSearchParams({ card: options.card ?? '4242424242424242' }),
    redirect: 'manual',
  });
  expect(paid.status).toBe(303);
  expect(paid.headers.get('location')).toBe('https://localhost/credits?checkout=paid');
  return new URL(hosted).pathname.split('/').at(-1) as string;
}

async function purchaseRows(accountId: string) {
  const { results } = await (await accountD1(accountId))
    .prepare(
      'SELECT id, kind, status, credits, credits_taken_back AS creditsTakenBack FROM purchases WHERE account_id = ?1 ORDER BY created_at',
    )
    .bind(accountId)
    .all<{ id: string; kind: string; status: string; credits: number; creditsTakenBack: number }>();
  return results;
}

/**
 * A new account with a saved card whose automatic top-up (the larger pack, threshold just above
 * the balance) has started: the top-up purchase, and the balance before it.
 */
async function topUpStarted(label: string, settings: Record<string, string> = {}) {
  const { client, accountId } = await signedInAccount(label);
  const sessionId = await buy(client, { saveCard: true });
  await deliverEvent(await eventOf(sessionId, 'checkout.session.completed'));
  const balance = await balanceOf(accountId);
  await client.submit('/credits', '/credits/settings', {
    autoTopUp: 'true',
    autoTopUpThreshold: String(balance + 1),
    autoTopUpCredits: String(TOP_UP_PACK.credits),
    ...settings,
  });
  const topUp = await untilValue(
    async () => (await purchaseRows(accountId)).find((row) => row.kind === 'auto_topup'),
    'the automatic top-up purchase',
  );
  return { client, accountId, balance, topUp };
}

describe('buying credits', () => {
  it("credits an account of shard 1 in its shard; a dispute finds it by Stripe's PaymentIntent before the payment is recorded, by the directory after", async () => {
    const { client, accountId } = await signedInAccountIn(1, 'shard-buy');
    const balanceIn = async (database: D1Database) =>
      (
        await database
          .prepare('SELECT credit_balance AS balance FROM accounts WHERE id = ?1')
          .bind(accountId)
          .first<{ balance: number }>()
      )?.balance;
    const before = await balanceIn(env.DB_SHARD_1);
    const sessionId = await buy(client, { card: '4000000000000259' });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    const intent = completed.event.data.object.payment_intent as string;
    const disputed = await eventOf(intent, 'charge.dispute.created');
    // Its purchase is found pending in shard 1: Stripe is asked to deliver the dispute again.
    expect(await deliverEvent(disputed)).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(await deliverEvent(completed)).toMatchObject({ status: 200, outcome: 'granted' });
    expect(await balanceIn(env.DB_SHARD_1)).toBe((before ?? Number.NaN) + PACK.credits);
    expect(await balanceIn(env.DB)).toBeUndefined();
    const lookup = await env.DB.prepare(
      "SELECT account_id AS accountId FROM account_lookups WHERE kind = 'payment_intent' AND value = ?1",
    )
      .bind(intent)
      .first<{ accountId: string }>();
    expect(lookup?.accountId).toBe(accountId);
    expect(await deliverEvent(disputed)).toMatchObject({ status: 200, outcome: 'dispute_opened' });
    expect(
      await env.DB_SHARD_1.prepare(
        "SELECT COUNT(*) AS n FROM credit_ledger WHERE account_id = ?1 AND reason = 'dispute_hold'",
      )
        .bind(accountId)
        .first<{ n: number }>(),
    ).toEqual({ n: 1 });
  });

  it('without Stripe keys the Credits page says purchases are off, and the webhook answers 503', async () => {
    const off = { STRIPE_SECRET_KEY: '', STRIPE_WEBHOOK_SECRET: '' };
    const client = new CookieClient(undefined, off);
    expect((await client.signUp(uniqueEmail('nostripe'))).status).toBe(303);
    const page = await client.get('/credits');
    const html = await page.text();
    expect(html).toContain('Purchases are off on this deployment');
    expect(html).not.toContain('Continue to payment');
    expect(html).toContain('data-testid="header-balance"');
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self';");
    const refused = await client.submit('/credits', '/credits/checkout', { credits: String(PACK.credits) });
    expect(refused.status).toBe(503);
    const webhook = await fetchWithVars(
      new Request('https://edge.test/stripe/webhook', {
        method: 'POST',
        body: '{}',
        headers: { 'stripe-signature': 't=1,v1=00' },
      }),
      off,
    );
    expect(webhook.status).toBe(503);
    expect(await webhook.json()).toMatchObject({ success: false, code: 'SERVICE_UNAVAILABLE' });
  });

  it('a paid Checkout grants its credits once: replays and concurrent deliveries add nothing', async () => {
    const { client, accountId } = await signedInAccount('buyer');
    const before = await balanceOf(accountId);
    const page = await client.get('/credits');
    const html = await page.text();
    expect(html).toContain(
      `${PACK.credits.toLocaleString('en-US')} credits</strong> for ${formatPrice(PACK.price, 'usd')}`,
    );
    expect(formatPrice(900, 'usd')).toBe('$9.00');
    // A zero-decimal currency's amount is in whole units (https://docs.stripe.com/currencies#zero-decimal).
    expect(formatPrice(900, 'jpy')).toBe('¥900');
    expect(html).toMatch(new RegExp(`data-testid="header-balance"><strong>${before}</strong>`));
    // The form's answer redirects to the hosted page: the CSP lets the form go there.
    expect(page.headers.get('content-security-policy')).toContain(
      `form-action 'self' ${new URL(FAKE_STRIPE).origin}`,
    );

    const sessionId = await buy(client);
    expect(await balanceOf(accountId)).toBe(before);
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    const first = await deliver(completed.payload, completed.signature);
    expect(await first.json()).toEqual({ received: true, outcome: 'granted' });
    expect(await balanceOf(accountId)).toBe(before + PACK.credits);

    const replay = await deliver(completed.payload, completed.signature);
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ received: true, outcome: 'already_applied' });
    // Stripe may deliver the same event several times at once: one grant among them.
    const resent = await eventOf(sessionId, 'checkout.session.completed');
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, () => deliver(resent.payload, resent.signature).then((r) => r.json())),
    );
    expect(outcomes.every((outcome) => (outcome as { outcome: string }).outcome === 'already_applied')).toBe(
      true,
    );
    expect(await balanceOf(accountId)).toBe(before + PACK.credits);
    expect((await ledgerOf(accountId)).filter((row) => row.reason === 'purchase')).toEqual([
      { delta: PACK.credits, reason: 'purchase', reference: sessionId },
    ]);

    // The API lists the same receipt; a test key sees no payments (they are real money).
    for (const mode of ['live', 'test'] as const) {
      const key = await createApiKey(await dbOfAccount(accountId), {
        accountId,
        name: `${mode} key`,
        mode,
        maxActiveKeys: configOf(env).QUOTA_API_KEYS,
        now: Date.now(),
      });
      const listed = (await (await call('/api/v1/account/payments', { key: key.secret })).json()) as {
        purchasesEnabled: boolean;
        payments: unknown[];
      };
      expect(listed.purchasesEnabled).toBe(true);
      expect(listed.payments).toEqual(
        mode === 'live'
          ? [
              expect.objectContaining({
                kind: 'checkout',
                status: 'paid',
                credits: PACK.credits,
                amount: PACK.price,
                currency: 'usd',
                creditsTakenBack: 0,
              }),
            ]
          : [],
      );
    }

    const after = await (await client.get('/credits')).text();
    expect(after).toContain('data-testid="receipts"');
    expect(after).toContain('<td data-label="Status">Paid</td>');
    expect(after).toMatch(
      new RegExp(
        `data-testid="header-balance"><strong>${(before + PACK.credits).toLocaleString('en-US')}</strong>`,
      ),
    );
  });

  it('a bad or missing signature is 400 WEBHOOK_SIGNATURE_INVALID and moves nothing', async () => {
    const { client, accountId } = await signedInAccount('forger');
    const sessionId = await buy(client);
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    const before = await balanceOf(accountId);
    const tampered = completed.payload.replace(
      `"amount_total": ${PACK.price}`,
      `"amount_total": ${PACK.price + 1}`,
    );
    const foreign = completed.signature.replace(/v1=[0-9a-f]+/, `v1=${'0'.repeat(64)}`);
    for (const [payload, signature] of [
      [tampered, completed.signature],
      [completed.payload, foreign],
      [completed.payload, null],
      [completed.payload, 'not a signature'],
    ] as const) {
      const refused = await deliver(payload, signature);
      expect(refused.status).toBe(400);
      expect(refused.headers.get('content-type')).toContain('application/json');
      expect(await refused.json()).toMatchObject({ success: false, code: 'WEBHOOK_SIGNATURE_INVALID' });
    }
    expect(await balanceOf(accountId)).toBe(before);
    expect((await purchaseRows(accountId))[0]?.status).toBe('pending');
  });

  it('a body past the limit without a Content-Length is refused while it streams in, not read to the end', async () => {
    const chunk = new Uint8Array(16 * 1024).fill(0x20);
    let pulled = 0;
    // 4 MB of spaces without a Content-Length (chunked): reading stops at the limit.
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled >= 4 * 1024 * 1024) return controller.close();
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const refused = await exports.default.fetch(
      new Request('https://edge.test/stripe/webhook', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
        body: endless,
      }),
    );
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ success: false, code: 'PAYLOAD_TOO_LARGE' });
    expect(pulled).toBeLessThan(MAX_EVENT_BYTES + 4 * chunk.byteLength);
  });

  it('a refund takes back the unspent credits in proportion, never below zero, once per refunded amount', async () => {
    const { client, accountId } = await signedInAccount('refunded');
    const sessionId = await buy(client);
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    await deliver(completed.payload, completed.signature);
    const intentId = completed.event.data.object.payment_intent as string;
    const granted = await balanceOf(accountId);

    // A third of the price back: a third of the pack's credits go, rounded down.
    const stripe = await fetch(`${FAKE_STRIPE}/v1/refunds`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.STRIPE_SECRET_KEY}` },
      body: new URLSearchParams({ payment_intent: intentId, amount: String(PACK.price / 3) }),
    });
    expect(stripe.status).toBe(200);
    const partial = await eventOf(intentId, 'charge.refunded');
    expect(await (await deliver(partial.payload, partial.signature)).json()).toMatchObject({
      outcome: 'refunded',
    });
    const third = Math.floor((PACK.credits * (PACK.price / 3)) / PACK.price);
    expect(await balanceOf(accountId)).toBe(granted - third);
    expect(await (await deliver(partial.payload, partial.signature)).json()).toMatchObject({
      outcome: 'already_applied',
    });
    expect(await balanceOf(accountId)).toBe(granted - third);

    // The customer spends most of the rest, then the remainder is refunded: what is left goes.
    await (await accountD1(accountId))
      .prepare(
        `INSERT INTO credit_ledger (account_id, delta, balance_after, reason, reference, created_at)
       SELECT id, -(credit_balance - 10), 10, 'verify', 'spent-before-refund', ?2 FROM accounts WHERE id = ?1`,
      )
      .bind(accountId, Date.now())
      .run();
    await (await accountD1(accountId))
      .prepare('UPDATE accounts SET credit_balance = 10 WHERE id = ?1')
      .bind(accountId)
      .run();
    await fetch(`${FAKE_STRIPE}/v1/refunds`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.STRIPE_SECRET_KEY}` },
      body: new URLSearchParams({ payment_intent: intentId }),
    });
    const full = await untilValue(
      async () =>
        (await eventsAbout(intentId)).filter((delivery) => delivery.event.type === 'charge.refunded')[1],
      'the second refund event',
    );
    expect(await (await deliver(full.payload, full.signature)).json()).toMatchObject({ outcome: 'refunded' });
    expect(await balanceOf(accountId)).toBe(0);
    expect(await (await deliver(full.payload, full.signature)).json()).toMatchObject({
      outcome: 'already_applied',
    });
    expect(await balanceOf(accountId)).toBe(0);
    const [purchase] = await purchaseRows(accountId);
    expect(purchase).toMatchObject({ status: 'refunded', creditsTakenBack: third + 10 });
    const takeBacks = (await ledgerOf(accountId)).filter((row) => row.reason === 'purchase_refund');
    expect(takeBacks.map((row) => row.delta)).toEqual([-third, -10]);
    expect(await (await client.get('/credits')).text()).toContain(
      `Refunded (${third + 10} credits taken back)`,
    );
  });

  it('automatic top-up: a saved card is charged off-session once below the threshold, credits granted by the webhook once', async () => {
    const { client, accountId } = await signedInAccount('topup');
    const sessionId = await buy(client, { saveCard: true });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    await deliver(completed.payload, completed.signature);
    const billing = await (await accountD1(accountId))
      .prepare(
        'SELECT payment_method_id AS pm, payment_method_label AS label FROM account_billing WHERE account_id = ?1',
      )
      .bind(accountId)
      .first<{ pm: string | null; label: string | null }>();
    expect(billing?.pm).toMatch(/^pm_test_/);
    expect(billing?.label).toBe('visa ···· 4242');

    const balance = await balanceOf(accountId);
    // A threshold above the balance: saving it starts the top-up at once.
    const saved = await client.submit('/credits', '/credits/settings', {
      autoTopUp: 'true',
      autoTopUpThreshold: String(balance + 1),
      autoTopUpCredits: String(TOP_UP_PACK.credits),
      lowBalanceThreshold: '',
    });
    expect(saved.status).toBe(303);
    // More watches at once (other requests spending credits) start no second top-up.
    const deps = watchDepsOf(await dbOfAccount(accountId), configOf(env), env, Date.now());
    await Promise.all(Array.from({ length: 4 }, () => watchBalance(deps, accountId)));
    const topUp = await untilValue(
      async () => (await purchaseRows(accountId)).find((row) => row.kind === 'auto_topup'),
      'the automatic top-up purchase',
    );
    const succeeded = await eventOf(topUp.id, 'payment_intent.succeeded');
    expect(succeeded.event.data.object).toMatchObject({
      amount: TOP_UP_PACK.price,
      customer: expect.stringMatching(/^cus_test_/),
    });
    expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toHaveLength(1);
    expect(await balanceOf(accountId)).toBe(balance);

    expect(await (await deliver(succeeded.payload, succeeded.signature)).json()).toMatchObject({
      outcome: 'granted',
    });
    expect(await (await deliver(succeeded.payload, succeeded.signature)).json()).toMatchObject({
      outcome: 'already_applied',
    });
    expect(await balanceOf(accountId)).toBe(balance + TOP_UP_PACK.credits);
    const grants = (await ledgerOf(accountId)).filter((row) => row.reason === 'purchase');
    expect(grants.map((row) => row.reference)).toEqual([sessionId, succeeded.event.data.object.id]);
    // Back above the threshold: the next watch starts nothing.
    await watchBalance({ ...deps, now: Date.now() }, accountId);
    expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toHaveLength(1);
  });

  it('a declined saved card fails its top-up once and pauses top-ups instead of charging again', async () => {
    const { client, accountId } = await signedInAccount('declined');
    // Stripe's test card that attaches and declines every later charge.
    const sessionId = await buy(client, { saveCard: true, card: '4000000000000341' });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    await deliver(completed.payload, completed.signature);
    const balance = await balanceOf(accountId);
    await client.submit('/credits', '/credits/settings', {
      autoTopUp: 'true',
      autoTopUpThreshold: String(balance + 1),
      autoTopUpCredits: String(TOP_UP_PACK.credits),
      lowBalanceThreshold: '',
    });
    const failed = await untilValue(
      async () =>
        (await purchaseRows(accountId)).find((row) => row.kind === 'auto_topup' && row.status === 'failed'),
      'the declined top-up',
    );
    const deps = watchDepsOf(await dbOfAccount(accountId), configOf(env), env, Date.now());
    await watchBalance(deps, accountId);
    expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toHaveLength(1);
    const declined = await eventOf(failed.id, 'payment_intent.payment_failed');
    expect(await (await deliver(declined.payload, declined.signature)).json()).toMatchObject({
      outcome: 'already_applied',
    });
    expect(await balanceOf(accountId)).toBe(balance);
    const page = await (await client.get('/credits')).text();
    expect(page).toContain('The last automatic top-up was declined (Your card was declined.)');
  });

  it('the low-balance email goes once each time the balance falls below the threshold', async () => {
    const { client, accountId } = await signedInAccount('lowbalance');
    const lines: string[] = [];
    const original = console.log;
    console.log = (...items: unknown[]) => {
      lines.push(items.map(String).join(' '));
    };
    try {
      const balance = await balanceOf(accountId);
      await client.submit('/credits', '/credits/settings', { lowBalanceThreshold: String(balance + 1) });
      const deps = watchDepsOf(await dbOfAccount(accountId), configOf(env), env, Date.now());
      await Promise.all(Array.from({ length: 3 }, () => watchBalance(deps, accountId)));
      await until(() => lines.some((line) => line.startsWith('rcpt: email to')), 'the low-balance email');
      await watchBalance(deps, accountId);
      expect(lines.filter((line) => line.includes(`: Your rcpt balance is ${balance} credits`))).toHaveLength(
        1,
      );
    } finally {
      console.log = original;
    }
  });

  it('the top-up threshold can be at most the pack it buys: 400 naming the field, nothing saved', async () => {
    const { client, accountId } = await signedInAccount('toppack');
    const sessionId = await buy(client, { saveCard: true });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    await deliver(completed.payload, completed.signature);
    const refused = await client.submit('/credits', '/credits/settings', {
      autoTopUp: 'true',
      autoTopUpThreshold: String(PACK.credits + 1),
      autoTopUpCredits: String(PACK.credits),
      lowBalanceThreshold: '',
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain(
      `The top-up threshold (${(PACK.credits + 1).toLocaleString('en-US')}) is above the pack it buys`,
    );
    for (const perDay of ['0', '25', 'two']) {
      const badLimit = await client.submit('/credits', '/credits/settings', {
        autoTopUp: 'true',
        autoTopUpThreshold: String(PACK.credits),
        autoTopUpCredits: String(PACK.credits),
        autoTopUpDailyLimit: perDay,
      });
      expect(badLimit.status, perDay).toBe(400);
    }
    const billing = await (await accountD1(accountId))
      .prepare('SELECT auto_top_up_threshold AS threshold FROM account_billing WHERE account_id = ?1')
      .bind(accountId)
      .first<{ threshold: number | null }>();
    expect(billing?.threshold).toBeNull();
  });

  it('a slow top-up webhook: the watch reconciles with Stripe before another top-up, granting once, and the late event adds nothing', async () => {
    const { accountId, balance, topUp } = await topUpStarted('slowhook');
    // Stripe charged the card and sent its event, but the event has not reached rcpt.
    const succeeded = await eventOf(topUp.id, 'payment_intent.succeeded');
    const startedAt = Date.now();
    const accountDb = await dbOfAccount(accountId);
    const watch = (at: number) => watchBalance(watchDepsOf(accountDb, configOf(env), env, at), accountId);
    // While it is in flight, the watch starts nothing beside it, even much later…
    await watch(startedAt + 60_000);
    expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toHaveLength(1);
    // …and past the reconcile interval asks Stripe, which says it succeeded: granted once.
    await watch(startedAt + 11 * 60_000);
    expect(await balanceOf(accountId)).toBe(balance + TOP_UP_PACK.credits);
    expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toEqual([
      expect.objectContaining({ status: 'paid' }),
    ]);
    // The late webhook finds it paid; the card was charged once.
    expect(await deliverEvent(succeeded)).toMatchObject({ status: 200, outcome: 'already_applied' });
    expect(await balanceOf(accountId)).toBe(balance + TOP_UP_PACK.credits);
    const customer = succeeded.event.data.object.customer as string;
    const intents = (await stripeApi(`/v1/payment_intents?customer=${customer}&limit=100`)).data as {
      description: string | null;
    }[];
    expect(intents.filter((intent) => intent.description?.includes('automatic top-up'))).toHaveLength(1);
    expect((await ledgerOf(accountId)).filter((row) => row.reason === 'purchase')).toHaveLength(2);
  });

  it("a top-up whose creation answer was lost is found among the customer's PaymentIntents and settled once", async () => {
    const { accountId, balance, topUp } = await topUpStarted('lostanswer');
    await eventOf(topUp.id, 'payment_intent.succeeded');
    // As if the answer to the PaymentIntent's creation never came back: rcpt does not know its id.
    await (await accountD1(accountId))
      .prepare('UPDATE purchases SET payment_intent_id = NULL WHERE id = ?1')
      .bind(topUp.id)
      .run();
    const deps = watchDepsOf(await dbOfAccount(accountId), configOf(env), env, Date.now() + 11 * 60_000);
    await watchBalance(deps, accountId);
    expect(await balanceOf(accountId)).toBe(balance + TOP_UP_PACK.credits);
    expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toEqual([
      expect.objectContaining({ status: 'paid' }),
    ]);
  });

  it('at most the daily limit of top-ups a day, then one email that day', async () => {
    // Signed up before the console is listened to: the sign-up's link is read from it.
    const { accountId, topUp: first } = await topUpStarted('toplimit', { autoTopUpDailyLimit: '1' });
    const lines: string[] = [];
    const original = console.log;
    console.log = (...items: unknown[]) => {
      lines.push(items.map(String).join(' '));
    };
    try {
      await deliverEvent(await eventOf(first.id, 'payment_intent.succeeded'));
      // Spent below the threshold again the same day: no second top-up, one email saying why.
      await spendDownTo(accountId, 5);
      const deps = watchDepsOf(await dbOfAccount(accountId), configOf(env), env, Date.now());
      await Promise.all(Array.from({ length: 3 }, () => watchBalance(deps, accountId)));
      await watchBalance({ ...deps, now: Date.now() }, accountId);
      expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toHaveLength(1);
      const limitEmails = () =>
        lines.filter((line) => line.includes('automatic top-up paused for today (1 a day)'));
      await until(() => limitEmails().length > 0, 'the daily-limit email');
      expect(limitEmails()).toHaveLength(1);
      // The next day (UTC) tops up again.
      const tomorrow = (Math.floor(Date.now() / DAY_MS) + 1) * DAY_MS + 60_000;
      await watchBalance({ ...deps, now: tomorrow }, accountId);
      expect((await purchaseRows(accountId)).filter((row) => row.kind === 'auto_topup')).toHaveLength(2);
    } finally {
      console.log = original;
    }
  });

  it('a dispute holds the credits it bought and suspends paid work until it is won; replays move nothing', async () => {
    const { client, accountId } = await signedInAccount('disputed');
    const before = await balanceOf(accountId);
    const sessionId = await buy(client, { card: '4000000000000259' });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    await deliverEvent(completed);
    const intentId = completed.event.data.object.payment_intent as string;
    const created = await eventOf(intentId, 'charge.dispute.created');
    const disputeId = created.event.data.object.id as string;
    expect(created.event.data.object).toMatchObject({ object: 'dispute', status: 'needs_response' });

    expect(await deliverEvent(created)).toMatchObject({ status: 200, outcome: 'dispute_opened' });
    expect(await deliverEvent(created)).toMatchObject({ status: 200, outcome: 'already_applied' });
    expect(await balanceOf(accountId)).toBe(before);
    expect((await ledgerOf(accountId)).filter((row) => row.reason === 'dispute_hold')).toEqual([
      { delta: -PACK.credits, reason: 'dispute_hold', reference: disputeId },
    ]);

    // Paid work is refused before anything is charged; test keys still work.
    const keyOf = async (mode: 'live' | 'test') =>
      createApiKey(await dbOfAccount(accountId), {
        accountId,
        name: mode,
        mode,
        maxActiveKeys: configOf(env).QUOTA_API_KEYS,
        now: Date.now(),
      });
    const live = await keyOf('live');
    const test = await keyOf('test');
    const refused = await call('/api/v1/verify', {
      key: live.secret,
      json: { email: 'someone@[192.0.2.1]' },
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ success: false, code: 'PAYMENT_DISPUTED' });
    const upload = await call('/api/v1/bulk/upload', {
      key: live.secret,
      json: { emails: ['a@[192.0.2.1]'] },
    });
    expect(upload.status).toBe(403);
    expect(await upload.json()).toMatchObject({ code: 'PAYMENT_DISPUTED' });
    expect(
      (await call('/api/v1/verify', { key: test.secret, json: { email: 'someone@example.com' } })).status,
    ).toBe(200);
    expect(await balanceOf(accountId)).toBe(before);
    expect(
      (await client.submit('/credits', '/credits/checkout', { credits: String(PACK.credits) })).status,
    ).toBe(403);
    expect(await (await client.get('/credits')).text()).toContain('data-testid="dispute-notice"');

    // Won: the held credits come back, once, and paid work resumes.
    await stripeApi(`/v1/disputes/${disputeId}`, { 'evidence[uncategorized_text]': 'winning_evidence' });
    const closed = await eventOf(disputeId, 'charge.dispute.closed');
    expect(closed.event.data.object.status).toBe('won');
    expect(await deliverEvent(closed)).toMatchObject({ status: 200, outcome: 'dispute_won' });
    expect(await deliverEvent(closed)).toMatchObject({ status: 200, outcome: 'already_applied' });
    expect(await balanceOf(accountId)).toBe(before + PACK.credits);
    const again = await call('/api/v1/verify', { key: live.secret, json: { email: 'someone@[192.0.2.1]' } });
    expect(again.status).toBe(200);
    expect(await (await client.get('/credits')).text()).not.toContain('data-testid="dispute-notice"');
  });

  it('a lost dispute records what was spent as a debt, and the next purchase settles it first', async () => {
    const { client, accountId } = await signedInAccount('lost');
    const sessionId = await buy(client, { card: '4000000000000259' });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    await deliverEvent(completed);
    // Most of it is spent before the dispute arrives: the balance gives up what it holds.
    await spendDownTo(accountId, 10);
    const intentId = completed.event.data.object.payment_intent as string;
    const created = await eventOf(intentId, 'charge.dispute.created');
    const disputeId = created.event.data.object.id as string;
    // A `closed` delivered before its `created` (events come in any order) opens it first.
    await stripeApi(`/v1/disputes/${disputeId}/close`, {});
    const closed = await eventOf(disputeId, 'charge.dispute.closed');
    expect(closed.event.data.object.status).toBe('lost');
    expect(await deliverEvent(closed)).toMatchObject({ status: 200, outcome: 'dispute_lost' });
    expect(await deliverEvent(created)).toMatchObject({ status: 200, outcome: 'already_applied' });
    expect(await balanceOf(accountId)).toBe(0);
    const debt = PACK.credits - 10;
    const page = await (await client.get('/credits')).text();
    expect(page).toContain('data-testid="debt-notice"');
    expect(page).toContain(`${debt.toLocaleString('en-US')} credits owed`);

    // The next purchase: its credits pay the debt first, in the same transaction.
    const next = await buy(client);
    const paid = await eventOf(next, 'checkout.session.completed');
    expect(await deliverEvent(paid)).toMatchObject({ outcome: 'granted' });
    expect(await deliverEvent(paid)).toMatchObject({ outcome: 'already_applied' });
    expect(await balanceOf(accountId)).toBe(PACK.credits - debt);
    const rows = (await ledgerOf(accountId)).filter((row) =>
      ['dispute_hold', 'dispute_return', 'debt_settlement'].includes(row.reason),
    );
    expect(rows).toEqual([
      { delta: -10, reason: 'dispute_hold', reference: disputeId },
      { delta: -debt, reason: 'debt_settlement', reference: next },
    ]);
    expect(await (await client.get('/credits')).text()).not.toContain('data-testid="debt-notice"');
    // The balance is the sum of the ledger.
    const sum = (await ledgerOf(accountId)).reduce((total, row) => total + row.delta, 0);
    expect(sum).toBe(await balanceOf(accountId));
  });

  it('a dispute that arrives before its payment is recorded is answered 503, so Stripe delivers it again', async () => {
    const { client } = await signedInAccount('early');
    const sessionId = await buy(client, { card: '4000000000000259' });
    const completed = await eventOf(sessionId, 'checkout.session.completed');
    const created = await eventOf(
      completed.event.data.object.payment_intent as string,
      'charge.dispute.created',
    );
    expect(await deliverEvent(created)).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    await deliverEvent(completed);
    expect(await deliverEvent(created)).toMatchObject({ status: 200, outcome: 'dispute_opened' });
  });
});
