// The form widget and publishable keys in a real browser (Debian's Chromium) against the whole
// system: a customer makes a publishable key in the dashboard for their page's origin; the
// page, served by this test from another origin under a strict CSP with Trusted Types, checks
// its email field through the widget. The same page from an origin the key does not list, and
// any other route called with the key, are refused; the daily cap holds under a burst, and a
// key with Turnstile on takes a fresh token with each check.

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Page, Request as PageRequest, Response as PageResponse } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLISHABLE_TURNSTILE_ACTION } from '../../edge/src/services/accounts/turnstile-actions.ts';
import { seriousViolations } from './browser/axe.ts';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';
import { signUpAndConfirm } from './browser/sign-up.ts';
import { type System, startSystem } from './harness.ts';
import { type FakeSiteverify, startFakeSiteverify } from './turnstile-siteverify.ts';

let system: System;
let browser: TestBrowser;
let page: Page;
let listed: PageServer;
let unlisted: PageServer;
let key = '';
let cappedKey = '';
let turnstileKey = '';
let siteverify: FakeSiteverify;
const TURNSTILE_SECRET = 'customer-turnstile-secret';

const email = `pat-${Date.now()}@example.com`;
const password = 'a long enough password';
const WIDGET_TIMEOUT_MS = 1500;

interface PageServer {
  server: Server;
  origin: string;
  /** The forms the page's visitors submitted, in order. */
  submissions: URLSearchParams[];
}

/**
 * A customer's sign-up page, with the widget; `?block=on` turns on its blocking behaviour,
 * `?turnstile=on` uses the key with Turnstile and puts a Turnstile widget's token field on the
 * page (with the next tokens a `reset()` brings, issued by the fake Siteverify).
 */
function signupPage(edge: string, query: URLSearchParams): string {
  const block = query.get('block') === 'on' ? ' data-rcpt-block="on"' : '';
  const turnstile = query.get('turnstile') === 'on';
  // Solved on this page (the page server listens on 127.0.0.1) by a widget with rcpt's action.
  const solved = { hostname: '127.0.0.1', action: PUBLISHABLE_TURNSTILE_ACTION };
  const tokens = turnstile ? Array.from({ length: 4 }, () => siteverify.issueToken(solved)) : [];
  const turnstileField = turnstile
    ? `<input type="hidden" name="cf-turnstile-response" value="${tokens[0]}" data-next-tokens="${tokens.slice(1).join(' ')}">
<script src="/turnstile-stub.js"></script>`
    : '';
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign up to the shop</title></head>
<body>
<main>
<h1>Sign up</h1>
<form method="post" action="/signup">
<p><label for="email">Email</label> <input id="email" name="email" type="email" autocomplete="email"></p>
<p><label for="name">Name</label> <input id="name" name="name" autocomplete="name"></p>
<p><button type="submit">Sign up</button></p>
${turnstileField}
</form>
</main>
<script src="${edge}/widget.js" data-rcpt-key="${turnstile ? turnstileKey : key}" data-rcpt-timeout="${WIDGET_TIMEOUT_MS}"${block}${turnstile ? ' data-rcpt-turnstile="on"' : ''} defer></script>
</body>
</html>`;
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function startPageServer(edge: string): Promise<PageServer> {
  const submissions: URLSearchParams[] = [];
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', 'http://page.test');
    if (request.method === 'POST' && url.pathname === '/signup') {
      submissions.push(new URLSearchParams(await readBody(request)));
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<!doctype html><html lang="en"><title>Thanks</title><h1>Thanks</h1></html>');
      return;
    }
    if (url.pathname === '/turnstile-stub.js') {
      // Stands in for Turnstile's api.js (which this test cannot load): `turnstile.reset()` puts
      // the next token in the form's field, as the real widget does after a new challenge.
      response.writeHead(200, { 'content-type': 'text/javascript' });
      response.end(`window.turnstile = {
  reset() {
    const field = document.querySelector('[name="cf-turnstile-response"]');
    const next = (field.dataset.nextTokens || '').split(' ').filter(Boolean);
    field.value = next.shift() || '';
    field.dataset.nextTokens = next.join(' ');
  },
};`);
      return;
    }
    if (url.pathname !== '/') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      // The strictest policy a customer might run: scripts and calls only to rcpt, no inline
      // script or style, and Trusted Types for every DOM sink that parses markup.
      'content-security-policy': [
        "default-src 'none'",
        `script-src 'self' ${edge}`,
        `connect-src ${edge}`,
        "form-action 'self'",
        "base-uri 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
      ].join('; '),
    });
    response.end(signupPage(edge, url.searchParams));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return { server, origin: `http://127.0.0.1:${address.port}`, submissions };
}

