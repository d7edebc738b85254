// Accessibility of the dashboard pages the customer walk of dashboard.test.ts does not visit
// (the walk checks each page it does): axe-core's WCAG 2 A and AA rules at desktop and phone
// widths (a serious or critical violation fails), and the keyboard path through the sign-in
// form and the keys page (visual order, a visible focus ring).

import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible as expectPageAccessible, seriousViolations } from './browser/axe.ts';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';
import { VIEWPORTS } from './browser/screenshots.ts';
import { signUp, signUpAndConfirm } from './browser/sign-up.ts';
import { type System, startSystem } from './harness.ts';

let system: System;
let browser: TestBrowser;
let page: Page;

const email = `ally-${Date.now()}@example.com`;
const password = 'a long enough password';

beforeAll(async () => {
  system = await startSystem({
    // Purchases on (the fake Stripe): the Credits page shows its packs and settings forms.
    stripe: true,
    vars: { SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))) },
  });
  browser = await launchChromium({ baseURL: system.stack.baseUrl });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await system?.close();
});

/** axe on the current page at both widths; the desktop size is restored afterwards. */
function expectAccessible(name: string): Promise<void> {
  return expectPageAccessible(page, name);
}

interface Focused {
  name: string;
  top: number;
  left: number;
  height: number;
  outline: string;
}

/** Presses Tab `count` times and describes each element that receives the focus. */
async function tabThrough(count: number): Promise<Focused[]> {
  const stops: Focused[] = [];
  for (let index = 0; index < count; index += 1) {
    await page.keyboard.press('Tab');
    stops.push(
      await page.evaluate<Focused>(`(() => {
        const element = document.activeElement;
        const box = element.getBoundingClientRect();
        const style = getComputedStyle(element);
        const label = element.labels && element.labels[0] ? element.labels[0].textContent : '';
        const name = (element.getAttribute('aria-label') || label || element.textContent || '').trim().replace(/\\s+/g, ' ');
        return {
          name: element.tagName.toLowerCase() + ':' + name,
          top: box.top + window.scrollY,
          left: box.left + window.scrollX,
          height: box.height,
          outline: style.outlineStyle === 'none' ? 'none' : style.outlineWidth + ' ' + style.outlineStyle,
        };
      })()`),
    );
  }
  return stops;
}

/** Each stop comes after the previous one in reading order: lower, or on its line further right. */
function outOfVisualOrder(stops: Focused[]): string[] {
  const problems: string[] = [];
  for (let index = 1; index < stops.length; index += 1) {
    const before = stops[index - 1] as Focused;
    const after = stops[index] as Focused;
    const sameLine = Math.abs(after.top - before.top) < Math.min(before.height, after.height) / 2;
    const inOrder = sameLine ? after.left > before.left : after.top > before.top;
    if (!inOrder) problems.push(`${before.name} → ${after.name}`);
  }
  return problems;
}

