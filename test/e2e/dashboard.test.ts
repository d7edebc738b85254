// The customer dashboard in a real browser (Debian's Chromium) against the whole system:
// wrangler dev, a prober, the fake mail world and the fake Stripe. First one new customer's
// walk, once at 1280 px and once at 375 px: sign-up, the emailed confirmation link, a purchase,
// a list with a greylisted address pending, its completion and every download, with axe and the
// layout checked on every page of rcpt it visits. Then, on the desktop walker's account: signing
// out and in, a key made, used and revoked, the Verify page, filtering the results, the history
// and a webhook. Screenshots of every page go to .test-artifacts/.

import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { parse } from 'csv-parse/sync';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_CARDS } from '../world/fake-stripe.ts';
import { expectAccessible, expectAccessibleHere } from './browser/axe.ts';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';
import { screenshotBothWidths, screenshotHere, VIEWPORTS } from './browser/screenshots.ts';
import { type System, startSystem } from './harness.ts';

let system: System;
let browser: TestBrowser;
let page: Page;
let hookServer: Server;
let hookUrl: string;
const hookHits: string[] = [];

const email = `dana-${Date.now()}@example.com`;
const password = 'a long enough password';
/**
 * How long the greylisting server (milter-greylist's wording, which names the time left) defers
 * a new address: long enough for the running job page to be seen with the address pending.
 */
const GREYLIST_DELAY_MS = 25_000;

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
    stripe: true,
    greylistDelayMs: GREYLIST_DELAY_MS,
    vars: { SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(9))) },
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

/** The balance in the page's header. */
async function headerBalance(on: Page): Promise<number> {
  return Number(((await on.getByTestId('header-balance').textContent()) ?? '').replace(/[^0-9]/g, ''));
}

type CsvRow = Record<string, string>;

/** Clicks a download link and parses the CSV it saves. */
async function downloadCsv(on: Page, link: Locator): Promise<{ name: string; rows: CsvRow[] }> {
  const [download] = await Promise.all([on.waitForEvent('download'), link.click()]);
  const rows = parse(await readFile(await download.path()), { columns: true, bom: true }) as CsvRow[];
  return { name: download.suggestedFilename(), rows };
}

/** The walker's list: quoted commas and umlauts, a repeat, an empty and a broken row, and a greylisting domain. */
function walkList(greylistedAddress: string): { csv: string; expected: string[][] } {
  const { accept, catchall, rbl } = system.world.domains;
  const csv = [
    'name,email,company',
    `Alice,alice@${accept},"Acme, Inc."`,
    `Jörg Müller,nobody@${accept},Müller & Söhne`,
    `Anyone,anyone@${catchall},Catchall Ltd`,
    `Alice again,alice@${accept},"Acme, Inc."`,
    'Blank,,Nowhere',
    `Grey,${greylistedAddress},"Grey, Late & Co"`,
    `Blocked,user1@${rbl},Listed Ltd`,
    'Broken,not an address,Nowhere',
  ].join('\n');
  // name, company, status, subStatus of each row, in upload order.
  const expected = [
    ['Alice', 'Acme, Inc.', 'deliverable', 'accepted_email'],
    ['Jörg Müller', 'Müller & Söhne', 'undeliverable', 'mailbox_not_found'],
    ['Anyone', 'Catchall Ltd', 'risky', 'catch_all'],
    ['Alice again', 'Acme, Inc.', 'deliverable', 'accepted_email'],
    ['Blank', 'Nowhere', 'undeliverable', 'invalid_syntax'],
    // Greylisted at first, asked again after the delay the server named, then accepted.
    ['Grey', 'Grey, Late & Co', 'deliverable', 'accepted_email'],
    // The provider refuses rcpt's address: unknown, and refunded (SPEC §1).
    ['Blocked', 'Listed Ltd', 'unknown', 'antispam_blocked'],
    ['Broken', 'Nowhere', 'undeliverable', 'invalid_syntax'],
  ];
  return { csv, expected };
}

const VERDICTS = ['deliverable', 'undeliverable', 'risky', 'unknown'] as const;
/** The job page's CSV downloads and the verdicts each holds. */
const SUBSETS: Record<string, readonly string[]> = {
  deliverable: ['deliverable'],
  'worth-mailing': ['deliverable', 'risky'],
  'without-undeliverable': ['deliverable', 'risky', 'unknown'],
  all: VERDICTS,
};

/**
 * One new customer's way through the dashboard at one width: sign-up, the emailed link, a
 * purchase on the hosted Checkout page, a list uploaded and watched while an address is
 * greylisted, the report once it completes, every download and the API reference. Every page
 * of rcpt on the way passes axe and fits the width; every count on the job page is the rows
 * of the matching download. Returns the job's path.
 */
