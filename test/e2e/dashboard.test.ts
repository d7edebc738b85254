// The customer dashboard in a real browser (Debian's Chromium) against the whole system:
// wrangler dev, a prober and the fake mail world. A person signs up, makes a key and uses
// it, revokes it, verifies an address, uploads a list and downloads the verdicts, reads the
// history and sets up a webhook; screenshots of every page go to .test-artifacts/.

import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { parse } from 'csv-parse/sync';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';
import { screenshotBothWidths } from './browser/screenshots.ts';
import { type System, startSystem } from './harness.ts';

let system: System;
let browser: TestBrowser;
let page: Page;
let hookServer: Server;
let hookUrl: string;
const hookHits: string[] = [];

const email = `dana-${Date.now()}@example.com`;
const password = 'a long enough password';

beforeAll(async () => {
  hookServer = createServer((request, response) => {
    hookHits.push(request.headers['webhook-id'] as string);
    request.resume();
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => hookServer.listen(0, '127.0.0.1', resolve));
  const address = hookServer.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  hookUrl = `http://127.0.0.1:${address.port}/hooks/rcpt`;
  system = await startSystem({
    vars: {
      SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(9))),
      // The list's tarpit address times out once (the prober's own 3 s greeting limit) and
      // stays unknown. The hub waits long enough for a prober the test holds (holdProber).
      BATCH_MAX_ATTEMPTS: '1',
      BATCH_PROBE_TIMEOUT_MS: '30000',
    },
  });
  browser = await launchChromium({ baseURL: system.stack.baseUrl });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await system?.close();
  await new Promise((resolve) => hookServer?.close(resolve));
});

/** Screenshots at both widths; the page must never scroll sideways. */
async function shoot(name: string): Promise<void> {
  const overflow = await screenshotBothWidths(page, name);
  expect(overflow, `${name} overflows horizontally`).toEqual({ desktop: 0, phone: 0 });
}