describe('the dashboard is accessible', () => {
  it('reports what axe finds under the page CSP: an unlabelled field and faint text fail', async () => {
    await page.goto('/login');
    await page.evaluate(`(() => {
      const field = document.createElement('input');
      field.id = 'unlabelled-field';
      const faint = document.createElement('p');
      faint.id = 'faint-text';
      faint.textContent = 'Hard to read';
      faint.style.color = '#d0d0d0';
      document.querySelector('main').append(field, faint);
    })()`);
    const violations = await seriousViolations(page);
    expect(violations.find((line) => line.startsWith('label (critical)'))).toContain('#unlabelled-field');
    expect(violations.find((line) => line.startsWith('color-contrast (serious)'))).toContain('#faint-text');
  });

  it('passes axe on the pages of a forgotten password and a failed sign-in, signed out', async () => {
    // The sign-in and sign-up pages and the new account's overview are checked by the walk
    // (dashboard.test.ts); this account is signed up for the pages it does not visit.
    await signUp(page, email, password);
    await page.getByRole('button', { name: 'Log out' }).first().click();
    await page.waitForURL('**/login?signed-out=1');
    await page.goto('/forgot-password');
    await expectAccessible('forgot password');
    await page.getByLabel('Email').fill(email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByRole('status').waitFor();
    await expectAccessible('forgot password, link sent');
    await page.goto('/login');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await expectAccessible('login with an error');
  });

  it('moves the keyboard focus through the sign-in form in visual order, with a visible focus ring', async () => {
    await page.goto('/login');
    const stops = await tabThrough(8);
    expect(stops.map((stop) => stop.name)).toEqual([
      'a:Skip to content',
      'a:rcpt dashboard',
      'input:Email',
      'input:Password',
      'button:Sign in',
      'a:Forgot password?',
      'a:Create an account',
      'a:API reference',
    ]);
    // The skip link sits over the header when focused; from the brand on, reading order holds.
    expect(outOfVisualOrder(stops.slice(1))).toEqual([]);
    for (const stop of stops) expect(stop.outline, stop.name).toBe('3px solid');

    // The skip link moves the focus to the main content.
    await page.goto('/login');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('main');

    // Signing in from the keyboard alone.
    await page.getByLabel('Email').focus();
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname === '/');
  });

  it('passes axe on the page of a link sent again, keys and webhooks before confirming, and an invalid link', async () => {
    await page.getByRole('button', { name: 'Send the link again' }).click();
    await page.getByText(`We sent a new link to ${email}`).waitFor();
    await expectAccessible('confirmation link sent again');
    // Before confirming, live keys and webhooks wait: the pages say why, accessibly.
    await page.goto('/keys');
    expect(await page.getByRole('radio', { name: /^Live/ }).isDisabled()).toBe(true);
    expect(await page.getByRole('radio', { name: /^Test/ }).isChecked()).toBe(true);
    await expectAccessible('keys before confirming');
    await page.goto('/webhooks');
    expect(await page.getByRole('button', { name: 'Save URL' }).isDisabled()).toBe(true);
    await expectAccessible('webhooks before confirming');
    await page.goto(await system.confirmationLink(email, 1));
    await page.waitForURL('**/?email-confirmed=new');
    expect(await page.getByTestId('credit-balance').textContent()).toBe('100');
    await page.goto('/confirm-email?token=not-a-link');
    await page.getByText('CONFIRMATION_LINK_INVALID').waitFor();
    await expectAccessible('an invalid confirmation link');
  });

  it('passes axe on the keys page, the new secret and the revoke confirmation; the keyboard follows the layout', async () => {
    await page.goto('/keys');
    await expectAccessible('keys, none yet');
    await page.getByLabel('Name').fill('a11y key');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByLabel('API key (live)').inputValue()).toMatch(/^rk_live_/);
    await expectAccessible('keys with a new secret');
    // The copy button's outcome is announced in a live region, not only in its changed label.
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect
      .poll(() => page.locator('[data-copy-status]').textContent())
      .toMatch(/^(Copied to the clipboard\.|Not copied: press Ctrl\+C to copy\.)$/);
    expect(await page.locator('[data-copy-status]').getAttribute('role')).toBe('status');
    await expectAccessible('keys after copying the secret');

    await page.goto('/keys');
    await expectAccessible('keys with one key');
    // From the top: skip link, brand, buy credits, log out, the eleven nav links, then the page's controls.
    const stops = await tabThrough(25);
    expect(stops.map((stop) => stop.name)).toEqual([
      'a:Skip to content',
      'a:rcpt dashboard',
      'a:Buy credits',
      'button:Log out',
      'a:Overview',
      'a:API keys',
      'a:Verify',
      'a:Bulk',
      'a:History',
      'a:Accuracy',
      'a:Outcomes',
      'a:Webhooks',
      'a:Probers',
      'a:Account',
      'a:Docs',
      'input:Name',
      'input:Live: real verifications, 1 credit each',
      'input:verify: the single verify',
      'input:bulk: upload lists and read their jobs',
      'input:read: the account, history and jobs',
      'input:outcomes: report what happened to sends',
      'textarea:Client addresses (optional)',
      'button:Create key',
      expect.stringMatching(/^a:Revoke a11y key \(rk_live_/),
      'a:New publishable key',
    ]);
    expect(outOfVisualOrder(stops.slice(1, 15))).toEqual([]);
    expect(outOfVisualOrder(stops.slice(15))).toEqual([]);
    for (const stop of stops) expect(stop.outline, stop.name).toBe('3px solid');

    // At phone width the order is the same and still follows the layout.
    await page.setViewportSize(VIEWPORTS.phone);
    await page.goto('/keys');
    const phoneStops = await tabThrough(25);
    expect(phoneStops.map((stop) => stop.name)).toEqual(stops.map((stop) => stop.name));
    expect(outOfVisualOrder(phoneStops.slice(15))).toEqual([]);
    // The eleven nav links stay on one row (it scrolls sideways) instead of wrapping to a second.
    expect(new Set(phoneStops.slice(4, 15).map((stop) => Math.round(stop.top))).size).toBe(1);
    await page.setViewportSize(VIEWPORTS.desktop);

    await page.getByRole('link', { name: /^Revoke a11y key/ }).click();
    await page.waitForURL('**/keys/*/revoke');
    await expectAccessible('revoke confirmation');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL('**/keys?revoked=*');
    await expectAccessible('keys with a revoked key');

    // A key limited to scopes and addresses: the form's errors, then the limits in the list.
    await page.getByLabel('Name').fill('limited a11y key');
    await page.getByRole('checkbox', { name: /^verify/ }).uncheck();
    await page.getByRole('checkbox', { name: /^bulk/ }).uncheck();
    await page.getByRole('checkbox', { name: /^read/ }).uncheck();
    await page.getByRole('checkbox', { name: /^outcomes/ }).uncheck();
    await page.getByLabel('Client addresses (optional)').fill('203.0.113.7/24');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-cidrs-error').waitFor();
    expect(await page.getByLabel('Client addresses (optional)').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible('keys with a scope and an address block refused');
    await page.getByRole('checkbox', { name: /^read/ }).check();
    await page.getByLabel('Client addresses (optional)').fill('203.0.113.0/24\n2001:db8::/48');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('API key (live)').waitFor();
    await page.goto('/keys');
    expect(
      await page
        .locator('tr', { hasText: 'limited a11y key' })
        .locator('td[data-label="Limits"]')
        .textContent(),
    ).toBe('scopes: readfrom 203.0.113.0/24, 2001:db8::/48');
    await expectAccessible('keys with a limited key');
  });

  it('passes axe on the publishable key form, its errors, and the keys page listing it with its snippet', async () => {
    await page.goto('/keys');
    await page.getByRole('link', { name: 'New publishable key' }).click();
    await page.waitForURL('**/keys/publishable');
    await expectAccessible('new publishable key');
    await page.getByLabel('Name').fill('a11y shop');
    // An origin with a path passes the browser's own checks and is refused by rcpt.
    await page.getByLabel('Allowed origins').fill('https://shop.example/signup');
    await page.getByRole('button', { name: 'Create publishable key' }).click();
    await page.locator('#publishable-origins-error').waitFor();
    expect(await page.getByLabel('Allowed origins').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible('new publishable key with errors');
    await page.getByLabel('Allowed origins').fill('https://shop.example');
    await page.getByLabel('Daily cap').fill('500');
    // Turnstile is ticked by default, and asks for its secret key.
    expect(
      await page.getByLabel('Require a Turnstile token with every check (recommended)').isChecked(),
    ).toBe(true);
    await page.getByLabel('Turnstile secret key', { exact: true }).fill('0x4AAAAAAA-a11y-secret');
    await page.getByRole('button', { name: 'Create publishable key' }).click();
    await page.waitForURL('**/keys?created=*');
    expect(await page.locator('code.publishable-key').textContent()).toMatch(/^rk_pub_/);
    await expectAccessible('keys with a publishable key');
    await page.getByRole('link', { name: 'a11y shop', exact: true }).click();
    await page.waitForURL('**/keys/publishable/*');
    await expectAccessible("a publishable key's page");
  });

  it('passes axe on the probers page, a new prober token, its errors and the revoke confirmation', async () => {
    // Another person's account: the forms that change an account are limited to a few a minute
    // per account, and the other tests spend the first account's.
    const other = await launchChromium({ baseURL: system.stack.baseUrl });
    try {
      const probers = other.page;
      await signUpAndConfirm(probers, system, `ally-probers-${Date.now()}@example.com`, password);
      await probers.goto('/probers');
      await expectPageAccessible(probers, 'probers, none yet');
      // Spaces pass the browser's `required` and are no name to rcpt.
      await probers.getByLabel('Name').fill('   ');
      await probers.getByRole('button', { name: 'Make token' }).click();
      await probers.locator('#prober-token-name-error').waitFor();
      expect(await probers.getByLabel('Name').getAttribute('aria-invalid')).toBe('true');
      await expectPageAccessible(probers, 'probers with an error');
      await probers.getByLabel('Name').fill('a11y prober');
      await probers.getByRole('button', { name: 'Make token' }).click();
      expect(await probers.getByLabel('Prober token', { exact: true }).inputValue()).toMatch(/^rkp_/);
      await expectPageAccessible(probers, 'probers with a new token');
      await probers.goto('/probers');
      await probers.getByRole('link', { name: /^Revoke a11y prober/ }).click();
      await probers.waitForURL('**/probers/*/revoke');
      await expectPageAccessible(probers, 'prober token revoke confirmation');
      await probers.getByRole('button', { name: 'Revoke token' }).click();
      await probers.waitForURL('**/probers?revoked=*');
      await expectPageAccessible(probers, 'probers with a revoked token');
    } finally {
      await other.close();
    }
  });

  it('passes axe on the verify page, empty, with a result and with an error', async () => {
    await page.goto('/verify');
    await expectAccessible('verify');
    await page.getByLabel('Email address').fill(`alice@${system.world.domains.accept}`);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.locator('[data-result-status="deliverable"]').waitFor();
    await expectAccessible('verify with a result');
    await page.getByLabel('Email address').fill(' ');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('alert').or(page.locator('.field-error')).first().waitFor();
    await expectAccessible('verify with an error');
  });

  it('passes axe on the history, accuracy, outcomes, webhooks, account, credits after a cancelled checkout, overview with usage and error pages', async () => {
    // The Bulk page, its preview, a job and /credits are checked by the walk (dashboard.test.ts).
    await page.goto('/history');
    expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(1);
    await expectAccessible('history');
    await page.goto('/accuracy');
    await expectAccessible('accuracy');
    await page.goto('/outcomes');
    await expectAccessible('outcomes');
    await page.getByLabel('Or paste the CSV').fill('someone@example.com,bounced,yesterday');
    await page.getByRole('button', { name: 'Record outcomes' }).click();
    await page.getByText('Some rows are not outcomes').waitFor();
    await expectAccessible('outcomes with a refused file');
    await page.goto('/webhooks');
    await expectAccessible('webhooks');
    await page.getByLabel('Endpoint URL').fill('http://example.com/hooks');
    await page.getByRole('button', { name: 'Save URL' }).click();
    await page.locator('.field-error').waitFor();
    await expectAccessible('webhooks with an invalid URL');
    await page.getByRole('button', { name: 'Create secret' }).click();
    expect(await page.getByRole('textbox', { name: 'Signing secret' }).inputValue()).toMatch(/^whsec_/);
    await expectAccessible('webhooks with a new secret');
    await page.goto('/');
    expect(await page.locator('.bar-single').count()).toBe(1);
    await expectAccessible('overview with usage');
    await page.goto('/account');
    await expectAccessible('account');
    await page.goto('/credits?checkout=cancelled');
    expect(await page.getByRole('button', { name: 'Continue to payment' }).count()).toBe(1);
    await expectAccessible('credits after a cancelled checkout');
    const missing = await page.goto('/jobs/00000000-0000-4000-8000-000000000000');
    expect(missing?.status()).toBe(404);
    await expectAccessible('not found');
  });
});
