// The dashboard in a browser with JavaScript switched off: every task a form suffices for
// works on the server-rendered pages alone. A person signs up and in, makes a key, verifies
// an address, uploads a list (no preview without script: the job starts at once), watches
// the job page refresh itself to the end, downloads the verdicts, reads the history,
// revokes the key and signs out.

import { parse } from 'csv-parse/sync';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';
import { type System, startSystem } from './harness.ts';

let system: System;
let browser: TestBrowser;
let page: Page;

const email = `noscript-${Date.now()}@example.com`;
const password = 'a long enough password';

beforeAll(async () => {
  system = await startSystem({
    vars: {
      // The list's tarpit address times out once (the prober's own 3 s greeting limit) and
      // stays unknown. The hub waits long enough for a prober the test holds (holdProber).
      BATCH_MAX_ATTEMPTS: '1',
      BATCH_PROBE_TIMEOUT_MS: '30000',
    },
  });
  browser = await launchChromium({ baseURL: system.stack.baseUrl, javaScriptEnabled: false });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await system?.close();
});

function verifyWithKey(key: string, address: string): Promise<Response> {
  return fetch(`${system.stack.baseUrl}/api/v1/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-API-Key': key },
    body: JSON.stringify({ email: address }),
  });
}

async function sessionCookie() {
  return (await browser.context.cookies()).find((cookie) => cookie.name === '__Host-rcpt_session');
}

describe('the dashboard without JavaScript', () => {
  it('signs up, confirms the email with the emailed link, and signs in with 100 credits', async () => {
    await page.goto('/signup');
    // The form is bound to a __Host- cookie, which the browser keeps over http://127.0.0.1 (a
    // secure context) and sends back with the form.
    expect(
      (await browser.context.cookies()).find((cookie) => cookie.name === '__Host-rcpt_csrf'),
    ).toMatchObject({
      secure: true,
      path: '/',
      httpOnly: true,
    });
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    // Signed in at once, without credits until the emailed link is followed.
    await page.waitForURL('**/?welcome=1');
    expect(await sessionCookie()).toMatchObject({ httpOnly: true, secure: true });
    expect(await page.getByTestId('credit-balance').textContent()).toBe('0');

    // Followed from a mail client signed out: the login page says it worked.
    await page.getByRole('button', { name: 'Log out' }).first().click();
    await page.waitForURL('**/login?signed-out=1');
    await page.goto(await system.confirmationLink(email));
    await page.waitForURL('**/login?email-confirmed=new');
    expect(await page.getByRole('status').textContent()).toContain('Your email address is confirmed');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/');
    expect(await page.getByTestId('credit-balance').textContent()).toBe('100');
    expect(await page.getByTestId('confirm-banner').count()).toBe(0);
    expect(await sessionCookie()).toMatchObject({ httpOnly: true, secure: true });
  });

  let apiKey = '';

  it('creates an API key shown in a read-only field (no copy button), and the key works', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL('**/keys');
    await page.getByLabel('Name').fill('no-script key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByLabel('API key (live)');
    apiKey = await secret.inputValue();
    expect(apiKey).toMatch(/^rk_live_[A-Za-z0-9_-]{43}$/);
    expect(await secret.getAttribute('readonly')).not.toBeNull();
    expect(await page.getByRole('button', { name: 'Copy' }).count()).toBe(0);

    const response = await verifyWithKey(apiKey, `bob@${system.world.domains.accept}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ data: { status: 'deliverable' }, creditsRemaining: 99 });
  });

  it('verifies one address with the Verify form and shows the result on the answer page', async () => {
    await page.getByRole('link', { name: 'Verify', exact: true }).click();
    await page.getByLabel('Email address').fill(`alice@${system.world.domains.accept}`);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL('**/verify');
    const result = page.locator('[data-result-status]');
    expect(await result.getAttribute('data-result-status')).toBe('deliverable');
    expect(await result.locator('.badge').first().textContent()).toBe('deliverable');
    expect(await page.getByRole('row', { name: /Mailbox accepted \(SMTP\)/ }).textContent()).toContain('yes');
    expect(await page.getByTestId('credits-remaining').textContent()).toBe('98');
  });

  let jobPath = '';

  it('uploads a CSV with the Bulk form, and the job page refreshes itself until completed', async () => {
    const { accept, tarpit } = system.world.domains;
    const csv = [
      'email,name',
      `alice@${accept},Alice`,
      `nobody@${accept},Nobody`,
      `slow@${tarpit},Slow`,
    ].join('\n');
    await page.getByRole('link', { name: 'Bulk' }).click();
    await page.getByLabel('List name (optional)').fill('no-script list');
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'list.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    // app.js did not run: the drop hint it reveals is still hidden, and there is no preview;
    // the one button submits the form and the job is created.
    expect(await page.locator('.js-only').getAttribute('hidden')).not.toBeNull();
    expect(await page.locator('[data-preview]').isVisible()).toBe(false);
    // The prober is held until the running job page has been seen, however slow the page is:
    // the page then has to refresh itself to see the job finish.
    const releaseProber = system.holdProber();
    try {
      await page.getByRole('button', { name: 'Verify list' }).click();
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
      jobPath = new URL(page.url()).pathname;

      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('no-script list');
      expect(['pending', 'processing']).toContain(
        await page.locator('[data-job-state]').getAttribute('data-job-state'),
      );
      expect(await page.locator('meta[http-equiv="refresh"]').getAttribute('content')).toBe('2');
      expect(await page.getByRole('link', { name: 'CSV: All rows' }).isVisible()).toBe(false);
    } finally {
      releaseProber();
    }

    // Each refresh is a new document load of the same URL.
    let reloads = 0;
    const countReload = () => {
      reloads += 1;
    };
    page.on('load', countReload);
    await page.locator('[data-job-state="completed"]').waitFor();
    page.off('load', countReload);
    expect(reloads).toBeGreaterThan(0);
    expect(new URL(page.url()).pathname).toBe(jobPath);
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
    expect(await page.locator('#job-progress').getAttribute('value')).toBe('100');
    expect(await page.locator('[data-job-field="processedEmails"]').textContent()).toBe('3');
    expect(await page.locator('[data-row-count="deliverable"]').textContent()).toBe('1');
    expect(await page.locator('[data-row-count="undeliverable"]').textContent()).toBe('1');
    expect(await page.locator('[data-row-count="unknown"]').textContent()).toBe('1');
    expect(await page.getByRole('link', { name: 'CSV: All rows' }).isVisible()).toBe(true);
    // One bar segment per verdict that has addresses (none was risky); the legend lists all.
    expect(await page.locator('.mix-bar rect').count()).toBe(3);
    expect(await page.locator('.mix-legend li').count()).toBe(5);
    expect(await page.locator('.bounce-gauge .gauge-marker').count()).toBe(1);
  });

  it('filters and searches the results with the plain GET form, and downloads a subset by its link', async () => {
    await page.getByLabel('Status', { exact: true }).selectOption('unknown');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\?status=unknown&q=#results$/);
    expect(await page.locator('.results-table .email-cell').allTextContents()).toEqual([
      `slow@${system.world.domains.tarpit}`,
    ]);
    await page.getByLabel('Status', { exact: true }).selectOption('');
    await page.getByLabel('Address contains').fill('nobody@');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\?status=&q=nobody%40#results$/);
    expect(await page.locator('.results-table tbody tr').getAttribute('data-result-status')).toBe(
      'undeliverable',
    );

    const href = await page.getByRole('link', { name: 'CSV: All but undeliverable' }).getAttribute('href');
    expect(href).toBe(`${jobPath}/results.csv?status=deliverable%2Crisky%2Cunknown`);
    const response = await browser.context.request.get(href as string);
    expect(response.status()).toBe(200);
    const rows = parse(await response.body(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.name, row.rcpt_status])).toEqual([
      ['Alice', 'deliverable'],
      ['Slow', 'unknown'],
    ]);
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.waitForURL(`**${jobPath}#results`);
  });

  it('downloads the verdicts as CSV through the link, with the session cookie', async () => {
    const href = await page.getByRole('link', { name: 'CSV: All rows' }).getAttribute('href');
    expect(href).toBe(`${jobPath}/results.csv`);
    const response = await browser.context.request.get(href as string);
    expect(response.status()).toBe(200);
    expect(response.headers()['content-type']).toMatch(/^text\/csv/);
    const rows = parse(await response.body(), { columns: true, bom: true }) as Record<string, string>[];
    expect(rows.map((row) => [row.name, row.email, row.rcpt_status, row.rcpt_sub_status])).toEqual([
      ['Alice', `alice@${system.world.domains.accept}`, 'deliverable', 'accepted_email'],
      ['Nobody', `nobody@${system.world.domains.accept}`, 'undeliverable', 'mailbox_not_found'],
      ['Slow', `slow@${system.world.domains.tarpit}`, 'unknown', 'smtp_timeout'],
    ]);

    // The same link without the session is refused.
    const anonymous = await fetch(`${system.stack.baseUrl}${href}`, { redirect: 'manual' });
    expect(anonymous.status).not.toBe(200);
  });

  it('lists the single verification and the list in the history, and filters with the form', async () => {
    await page.getByRole('link', { name: 'History' }).click();
    await page.waitForURL('**/history');
    expect(
      await page
        .locator('tr[data-kind="single"]', { hasText: `alice@${system.world.domains.accept}` })
        .count(),
    ).toBe(1);
    const batch = page.locator('tr[data-kind="batch"]', { hasText: 'no-script list' });
    expect(await batch.count()).toBe(1);
    expect(await batch.locator('.badge').textContent()).toBe('completed');

    await page.getByLabel('Type').selectOption('batch');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL('**/history?kind=batch*');
    expect(await page.locator('tr[data-kind="single"]').count()).toBe(0);
    await page.getByRole('link', { name: 'no-script list' }).click();
    await page.waitForURL(`**${jobPath}`);
  });

  it('revokes the key after its confirmation page, and the API refuses it', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('link', { name: /^Revoke no-script key/ }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Revoke “no-script key”?');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL('**/keys?revoked=*');
    expect(await page.getByRole('status').first().textContent()).toContain('is revoked');
    expect(await page.locator('tr', { hasText: 'no-script key' }).locator('.badge').textContent()).toBe(
      'revoked',
    );

    const response = await verifyWithKey(apiKey, `alice@${system.world.domains.accept}`);
    expect(response.status).toBe(401);
  });

  it('signs out with the Log out button, and the pages ask to sign in again', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login?signed-out=1');
    expect(await page.getByRole('status').textContent()).toBe('You are signed out.');
    expect(await sessionCookie()).toBeUndefined();
    await page.goto('/keys');
    expect(new URL(page.url()).pathname).toBe('/login');
    // No page logged an error or broke its CSP on the way.
    expect(browser.problems).toEqual([]);
  });
});
