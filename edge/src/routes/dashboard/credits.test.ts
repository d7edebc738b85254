// Buying credits inside workerd against the fake Stripe (test/world/fake-stripe.ts): the Credits
// page starts a Checkout, the fake's hosted page takes the payment, and its signed events are
// delivered to POST /stripe/webhook by the test, once, again, and several at once.
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { until, untilValue } from '../../../../test/eventually.ts';
import { CookieClient, signedInAccount, uniqueEmail } from '../../../test/cookie-client.ts';
import { balanceOf, call, fetchWithVars, ledgerOf } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { createApiKey } from '../../services/keys/api-keys.ts';
import { formatPrice, watchBalance, watchDepsOf } from '../../services/money/purchases.ts';
import { createDb } from '../../storage/db.ts';

const FAKE_STRIPE = env.STRIPE_API_URL;
const PACK = configOf(env).CREDIT_PACKS[0] as { credits: number; price: number };

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
  const { results } = await env.DB.prepare(
    'SELECT id, kind, status, credits, credits_taken_back AS creditsTakenBack FROM purchases WHERE account_id = ?1 ORDER BY created_at',
  )
    .bind(accountId)
    .all<{ id: string; kind: string; status: string; credits: number; creditsTakenBack: number }>();
  return results;
}

describe('buying credits', () => {
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
      const key = await createApiKey(createDb(env.DB), {
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
    await env.DB.prepare(
      `INSERT INTO credit_ledger (account_id, delta, balance_after, reason, reference, created_at)
       SELECT id, -(credit_balance - 10), 10, 'verify', 'spent-before-refund', ?2 FROM accounts WHERE id = ?1`,
    )
      .bind(accountId, Date.now())
      .run();
    await env.DB.prepare('UPDATE accounts SET credit_balance = 10 WHERE id = ?1').bind(accountId).run();
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
    const billing = await env.DB.prepare(
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
      autoTopUpCredits: String(PACK.credits),
      lowBalanceThreshold: '',
    });
    expect(saved.status).toBe(303);
    // More watches at once (other requests spending credits) start no second top-up.
    const deps = watchDepsOf(createDb(env.DB), configOf(env), env, Date.now());
    await Promise.all(Array.from({ length: 4 }, () => watchBalance(deps, accountId)));
    const topUp = await untilValue(
      async () => (await purchaseRows(accountId)).find((row) => row.kind === 'auto_topup'),
      'the automatic top-up purchase',
    );
    const succeeded = await eventOf(topUp.id, 'payment_intent.succeeded');
    expect(succeeded.event.data.object).toMatchObject({
      amount: PACK.price,
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
    expect(await balanceOf(accountId)).toBe(balance + PACK.credits);
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
      autoTopUpCredits: String(PACK.credits),
      lowBalanceThreshold: '',
    });
    const failed = await untilValue(
      async () =>
        (await purchaseRows(accountId)).find((row) => row.kind === 'auto_topup' && row.status === 'failed'),
      'the declined top-up',
    );
    const deps = watchDepsOf(createDb(env.DB), configOf(env), env, Date.now());
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
      const deps = watchDepsOf(createDb(env.DB), configOf(env), env, Date.now());
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
});