function verifyWithKey(key: string, address: string): Promise<Response> {
  return fetch(`${system.stack.baseUrl}/api/v1/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-API-Key': key },
    body: JSON.stringify({ email: address }),
  });
}

describe('the dashboard in a browser', () => {
  it('serves its script and stylesheet as static assets with the protective headers', async () => {
    for (const [path, type] of [
      ['/app.js', /javascript/],
      ['/app.css', /text\/css/],
    ] as const) {
      const response = await fetch(`${system.stack.baseUrl}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toMatch(type);
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
    }
  });

  it('sends a signed-out visitor to the login page, signs up, and gets 100 credits by following the emailed link', async () => {
    await page.goto('/');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/login');
    await shoot('login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await shoot('signup');
    await page.getByRole('button', { name: 'Create account' }).click();
    // The new account is signed in at once.
    await page.waitForURL('**/?welcome=1');
    // No credits before the email is confirmed; the banner says where the link went.
    expect(await page.getByTestId('credit-balance').textContent()).toBe('0');
    expect(await page.getByTestId('confirm-banner').textContent()).toContain(`We sent a link to ${email}`);
    await shoot('unconfirmed-overview');
    await page.goto(await system.confirmationLink(email));
    await page.waitForURL('**/?email-confirmed=new');
    await expect.poll(() => page.getByTestId('credit-balance').textContent()).toBe('100');
    expect(await page.getByTestId('confirm-banner').count()).toBe(0);
    const cookie = (await browser.context.cookies()).find((entry) => entry.name === '__Host-rcpt_session');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax', path: '/' });
  });

  it('logs out with a POST, answers a wrong password with the generic error, and logs back in', async () => {
    await page.getByRole('button', { name: 'Log out' }).first().click();
    await page.waitForURL('**/login?signed-out=1');
    expect((await browser.context.cookies()).some((entry) => entry.name === '__Host-rcpt_session')).toBe(
      false,
    );

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not my password at all');
    const [answer] = await Promise.all([
      page.waitForResponse(
        (response) => response.url().endsWith('/login') && response.request().method() === 'POST',
      ),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    expect(answer.status()).toBe(401);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('That email and password do not match an account.');
    await shoot('login-error');

    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/');
  });

  let apiKey = '';

  it('creates a live key shown once with a copy button, and the key works with the API', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('browser test');
    await page.getByRole('radio', { name: /^Live/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByLabel('API key (live)');
    apiKey = await secret.inputValue();
    expect(apiKey).toMatch(/^rk_live_[A-Za-z0-9_-]{43}$/);
    // app.js reveals the copy button (the field alone is the no-JavaScript fallback).
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);

    const response = await verifyWithKey(apiKey, `alice@${system.world.domains.accept}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      success: true,
      data: { status: 'deliverable' },
      creditsRemaining: 99,
    });

    await page.goto('/keys');
    expect(await page.content()).not.toContain(apiKey);
    expect(await page.locator('code', { hasText: `${apiKey.slice(0, 12)}…` }).count()).toBe(1);
  });

  it('refuses a form whose CSRF token was removed with a 403 page, creating nothing', async () => {
    await page.getByLabel('Name').fill('forged');
    await page.locator('form[action="/keys"] input[name="_csrf"]').evaluate((input) => input.remove());
    const [answer] = await Promise.all([
      page.waitForResponse(
        (response) => response.url().endsWith('/keys') && response.request().method() === 'POST',
      ),
      page.getByRole('button', { name: 'Create key' }).click(),
    ]);
    expect(answer.status()).toBe(403);
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('The form has expired');
    expect(await page.locator('code', { hasText: 'CSRF_FAILED' }).count()).toBe(1);
    await shoot('error-csrf');
    // The API answers the same for a client that posts without the token.
    const bare = await page.request.post('/keys', {
      form: { name: 'forged again', mode: 'live' },
      maxRedirects: 0,
    });
    expect(bare.status()).toBe(403);
    await page.goto('/keys');
    expect(await page.getByRole('cell', { name: /^forged/ }).count()).toBe(0);
  });

  it('revokes the key after a confirmation page, and the API refuses it at once', async () => {
    await page.getByRole('link', { name: /^Revoke browser test/ }).click();
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('Revoke “browser test”?');
    await shoot('keys-revoke');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL('**/keys?revoked=*');
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('is revoked');
    expect(await page.locator('tr', { hasText: 'browser test' }).locator('.badge').textContent()).toBe(
      'revoked',
    );
    await shoot('keys');

    const response = await verifyWithKey(apiKey, `alice@${system.world.domains.accept}`);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'INVALID_API_KEY' });
  });

  it('verifies one address on the Verify page and shows the whole result', async () => {
    await page.getByRole('link', { name: 'Verify', exact: true }).click();
    await page.getByLabel('Email address').fill(`nobody@${system.world.domains.accept}`);
    await page.getByRole('button', { name: 'Verify' }).click();
    const result = page.locator('[data-result-status]');
    await expect.poll(() => result.getAttribute('data-result-status')).toBe('undeliverable');
    expect(await result.textContent()).toContain('mailbox not found');
    expect(await page.getByRole('row', { name: /Mailbox accepted \(SMTP\)/ }).textContent()).toContain('no');
    expect(await page.getByTestId('credits-remaining').textContent()).toBe('98');
    await shoot('verify-result');
  });

  let jobPath = '';

  it('previews a CSV in the browser with counts and cost, then verifies it to 100%', async () => {
    const { accept, catchall, tarpit } = system.world.domains;
    const csv = [
      'name,email,company',
      `Alice,alice@${accept},Acme`,
      `Nobody,nobody@${accept},Acme`,
      `Anyone,anyone@${catchall},Catchall Ltd`,
      `Alice again,alice@${accept},Acme`,
      'Blank,,Nowhere',
      `Slow,alice@${tarpit},Tarpit Inc`,
    ].join('\n');
    await page.getByRole('link', { name: 'Bulk' }).click();
    await page.getByLabel('List name (optional)').fill('browser list');
    const previewed = page.waitForResponse((response) => response.url().endsWith('/bulk/preview'));
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    expect((await previewed).status()).toBe(200);

    const count = (key: string) => page.locator(`[data-preview-count="${key}"]`).textContent();
    await expect.poll(() => count('rows')).toBe('6');
    expect(await count('unique')).toBe('4');
    expect(await count('duplicates')).toBe('1');
    expect(await count('empty')).toBe('1');
    expect(await count('invalid')).toBe('0');
    expect(await count('cost')).toBe('4');
    // The column picker was filled from the file; the email column is chosen and highlighted.
    expect(await page.getByLabel('Email column', { exact: true }).inputValue()).toBe('1');
    expect(await page.locator('.preview-table td.email-column').first().textContent()).toBe(
      `alice@${accept}`,
    );
    await shoot('bulk-preview');

    // Picking a column without addresses says so and leaves nothing to confirm.
    const picker = page.getByLabel('Email column', { exact: true });
    const repicked = () => page.waitForResponse((response) => response.url().endsWith('/bulk/preview'));
    let answered = repicked();
    await picker.selectOption({ label: 'company' });
    await answered;
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('The column “company” holds no email addresses: pick the column that does.');
    expect(await page.getByRole('button', { name: 'No addresses to verify' }).isDisabled()).toBe(true);
    answered = repicked();
    await picker.selectOption({ label: 'email' });
    await answered;
    await expect.poll(() => count('unique')).toBe('4');

    // The prober is held until the running job page has been seen, however slow the page is.
    const releaseProber = system.holdProber();
    try {
      await page.getByRole('button', { name: 'Confirm: verify 4 addresses for 4 credits' }).click();
      await page.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
      jobPath = new URL(page.url()).pathname;
      expect(await page.locator('[data-job-state]').getAttribute('data-job-state')).toBe('processing');
      expect(Number(await page.locator('#job-progress').getAttribute('value'))).toBeLessThan(100);
      expect(await page.getByRole('link', { name: 'CSV: All rows' }).isVisible()).toBe(false);
      // What is left is listed address by address while the prober is held.
      await expect.poll(() => page.locator('[data-job-pending] li').count()).toBe(4);
      expect(await page.getByRole('heading', { name: 'Results so far' }).isVisible()).toBe(true);
      expect(await page.locator('nav.site-nav [aria-current="page"]').textContent()).toBe('Bulk');
      await shoot('job-running');
      // A mark on this document: still there at the end means the page was updated in place.
      await page.evaluate('window.rcptSamePage = true');
    } finally {
      releaseProber();
    }
    const polled = await page.waitForResponse((response) => response.url().endsWith(`${jobPath}/status`));
    expect(polled.status()).toBe(200);
    await expect
      .poll(() => page.locator('[data-job-state]').getAttribute('data-job-state'))
      .toBe('completed');
    expect(await page.evaluate('window.rcptSamePage')).toBe(true);
    expect(await page.locator('#job-progress').getAttribute('value')).toBe('100');
    expect(await page.locator('[data-job-field="processedEmails"]').textContent()).toBe('4');
    // The report is swapped in from the server's page once the job completes.
    await page.getByRole('link', { name: 'CSV: All rows' }).waitFor();
    expect(await page.evaluate('window.rcptSamePage')).toBe(true);
    expect(await page.locator('[data-job-pending]').count()).toBe(0);
    // Every count on the page is the rows of the matching download (the duplicate row and the
    // empty one included): the cards, the filter's options and each subset's size.
    const download = await browser.context.request.get(`${jobPath}/results.csv`);
    const downloaded = parse(await download.text(), { columns: true, bom: true }) as Record<string, string>[];
    expect(downloaded).toHaveLength(6);
    for (const verdict of ['deliverable', 'undeliverable', 'risky', 'unknown']) {
      const rows = downloaded.filter((row) => row.rcpt_status === verdict).length;
      expect(await page.locator(`[data-row-count="${verdict}"]`).textContent(), verdict).toBe(String(rows));
      expect(await page.locator(`#results-status option[value="${verdict}"]`).textContent()).toBe(
        `${verdict} (${rows})`,
      );
    }
    const legend = await page.locator('.mix-legend li').allTextContents();
    expect(legend.reduce((sum, entry) => sum + Number(/(\d+) rows?/.exec(entry)?.[1]), 0)).toBe(6);
    expect(legend.reduce((sum, entry) => sum + Number(/\((\d+)%\)/.exec(entry)?.[1]), 0)).toBe(100);
    for (const [subset, statuses] of [
      ['deliverable', ['deliverable']],
      ['worth-mailing', ['deliverable', 'risky']],
    ] as const) {
      const size = await page.locator(`[data-subset="${subset}"] + .muted`).textContent();
      const rows = downloaded.filter((row) =>
        (statuses as readonly string[]).includes(row.rcpt_status ?? ''),
      );
      expect(size, subset).toContain(`${rows.length} rows`);
    }
    const mix = await page
      .locator('.mix-bar rect')
      .evaluateAll((rects) => rects.map((rect) => rect.getAttribute('class')));
    // The one risky address is the catch-all one: no other risky segment is drawn.
    expect(mix).toEqual(['mix-deliverable', 'mix-undeliverable', 'mix-catch-all', 'mix-unknown']);
    // The estimate is over the five rows that hold an address: one undeliverable, one catch-all
    // (a third), one unknown (a sixth): 1.5 / 5.
    expect(await page.locator('.bounce-figure .big-number').textContent()).toBe('30%');
    expect(await page.locator('.bounce figcaption').textContent()).toContain('Based on 5 rows checked');
    expect(await page.locator('.results-table tbody tr').count()).toBe(6);
    await shoot('job-completed');
  });

  it('filters the results by status and address, and downloads the addresses worth mailing', async () => {
    await page.getByLabel('Status', { exact: true }).selectOption('undeliverable');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\?status=undeliverable&q=#results$/);
    const statuses = () =>
      page
        .locator('.results-table tbody tr')
        .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-result-status')));
    expect(await statuses()).toEqual(['undeliverable', 'undeliverable']);
    await page.getByLabel('Status', { exact: true }).selectOption('');
    await page.getByLabel('Address contains').fill('CATCHALL');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\?status=&q=CATCHALL#results$/);
    expect(await page.locator('.results-table .email-cell').allTextContents()).toEqual([
      `anyone@${system.world.domains.catchall}`,
    ]);
    await shoot('job-filtered');

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'CSV: Deliverable and risky' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('browser-list-deliverable-risky.csv');
    const rows = parse(await readFile(await download.path()), { columns: true, bom: true }) as Record<
      string,
      string
    >[];
    expect(rows.map((row) => [row.name, row.rcpt_status])).toEqual([
      ['Alice', 'deliverable'],
      ['Anyone', 'risky'],
      ['Alice again', 'deliverable'],
    ]);
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.waitForURL(`**${jobPath}#results`);
  });

  it('downloads the results as CSV with the original columns plus the verdicts, and as JSON', async () => {
    const [csvDownload] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'CSV: All rows' }).click(),
    ]);
    expect(csvDownload.suggestedFilename()).toBe('browser-list.csv');
    const rows = parse(await readFile(await csvDownload.path()), { columns: true, bom: true }) as Record<
      string,
      string
    >[];
    expect(Object.keys(rows[0] ?? {})).toEqual([
      'name',
      'email',
      'company',
      'rcpt_status',
      'rcpt_sub_status',
      'rcpt_score',
      'rcpt_is_deliverable',
      'rcpt_reason',
      'rcpt_is_catch_all',
      'rcpt_suggestion',
    ]);
    expect(rows.map((row) => [row.name, row.company, row.rcpt_status, row.rcpt_sub_status])).toEqual([
      ['Alice', 'Acme', 'deliverable', 'accepted_email'],
      ['Nobody', 'Acme', 'undeliverable', 'mailbox_not_found'],
      ['Anyone', 'Catchall Ltd', 'risky', 'catch_all'],
      ['Alice again', 'Acme', 'deliverable', 'accepted_email'],
      ['Blank', 'Nowhere', 'undeliverable', 'invalid_syntax'],
      ['Slow', 'Tarpit Inc', 'unknown', 'smtp_timeout'],
    ]);

    const [jsonDownload] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'JSON: all rows' }).click(),
    ]);
    const body = JSON.parse(await readFile(await jsonDownload.path(), 'utf8')) as {
      results: { status: string }[];
    };
    expect(body.results.map((result) => result.status)).toEqual([
      'deliverable',
      'undeliverable',
      'risky',
      'deliverable',
      'undeliverable',
      'unknown',
    ]);
  });

  it('lists the single and the batch verification in the history, filters by status, and links the job', async () => {
    await page.getByRole('link', { name: 'History' }).click();
    await page.waitForURL('**/history');
    const singleRow = page.locator('tr[data-kind="single"]', {
      hasText: `nobody@${system.world.domains.accept}`,
    });
    expect(await singleRow.count()).toBe(1);
    expect(await page.locator('tr[data-kind="batch"]', { hasText: 'browser list' }).count()).toBe(1);
    await shoot('history');

    await page.getByLabel('Status').selectOption('undeliverable');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL('**/history?*status=undeliverable*');
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Type').selectOption('batch');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: 'browser list' }).click();
    await page.waitForURL(`**${jobPath}`);
  });

  it('shows the balance, the usage chart and the verdict mix on the overview', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    // 100 − 1 (API) − 1 (Verify page) − 4 (the list).
    await expect.poll(() => page.getByTestId('credit-balance').textContent()).toBe('94');
    expect(await page.locator('#usage-chart-desc').textContent()).toMatch(
      /^2 single verifications and 4 batch addresses/,
    );
    expect(await page.locator('.bar-single').count()).toBe(1);
    expect(await page.locator('.bar-batch').count()).toBe(1);
    await shoot('overview');
  });

  it('sets a webhook URL and secret, sends a signed test event and lists the delivery with its status', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill(hookUrl);
    await page.getByRole('button', { name: 'Save URL' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toBe('Webhook URL saved.');
    await page.getByRole('button', { name: 'Create secret' }).click();
    expect(await page.getByRole('textbox', { name: 'Signing secret' }).inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toBe('Test event delivered: HTTP 204.');
    expect(hookHits).toHaveLength(1);
    expect(await page.locator('tr', { hasText: 'webhook.test' }).textContent()).toContain('204');
    await shoot('webhooks');
  });

  it('shows the account page; no page broke its CSP or threw', async () => {
    await page.getByRole('link', { name: 'Account' }).click();
    expect(await page.locator('.details').textContent()).toContain(email);
    await shoot('account');
    // Only the two answers the tests asked for: the wrong password and the forged form.
    expect(browser.problems).toEqual([
      `console: Failed to load resource: the server responded with a status of 401 (Unauthorized) @ ${system.stack.baseUrl}/login`,
      `console: Failed to load resource: the server responded with a status of 403 (Forbidden) @ ${system.stack.baseUrl}/keys`,
    ]);
  });
});
