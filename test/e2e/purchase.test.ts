// Buying credits end to end: the whole system with purchases on against the fake Stripe
// (test/world/fake-stripe.ts), in a real browser. A pack bought on the hosted Checkout page is
// granted once by the signed checkout.session.completed webhook (a redelivery grants nothing
// more), a refund takes back the unspent credits (docs/money.md, "Refunds"), and a saved card
// tops up off-session. The first purchase as a new customer makes it, with axe on the Credits
// page at both widths, is part of the walk in dashboard.test.ts.

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlLiteral } from '../../scripts/stack/d1.ts';
import { TEST_CARDS } from '../world/fake-stripe.ts';
import { expectAccessible as expectPageAccessible } from './browser/axe.ts';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';
import { signUpAndConfirm } from './browser/sign-up.ts';
import { accountSqlRows, type System, startSystem } from './harness.ts';

let system: System;
let browser: TestBrowser;
let page: Page;

const email = `payer-${Date.now()}@example.com`;
const password = 'a long enough password';

beforeAll(async () => {
  system = await startSystem({
    stripe: true,
    vars: { SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(5))) },
  });
  browser = await launchChromium({ baseURL: system.stack.baseUrl });
  page = browser.page;
  await signUpAndConfirm(page, system, email, password);
});

afterAll(async () => {
  await browser?.close();
  await system?.close();
});

function fakeStripe() {
  if (!system.stripe) throw new Error('the system runs without the fake Stripe');
  return system.stripe;
}

/** The balance the header shows, read from a fresh load of `path`. */
async function headerBalance(path = '/credits'): Promise<number> {
  await page.goto(path);
  const text = await page.getByTestId('header-balance').textContent();
  return Number((text ?? '').replace(/[^0-9]/g, ''));
}

function ledgerRows(reason: string): Promise<{ delta: number; reference: string }[]> {
  return accountSqlRows(
    system,
    email,
    `SELECT l.delta, l.reference FROM credit_ledger l JOIN accounts a ON a.id = l.account_id
     WHERE a.email = ${sqlLiteral(email)} AND l.reason = ${sqlLiteral(reason)} ORDER BY l.id`,
  );
}

/** axe on the current page at both widths; the desktop size is restored afterwards. */
function expectAccessible(name: string): Promise<void> {
  return expectPageAccessible(page, name);
}

/** Buys the first pack on the Credits page and pays on the fake Stripe's hosted page. */
async function buyFirstPack(options: { saveCard?: boolean } = {}): Promise<void> {
  await page.goto('/credits');
  if (options.saveCard) await page.getByLabel('Save my card for automatic top-ups').check();
  await page.getByRole('button', { name: 'Continue to payment' }).click();
  await page.waitForURL(`${fakeStripe().url}/checkout/**`);
  await page.getByLabel('Card number').fill(TEST_CARDS.pays);
  await page.getByRole('button', { name: /^Pay / }).click();
  await page.waitForURL('**/credits?checkout=paid');
}

describe('buying credits', () => {
  it('a Checkout purchase grants its credits once through the signed webhook; a redelivery adds nothing', async () => {
    expect(await headerBalance('/')).toBe(100);
    const stripe = fakeStripe();
    await buyFirstPack();
    expect(await page.getByText('your payment went through').count()).toBe(1);
    // The webhook went before the hosted page sent the browser back: the credits are there.
    const completed = stripe.events.find((event) => event.type === 'checkout.session.completed');
    expect(completed).toBeDefined();
    expect(stripe.deliveries.get(completed?.id ?? '')).toEqual([200]);
    await expect.poll(() => headerBalance()).toBe(1_100);

    expect(await stripe.redeliver(completed?.id ?? '')).toBe(200);
    expect(await stripe.redeliver(completed?.id ?? '')).toBe(200);
    expect(await headerBalance('/keys')).toBe(1_100);
    expect(await ledgerRows('purchase')).toEqual([{ delta: 1_000, reference: completed?.data.object.id }]);
    await page.goto('/credits');
    expect(await page.getByTestId('receipts').locator('tbody tr').count()).toBe(1);
    expect(await page.getByTestId('receipts').textContent()).toContain('Paid');
  });

  it('a refunded charge takes back the unspent credits in proportion, once', async () => {
    const stripe = fakeStripe();
    const completed = stripe.events.find((event) => event.type === 'checkout.session.completed');
    const intentId = String(completed?.data.object.payment_intent);
    const [refunded] = await stripe.refund(intentId, 450);
    expect(stripe.deliveries.get(refunded?.event.id ?? '')).toEqual([200]);
    // Half the price back: half the pack's 1,000 credits go.
    expect(await headerBalance()).toBe(600);
    expect(await stripe.redeliver(refunded?.event.id ?? '')).toBe(200);
    expect(await headerBalance()).toBe(600);
    expect(await ledgerRows('purchase_refund')).toEqual([
      { delta: -500, reference: expect.stringMatching(/:450$/) },
    ]);
    expect(await page.getByTestId('receipts').textContent()).toContain('500 credits taken back');
  });

  it('a saved card tops up off-session when the balance falls below the threshold, credited by the webhook', async () => {
    await buyFirstPack({ saveCard: true });
    await expect.poll(() => headerBalance()).toBe(1_600);
    await page.getByLabel('Buy a pack automatically when the balance falls below the threshold').check();
    await page.getByLabel('Threshold (credits)').fill('2000');
    // The threshold is at most the pack a top-up buys: the 10,000-credit pack.
    await page.getByLabel('Pack', { exact: true }).selectOption('10000');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.waitForURL('**/credits?saved=saved');
    await expectAccessible('credits with automatic top-up');
    // Saving a threshold above the balance starts one top-up; its webhook grants the pack.
    await expect.poll(() => headerBalance()).toBe(11_600);
    const stripe = fakeStripe();
    const topUps = stripe.events.filter(
      (event) =>
        event.type === 'payment_intent.succeeded' && typeof event.data.object.description === 'string',
    );
    expect(topUps).toHaveLength(1);
    expect(stripe.deliveries.get(topUps[0]?.id ?? '')).toEqual([200]);
    expect(await page.getByTestId('receipts').textContent()).toContain('(automatic top-up)');
  });
});