async function walk(walker: Page, width: keyof typeof VIEWPORTS, account: string): Promise<string> {
  await walker.setViewportSize(VIEWPORTS[width]);
  const check = async (name: string) => {
    await expectAccessibleHere(walker, `${name} at ${width} width`);
    expect(
      await screenshotHere(walker, `walk-${name.replaceAll(' ', '-')}-${width}`),
      `${name} overflows`,
    ).toBe(0);
  };
  const stripe = system.stripe;
  if (!stripe) throw new Error('the system runs without the fake Stripe');

  // A signed-out visitor lands on the sign-in page and signs up from it; the new account is
  // signed in at once, with no credits until the address is confirmed.
  await walker.goto('/');
  await expect.poll(() => new URL(walker.url()).pathname).toBe('/login');
  await check('login');
  await walker.getByRole('link', { name: 'Create an account' }).click();
  await walker.waitForURL('**/signup');
  await walker.getByLabel('Email').fill(account);
  await walker.getByLabel('Password').fill(password);
  await check('signup');
  await walker.getByRole('button', { name: 'Create account' }).click();
  await walker.waitForURL('**/?welcome=1');
  expect(await headerBalance(walker)).toBe(0);
  expect(await walker.getByTestId('confirm-banner').textContent()).toContain(`We sent a link to ${account}`);
  await check('overview unconfirmed');

  await walker.goto(await system.confirmationLink(account));
  await walker.waitForURL('**/?email-confirmed=new');
  expect(await headerBalance(walker)).toBe(100);
  expect(await walker.getByTestId('confirm-banner').count()).toBe(0);
  await check('overview confirmed');

  // "Buy credits" in the header, a pack paid on the hosted page: the signed webhook went before
  // the browser was sent back, so the header already counts the pack.
  await walker.getByRole('link', { name: 'Buy credits' }).click();
  await walker.waitForURL('**/credits');
  await check('credits');
  await walker.getByRole('button', { name: 'Continue to payment' }).click();
  await walker.waitForURL(`${stripe.url}/checkout/**`);
  // The hosted page stands for Stripe's own, not a page of rcpt: axe is not asked of it.
  await walker.getByLabel('Card number').fill(TEST_CARDS.pays);
  await walker.getByRole('button', { name: /^Pay / }).click();
  await walker.waitForURL('**/credits?checkout=paid');
  expect(await headerBalance(walker)).toBe(1_100);
  expect(await walker.getByTestId('receipts').locator('tbody tr').count()).toBe(1);
  await check('credits paid');

  // The list: previewed in the browser with its counts and cost.
  // An address of its own: the greylister lets a (client, sender, address) through once it waited.
  const greylistedAddress = `user-${width}@${system.world.domains.greylistMilter}`;
  const { csv, expected } = walkList(greylistedAddress);
  const listName = `contacts ${width}`;
  await walker.getByRole('link', { name: 'Bulk', exact: true }).click();
  await walker.waitForURL('**/bulk');
  await check('bulk');
  await walker.getByLabel('List name (optional)').fill(listName);
  const previewed = () => walker.waitForResponse((response) => response.url().endsWith('/bulk/preview'));
  let answered = previewed();
  await walker
    .getByLabel('CSV file')
    .setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  expect((await answered).status()).toBe(200);
  const count = (key: string) => walker.locator(`[data-preview-count="${key}"]`).textContent();
  await expect.poll(() => count('rows')).toBe('8');
  expect(await count('unique')).toBe('5');
  expect(await count('duplicates')).toBe('1');
  expect(await count('empty')).toBe('1');
  expect(await count('invalid')).toBe('1');
  expect(await count('cost')).toBe('5');
  expect(await walker.getByLabel('Email column', { exact: true }).inputValue()).toBe('1');
  await check('bulk preview');
  // A column without addresses is refused before anything is charged.
  const picker = walker.getByLabel('Email column', { exact: true });
  answered = previewed();
  await picker.selectOption({ label: 'company' });
  await answered;
  await expect
    .poll(() => walker.getByRole('alert').textContent())
    .toBe('The column “company” holds no email addresses: pick the column that does.');
  expect(await walker.getByRole('button', { name: 'No addresses to verify' }).isDisabled()).toBe(true);
  await check('bulk preview wrong column');
  answered = previewed();
  await picker.selectOption({ label: 'email' });
  await answered;
  await expect.poll(() => count('unique')).toBe('5');

  // The running job: the greylisted address is listed with when it is asked again.
  await walker.getByRole('button', { name: 'Confirm: verify 5 addresses for 5 credits' }).click();
  await walker.waitForURL(/\/jobs\/[0-9a-f-]{36}$/);
  const jobPath = new URL(walker.url()).pathname;
  // A mark on this document: still there at the end means the page was updated in place.
  await walker.evaluate('window.rcptSamePage = true');
  const greylisted = walker.locator('[data-job-pending] li', { hasText: greylistedAddress });
  await expect
    .poll(() => greylisted.allTextContents())
    .toEqual([expect.stringMatching(/greylisted, asked again at \d{4}-\d\d-\d\d \d\d:\d\d UTC$/)]);
  const retryAt = Date.parse((await greylisted.locator('time').getAttribute('datetime')) ?? '');
  // Asked again when the server said it would let the address through, not later.
  expect(retryAt).toBeGreaterThan(Date.now() - GREYLIST_DELAY_MS);
  expect(retryAt).toBeLessThanOrEqual(Date.now() + GREYLIST_DELAY_MS + 1_000);
  expect(await walker.locator('[data-job-state]').getAttribute('data-job-state')).toBe('processing');
  expect(await walker.getByRole('heading', { name: 'Results so far' }).isVisible()).toBe(true);
  expect(await walker.getByRole('link', { name: 'CSV: All rows' }).count()).toBe(0);
  expect(await walker.locator('nav.site-nav [aria-current="page"]').textContent()).toBe('Bulk');
  await check('job running');

  // Completed: the report is swapped in on the same page.
  await expect
    .poll(() => walker.locator('[data-job-state]').getAttribute('data-job-state'), {
      timeout: GREYLIST_DELAY_MS + 90_000,
    })
    .toBe('completed');
  await walker.locator('[data-job-downloads]').waitFor();
  expect(await walker.evaluate('window.rcptSamePage')).toBe(true);
  expect(await walker.locator('[data-job-pending]').count()).toBe(0);
  expect(await walker.locator('#job-progress').getAttribute('value')).toBe('100');
  await check('job completed');

  // Every download, and every count on the page against the rows of the matching one.
  const all = await downloadCsv(walker, walker.locator('[data-subset="all"]'));
  expect(all.name).toBe(`contacts-${width}.csv`);
  expect(Object.keys(all.rows[0] ?? {})).toEqual([
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
  expect(all.rows.map((row) => [row.name, row.company, row.rcpt_status, row.rcpt_sub_status])).toEqual(
    expected,
  );
  const rowsWith = (statuses: readonly string[]) =>
    all.rows.filter((row) => statuses.includes(row.rcpt_status ?? ''));
  for (const [subset, statuses] of Object.entries(SUBSETS)) {
    const link = walker.locator(`[data-subset="${subset}"]`);
    const file = subset === 'all' ? all : await downloadCsv(walker, link);
    expect(file.rows, subset).toEqual(rowsWith(statuses));
    const size = await walker.locator(`[data-subset="${subset}"] + .muted`).textContent();
    expect(size, subset).toMatch(new RegExp(`^${file.rows.length} rows · `));
  }
  const [json] = await Promise.all([
    walker.waitForEvent('download'),
    walker.getByRole('link', { name: 'JSON: all rows' }).click(),
  ]);
  const jsonRows = (
    JSON.parse(await readFile(await json.path(), 'utf8')) as { results: { status: string }[] }
  ).results;
  expect(jsonRows.map((result) => result.status)).toEqual(all.rows.map((row) => row.rcpt_status));

  const card = (label: string) =>
    walker
      .locator('.count', { has: walker.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
      .locator('dd');
  expect(await card('Rows in the file').textContent()).toBe(String(all.rows.length));
  for (const verdict of VERDICTS) {
    const rows = rowsWith([verdict]).length;
    expect(await walker.locator(`[data-row-count="${verdict}"]`).textContent(), verdict).toBe(String(rows));
    expect(await walker.locator(`#results-status option[value="${verdict}"]`).textContent()).toBe(
      `${verdict} (${rows})`,
    );
  }
  const catchAllRows = all.rows.filter((row) => row.rcpt_is_catch_all === 'true').length;
  expect(await walker.locator('[data-row-count="catch-all"]').textContent()).toBe(String(catchAllRows));
  const emptyRows = all.rows.filter((row) => row.email === '').length;
  expect(await card('Empty rows').textContent()).toBe(String(emptyRows));
  const invalidRows = all.rows.filter((row) => row.email !== '' && row.rcpt_sub_status === 'invalid_syntax');
  expect(await card('Invalid rows').textContent()).toBe(String(invalidRows.length));
  const seen = new Set<string>();
  let duplicateRows = 0;
  for (const row of all.rows.filter((entry) => entry.rcpt_sub_status !== 'invalid_syntax')) {
    if (seen.has(row.email ?? '')) duplicateRows += 1;
    seen.add(row.email ?? '');
  }
  expect(await card('Duplicate rows').textContent()).toBe(String(duplicateRows));
  // Progress counts unique addresses, as the API does (SPEC §2.2).
  expect(await walker.locator('[data-job-field="processedEmails"]').textContent()).toBe(String(seen.size));
  expect(await walker.locator('[data-job-field="totalEmails"]').textContent()).toBe(String(seen.size));
  expect(await walker.locator('.results-summary').textContent()).toMatch(
    new RegExp(`^${all.rows.length} rows`),
  );
  expect(await walker.locator('.results-table tbody tr').count()).toBe(all.rows.length);
  const legend = await walker.locator('.mix-legend li').allTextContents();
  expect(legend.reduce((sum, entry) => sum + Number(/(\d+) rows?/.exec(entry)?.[1]), 0)).toBe(
    all.rows.length,
  );
  expect(legend.reduce((sum, entry) => sum + Number(/\((\d+)%\)/.exec(entry)?.[1]), 0)).toBe(100);
  expect(await walker.locator('.bounce figcaption').textContent()).toContain(
    `Based on ${all.rows.length - emptyRows} rows checked`,
  );

  // The reference, from the navigation.
  await walker.getByRole('link', { name: 'Docs', exact: true }).click();
  await walker.waitForURL('**/docs');
  await check('docs');
  return jobPath;
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

  let jobPath = '';

  // The two walks are two customers (own account, browser, list and greylisted address): they
  // run side by side, each waiting out its greylisting while the other goes on.
  it.concurrent('walks a new customer from sign-up to every download at 1280 px, axe clean on every page', async () => {
    jobPath = await walk(page, 'desktop', email);
    const cookie = (await browser.context.cookies()).find((entry) => entry.name === '__Host-rcpt_session');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax', path: '/' });
  });

  it.concurrent('walks the same way at 375 px, axe clean on every page, nothing wider than the phone', async () => {
    const phone = await launchChromium({ baseURL: system.stack.baseUrl });
    try {
      await walk(phone.page, 'phone', `dana-phone-${Date.now()}@example.com`);
      expect(phone.problems).toEqual([]);
    } finally {
      await phone.close();
    }
  });

  it('logs out with a POST, answers a wrong password with the generic error, and logs back in', async () => {
    await page.goto('/');
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
      // 100 free + 1,000 bought − 5 for the list + 1 refunded (the blocked address) − this one.
      creditsRemaining: 1_095,
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
    expect(await page.getByTestId('credits-remaining').textContent()).toBe('1094');
    // The header of the page that spent the credit counts it too.
    expect(await headerBalance(page)).toBe(1_094);
    await shoot('verify-result');
  });

  it('filters the results by status and address, and downloads the addresses worth mailing', async () => {
    await page.goto(jobPath);
    await page.getByLabel('Status', { exact: true }).selectOption('undeliverable');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\?status=undeliverable&q=#results$/);
    const statuses = () =>
      page
        .locator('.results-table tbody tr')
        .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-result-status')));
    expect(await statuses()).toEqual(['undeliverable', 'undeliverable', 'undeliverable']);
    await expectAccessible(page, 'job results filtered');
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
    expect(download.suggestedFilename()).toBe('contacts-desktop-deliverable-risky.csv');
    const rows = parse(await readFile(await download.path()), { columns: true, bom: true }) as Record<
      string,
      string
    >[];
    expect(rows.map((row) => [row.name, row.rcpt_status])).toEqual([
      ['Alice', 'deliverable'],
      ['Anyone', 'risky'],
      ['Alice again', 'deliverable'],
      ['Grey', 'deliverable'],
    ]);
    await page.getByLabel('Address contains').fill('no such address');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No row matches this filter.').waitFor();
    await expectAccessible(page, 'job results with no match');
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.waitForURL(`**${jobPath}#results`);
  });

  it('lists the single and the batch verification in the history, filters by status, and links the job', async () => {
    await page.getByRole('link', { name: 'History' }).click();
    await page.waitForURL('**/history');
    const singleRow = page.locator('tr[data-kind="single"]', {
      hasText: `nobody@${system.world.domains.accept}`,
    });
    expect(await singleRow.count()).toBe(1);
    expect(await page.locator('tr[data-kind="batch"]', { hasText: 'contacts desktop' }).count()).toBe(1);
    await shoot('history');

    await page.getByLabel('Status').selectOption('undeliverable');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL('**/history?*status=undeliverable*');
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Type').selectOption('batch');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: 'contacts desktop' }).click();
    await page.waitForURL(`**${jobPath}`);
  });

  it('shows the balance, the usage chart and the verdict mix on the overview', async () => {
    await page.getByRole('link', { name: 'Overview' }).click();
    // 100 + 1,000 − 4 (the list, one refunded) − 1 (API) − 1 (Verify page).
    await expect.poll(() => page.getByTestId('credit-balance').textContent()).toBe('1,094');
    expect(await page.locator('#usage-chart-desc').textContent()).toMatch(
      /^2 single verifications and 5 batch addresses/,
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