beforeAll(async () => {
  siteverify = await startFakeSiteverify(TURNSTILE_SECRET);
  system = await startSystem({
    vars: {
      SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(5))),
      TURNSTILE_SITEVERIFY_URL: siteverify.url,
    },
  });
  listed = await startPageServer(system.stack.baseUrl);
  unlisted = await startPageServer(system.stack.baseUrl);
  browser = await launchChromium({ baseURL: system.stack.baseUrl });
  page = browser.page;
});

afterAll(async () => {
  await browser?.close();
  await system?.close();
  for (const pageServer of [listed, unlisted])
    await new Promise((resolve) => pageServer?.server.close(resolve));
});

const region = () => page.locator('[data-rcpt-message]');
const emailField = () => page.getByLabel('Email');

/**
 * Types `address` into the email field and leaves it with Tab: the status of the check's
 * answer, or 'withheld' when the browser kept the answer from the page (no CORS permission).
 */
async function leaveFieldWith(address: string): Promise<number | 'withheld'> {
  await emailField().fill('');
  await emailField().focus();
  await page.keyboard.type(address);
  const isCheck = (request: PageRequest) =>
    request.url().endsWith('/api/v1/verify') && request.method() === 'POST';
  // Whichever comes first; the test's timeout is the outer limit.
  const answered = new Promise<number | 'withheld'>((resolve) => {
    const onResponse = (response: PageResponse) => {
      if (isCheck(response.request())) settle(response.status());
    };
    const onFailed = (request: PageRequest) => {
      if (isCheck(request)) settle('withheld');
    };
    const settle = (outcome: number | 'withheld') => {
      page.off('response', onResponse);
      page.off('requestfailed', onFailed);
      resolve(outcome);
    };
    page.on('response', onResponse);
    page.on('requestfailed', onFailed);
  });
  await page.keyboard.press('Tab');
  return answered;
}

/** Waits until the widget has handled the check of the field (its region has a state). */
async function widgetSettled(state: string): Promise<void> {
  await expect.poll(() => region().getAttribute('data-rcpt-state')).toBe(state);
}

