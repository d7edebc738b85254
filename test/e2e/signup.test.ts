// Sign-up against the whole system (wrangler dev, its D1 and Durable Objects), as a browser
// without JavaScript drives it: plain forms and cookies over HTTP. The free credits go once per
// mailbox; one mailbox gets a few confirmation emails an hour whichever way it is spelt; live
// keys and webhook settings wait for the confirmed address, test keys do not; the development
// account of `npm start` is confirmed from the start, so its live key sets webhooks at once.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { okJson, type System, startSystem } from './harness.ts';

let system: System;

beforeAll(async () => {
  system = await startSystem({
    vars: { SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))) },
  });
});

afterAll(async () => {
  await system?.close();
});

const PASSWORD = 'a long enough password';

/** Cookies kept as a browser keeps them, redirects not followed (the tests read them). */
class Browser {
  readonly cookies = new Map<string, string>();

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0)
      headers.set('Cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(`${system.stack.baseUrl}${path}`, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const split = pair.indexOf('=');
      const name = pair.slice(0, split);
      if (/max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(split + 1));
    }
    return response;
  }

  /** Loads `page` and posts its form to `action` with the page's CSRF token, as a submit does. */
  async submit(page: string, action: string, fields: Record<string, string>): Promise<Response> {
    const html = await (await this.request(page)).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
    if (!token) throw new Error(`${page} has no form token`);
    return this.request(action, { method: 'POST', body: new URLSearchParams({ _csrf: token, ...fields }) });
  }

  register(email: string): Promise<Response> {
    return this.submit('/signup', '/signup', { email, password: PASSWORD });
  }

  async signIn(email: string): Promise<void> {
    expect((await this.submit('/login', '/login', { email, password: PASSWORD })).status).toBe(303);
  }
}

/** The path and query of a confirmation link, as the browser asks for it. */
function pathOf(link: string): string {
  const url = new URL(link);
  return url.pathname + url.search;
}

/** How many confirmation links the edge printed for `email` so far. */
function linksSentTo(email: string): number {
  return system.logs.filter(
    (line) => line.includes(` ${email.toLowerCase()}: `) && line.includes('/confirm-email?'),
  ).length;
}

describe('sign-up that cannot farm credits or mail-bomb', () => {
  const user = `farm-${Date.now()}`;

  it('grants the free credits once per mailbox: the +2 account is confirmed with none, and its dashboard says so', async () => {
    const first = new Browser();
    expect((await first.register(`${user}@example.com`)).status).toBe(303);
    const firstLink = await system.confirmationLink(`${user}@example.com`);
    // The sign-up signed the account in, so the link lands on its overview.
    expect((await first.request(pathOf(firstLink))).headers.get('location')).toBe('/?email-confirmed=new');

    const second = new Browser();
    expect((await second.register(`${user}+2@example.com`)).status).toBe(303);
    const secondLink = await system.confirmationLink(`${user}+2@example.com`);
    const landing = await second.request(pathOf(secondLink));
    expect(landing.headers.get('location')).toBe('/?email-confirmed=no-credits');
    const overview = await (await second.request('/?email-confirmed=no-credits')).text();
    expect(overview).toContain('It received no free credits: they go once per mailbox');
    expect(await (await first.request('/')).text()).toMatch(/data-testid="credit-balance">\s*100\s*</);
    expect(overview).toMatch(/data-testid="credit-balance">\s*0\s*</);
    expect(overview).not.toContain('data-testid="confirm-banner"');
  });

  it('sends one mailbox 3 confirmation emails an hour; the next sign-up, new or taken, is 429 alike', async () => {
    // The two above were the mailbox's first two.
    expect((await new Browser().register(`${user}+3@example.com`)).status).toBe(303);
    await system.confirmationLink(`${user}+3@example.com`);
    const refusals = [];
    for (const email of [`${user}+4@example.com`, `${user}@example.com`]) {
      const answer = await new Browser().register(email);
      expect(answer.status, email).toBe(429);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(60);
      const html = await answer.text();
      expect(html).toContain('rcpt has sent as many confirmation emails to this mailbox as it will for now');
      refusals.push(html.replaceAll(email, 'EMAIL').replace(/name="_csrf" value="[^"]+"/, ''));
    }
    expect(refusals[0]).toBe(refusals[1]);
    expect(linksSentTo(`${user}+4@example.com`)).toBe(0);
    expect(linksSentTo(`${user}@example.com`)).toBe(1);
  });

  it('offers an unconfirmed account test keys only and no webhook settings, says why, and opens both once confirmed', async () => {
    const email = `gate-${Date.now()}@example.com`;
    const browser = new Browser();
    expect((await browser.register(email)).status).toBe(303);
    const link = await system.confirmationLink(email);

    const keys = await (await browser.request('/keys')).text();
    expect(keys).toContain(`Live keys need a confirmed email address: follow the link we sent to ${email}`);
    const live = await browser.submit('/keys', '/keys', { name: 'prod', mode: 'live' });
    expect(live.status).toBe(403);
    expect(await live.text()).toContain('email address confirmed');
    const test = await browser.submit('/keys', '/keys', { name: 'sandbox', mode: 'test' });
    expect(test.status).toBe(201);
    const testKey = /value="(rk_test_[A-Za-z0-9_-]{43})"/.exec(await test.text())?.[1] ?? '';
    const sandbox = await system.api('/api/v1/verify', {
      key: testKey,
      json: { email: 'someone@example.com' },
    });
    expect(sandbox.status).toBe(200);

    expect(await (await browser.request('/webhooks')).text()).toContain(
      'Webhooks can be set up once your email address is confirmed',
    );
    const hook = await browser.submit('/webhooks', '/webhooks/url', {
      url: 'https://hooks.example.com/rcpt',
    });
    expect(hook.status).toBe(403);

    expect((await browser.request(pathOf(link))).headers.get('location')).toBe('/?email-confirmed=new');
    const created = await browser.submit('/keys', '/keys', { name: 'prod', mode: 'live' });
    expect(created.status).toBe(201);
    const liveKey = /value="(rk_live_[A-Za-z0-9_-]{43})"/.exec(await created.text())?.[1] ?? '';
    const set = await system.api('/api/v1/webhooks', {
      method: 'PUT',
      key: liveKey,
      json: { url: 'https://hooks.example.com/rcpt' },
    });
    expect(await okJson(set)).toMatchObject({ url: 'https://hooks.example.com/rcpt' });
  });

  it("npm start's development account is confirmed: its live key sets webhooks at once", async () => {
    const set = await system.api('/api/v1/webhooks', {
      method: 'PUT',
      json: { url: 'https://hooks.example.com/dev' },
    });
    expect(await okJson(set)).toMatchObject({ url: 'https://hooks.example.com/dev' });
    expect(system.stack.apiKey).toMatch(/^rk_live_/);
  });
});