describe('publishable keys and the form widget in a browser', () => {
  it('serves the widget to pages of other origins (CORS for Subresource Integrity, CORP for COEP pages)', async () => {
    const response = await fetch(`${system.stack.baseUrl}/widget.js`, {
      headers: { 'accept-encoding': 'identity', origin: listed.origin },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/javascript/);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
  });

  it('makes a publishable key for the page’s origin and a daily cap in the dashboard', async () => {
    // Publishable keys are live keys: they wait for the confirmed email address.
    await signUpAndConfirm(page, system, email, password);

    const create = async (name: string, cap: number, turnstileSecret = ''): Promise<string> => {
      await page.goto('/keys/publishable');
      await page.getByLabel('Name').fill(name);
      await page.getByLabel('Allowed origins').fill(`${listed.origin}\n`);
      await page.getByLabel('Daily cap').fill(String(cap));
      // Turnstile is ticked by default: a key without it is unticked on purpose.
      const turnstile = page.getByLabel('Require a Turnstile token with every check (recommended)');
      if (turnstileSecret) {
        expect(await turnstile.isChecked()).toBe(true);
        await page.getByLabel('Turnstile secret key', { exact: true }).fill(turnstileSecret);
      } else {
        await turnstile.uncheck();
      }
      await page.getByRole('button', { name: 'Create publishable key' }).click();
      await page.waitForURL('**/keys?created=*');
      const row = page.locator('tr', { hasText: name });
      expect(await row.locator('td[data-label="Origins"]').textContent()).toBe(listed.origin);
      const value = await row.locator('code.publishable-key').textContent();
      expect(value).toMatch(/^rk_pub_[A-Za-z0-9_-]{43}$/);
      expect(await row.locator('pre.snippet').textContent()).toBe(
        `<script src="${system.stack.baseUrl}/widget.js" data-rcpt-key="${value}" defer></script>`,
      );
      return value ?? '';
    };
    key = await create('shop sign-up', 50);
    cappedKey = await create('capped', 3);
    turnstileKey = await create('with turnstile', 50, TURNSTILE_SECRET);
    expect(
      await page
        .locator('tr', { hasText: 'with turnstile' })
        .locator('td[data-label="Turnstile"]')
        .textContent(),
    ).toBe('required');
  });

  it('suggests the likely address for a typo, applied from the keyboard alone, announced politely', async () => {
    await page.goto(`${listed.origin}/`);
    expect(await region().getAttribute('aria-live')).toBe('polite');
    const described = await emailField().getAttribute('aria-describedby');
    expect(described).toBe(await region().getAttribute('id'));

    expect(await leaveFieldWith('alice@gmial.com')).toBe(200);
    await widgetSettled('typo');
    expect((await region().textContent())?.trim()).toBe('Did you mean alice@gmail.com?');
    // Tab moved on to the name field; Shift+Tab reaches the suggestion, Enter applies it.
    await page.keyboard.press('Shift+Tab');
    expect(await page.evaluate<string>('document.activeElement.className')).toBe('rcpt-suggestion');
    await page.keyboard.press('Enter');
    expect(await emailField().inputValue()).toBe('alice@gmail.com');
    await widgetSettled('applied');
    expect(await region().textContent()).toBe('Address changed to alice@gmail.com.');
    expect(await page.evaluate<string>('document.activeElement.id')).toBe('email');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('says when an address cannot receive mail, and leaves the form free to submit', async () => {
    await page.goto(`${listed.origin}/`);
    expect(await leaveFieldWith(`nobody@${system.world.domains.accept}`)).toBe(200);
    await widgetSettled('undeliverable');
    expect(await region().textContent()).toBe('This address cannot receive email. Please check it.');
    expect(await emailField().getAttribute('aria-invalid')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    // Typing again clears the message at once.
    await emailField().press('End');
    await page.keyboard.type('x');
    await widgetSettled('none');
    expect(await emailField().getAttribute('aria-invalid')).toBeNull();

    const before = listed.submissions.length;
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.waitForURL('**/signup');
    expect(listed.submissions.length).toBe(before + 1);
  });

  it('says when an address is disposable, and says nothing about a deliverable one', async () => {
    await page.goto(`${listed.origin}/`);
    expect(await leaveFieldWith('someone@mailinator.com')).toBe(200);
    await widgetSettled('disposable');
    expect(await region().textContent()).toBe(
      'This looks like a disposable address. Please use one you will keep.',
    );

    expect(await leaveFieldWith(`alice@${system.world.domains.accept}`)).toBe(200);
    await widgetSettled('none');
    expect(await region().textContent()).toBe('');
    expect(await emailField().getAttribute('aria-invalid')).toBeNull();
  });

  it('with blocking on, stops the submit of an undeliverable address with the browser’s own validation', async () => {
    await page.goto(`${listed.origin}/?block=on`);
    expect(await leaveFieldWith(`nobody@${system.world.domains.accept}`)).toBe(200);
    await widgetSettled('undeliverable');
    const before = listed.submissions.length;
    await page.getByRole('button', { name: 'Sign up' }).click();
    expect(
      await emailField().evaluate(
        (field) => (field as unknown as { validity: { customError: boolean } }).validity.customError,
      ),
    ).toBe(true);
    expect(await page.evaluate<string>('location.pathname')).toBe('/');
    expect(listed.submissions.length).toBe(before);
  });

  it('never blocks the form when rcpt cannot answer in time, even with blocking on', async () => {
    const resume = system.holdProber();
    try {
      await page.goto(`${listed.origin}/?block=on`);
      await emailField().focus();
      await page.keyboard.type(`bob@${system.world.domains.accept}`);
      const abandoned = page.waitForEvent(
        'requestfailed',
        (request) => request.url().endsWith('/api/v1/verify') && request.method() === 'POST',
      );
      await page.keyboard.press('Tab');
      // The widget gives up after its timeout (the edge is still waiting for the frozen prober).
      await abandoned;
      await widgetSettled('none');
      expect(
        await emailField().evaluate(
          (field) => (field as unknown as { validity: { valid: boolean } }).validity.valid,
        ),
      ).toBe(true);
      const before = listed.submissions.length;
      await page.getByRole('button', { name: 'Sign up' }).click();
      await page.waitForURL('**/signup');
      expect(listed.submissions.at(before)?.get('email')).toBe(`bob@${system.world.domains.accept}`);
    } finally {
      resume();
    }
  });

  it('with Turnstile on, sends a fresh token with each check and is refused without one', async () => {
    await page.goto(`${listed.origin}/?turnstile=on`);
    const tokenField = page.locator('[name="cf-turnstile-response"]');
    const first = await tokenField.inputValue();
    expect(await leaveFieldWith(`nobody@${system.world.domains.accept}`)).toBe(200);
    await widgetSettled('undeliverable');
    // A token is good once: the widget asked the page's Turnstile for the next one.
    await expect.poll(() => tokenField.inputValue()).not.toBe(first);
    expect(await leaveFieldWith('alice@gmial.com')).toBe(200);
    await widgetSettled('typo');
    const asked = siteverify.calls.slice(-2);
    expect(asked.map((call) => [call.secret, call.success])).toEqual([
      [TURNSTILE_SECRET, true],
      [TURNSTILE_SECRET, true],
    ]);
    expect(asked[0]?.response).toBe(first);
    expect(asked[1]?.response).not.toBe(first);

    // Without a token (the visitor never passed the challenge), rcpt refuses and the widget is silent.
    await tokenField.evaluate((field) => {
      (field as unknown as { value: string; dataset: Record<string, string> }).value = '';
      (field as unknown as { dataset: Record<string, string> }).dataset.nextTokens = '';
    });
    expect(await leaveFieldWith(`alice@${system.world.domains.accept}`)).toBe(403);
    await widgetSettled('none');
  });

  it('ran under the page’s strict CSP and Trusted Types without a violation', () => {
    const violations = browser.problems.filter((problem) =>
      /Content Security Policy|TrustedHTML|Trusted Type/i.test(problem),
    );
    expect(violations).toEqual([]);
  });

  it('is refused for a page of an origin the key does not list: nothing is said, the form still submits', async () => {
    await page.goto(`${unlisted.origin}/`);
    // The edge answers 403 without CORS permission (below), so the browser withholds it.
    expect(await leaveFieldWith(`nobody@${system.world.domains.accept}`)).toBe('withheld');
    await widgetSettled('none');
    expect(await region().textContent()).toBe('');
    const before = unlisted.submissions.length;
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.waitForURL('**/signup');
    expect(unlisted.submissions.length).toBe(before + 1);

    const refused = await fetch(`${system.stack.baseUrl}/api/v1/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, origin: unlisted.origin },
      body: JSON.stringify({ email: `alice@${system.world.domains.accept}` }),
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect(await refused.json()).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED' });
  });

  it('is refused on every other route, in the page (no CORS answer) and outside it (403)', async () => {
    await page.goto(`${listed.origin}/`);
    const fromPage = await page.evaluate(
      async ([edge, publishable]) => {
        try {
          await fetch(`${edge}/api/v1/history`, { headers: { 'x-api-key': publishable } });
          return 'read';
        } catch (error) {
          return (error as Error).name;
        }
      },
      [system.stack.baseUrl, key] as const,
    );
    expect(fromPage).toBe('TypeError');

    for (const [method, path, body] of [
      ['GET', '/api/v1/history', undefined],
      ['GET', '/api/v1/account', undefined],
      ['GET', '/api/v1/bulk/jobs', undefined],
      ['GET', `/api/v1/bulk/status/${crypto.randomUUID()}`, undefined],
      ['POST', '/api/v1/bulk/upload', { emails: [`alice@${system.world.domains.accept}`] }],
      ['PUT', '/api/v1/webhooks', { url: null }],
    ] as const) {
      // A script on a network of its own (Miniflare keeps a CF-Connecting-IP it is sent): every
      // call counts against its network's share of the key first, and the page's visitors on
      // 127.0.0.1 have used theirs in the tests above.
      const response = await system.api(path, {
        method,
        key,
        headers: { origin: listed.origin, 'cf-connecting-ip': '192.0.2.10' },
        ...(body ? { json: body } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'KEY_SCOPE_DENIED' });
    }
  });

  it('holds its daily cap under a burst: exactly the cap is verified and charged', async () => {
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        system.api('/api/v1/verify', {
          key: cappedKey,
          headers: { origin: listed.origin },
          json: { email: `alice@${system.world.domains.accept}` },
        }),
      ),
    );
    const answered = responses.filter((response) => response.status === 200);
    const capped = responses.filter((response) => response.status === 429);
    expect(answered).toHaveLength(3);
    expect(capped).toHaveLength(7);
    for (const response of capped) {
      expect(await response.json()).toMatchObject({ code: 'DAILY_CAP_REACHED', details: { cap: 3 } });
    }
    const remaining = await Promise.all(
      answered.map(
        async (response) => ((await response.json()) as { creditsRemaining: number }).creditsRemaining,
      ),
    );
    // What is left of the key's cap of 3 after each, one after the other: never the balance.
    expect(remaining.sort((a, b) => a - b)).toEqual([0, 1, 2]);
  });
});
