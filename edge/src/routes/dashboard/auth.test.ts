// Accounts and sessions of the dashboard, through the Worker's fetch handler: sign-up, the
// session cookie, one answer for every bad credential, CSRF, rate limits, sign-out, the
// password change and the password reset by email.

import { env } from 'cloudflare:workers';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it } from 'vitest';
import {
  CookieClient,
  csrfFieldOf,
  parseSetCookie,
  resetLinkCount,
  resetLinkFor,
  uniqueEmail,
} from '../../../test/cookie-client.ts';
import { accountD1OfEmail } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { PRE_SESSION_CSRF_COOKIE } from '../../middleware/csrf.ts';
import { DASHBOARD_CSP } from '../../middleware/security-headers.ts';
import { CONFIRMATION_MAIL_LIMITS } from '../../services/accounts/email-confirmation.ts';
import { csrfTokenFor, SESSION_COOKIE } from '../../services/accounts/sessions.ts';
import { INVALID_CREDENTIALS } from '../../services/accounts/sign-in.ts';
import { RESET_LIMITS, SIGN_IN_LIMITS, SIGN_UP_LIMITS } from '../../services/accounts/sign-in-limits.ts';
import { signLink } from '../../services/accounts/signed-links.ts';
import { safeNext } from './auth.tsx';

const PASSWORD = 'correct horse battery';

async function sessionRows(accountEmail: string): Promise<{ token_hash: string; expires_at: number }[]> {
  const { results } = await (await accountD1OfEmail(accountEmail))
    .prepare(
      'SELECT s.token_hash, s.expires_at FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE a.email = ?1',
    )
    .bind(accountEmail)
    .all<{ token_hash: string; expires_at: number }>();
  return results;
}

async function signedIn(label: string): Promise<{ client: CookieClient; email: string }> {
  const client = new CookieClient();
  const email = uniqueEmail(label);
  expect((await client.signUp(email, PASSWORD)).status).toBe(303);
  return { client, email };
}

describe('sign-up', () => {
  it('creates the account with 100 credits and a hashed session in an HttpOnly, Secure, SameSite=Lax cookie', async () => {
    const client = new CookieClient();
    const email = uniqueEmail('signup');
    const before = Date.now();
    const response = await client.signUp(email, PASSWORD);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/?welcome=1');
    const header = response.headers.getSetCookie().find((line) => line.startsWith(`${SESSION_COOKIE}=`));
    expect(header).toBeDefined();
    const cookie = parseSetCookie(header ?? '');
    expect(cookie.value).toMatch(/^rks_[A-Za-z0-9_-]{43}$/);
    expect(cookie.attributes.has('httponly')).toBe(true);
    expect(cookie.attributes.has('secure')).toBe(true);
    expect(cookie.attributes.get('samesite')).toBe('Lax');
    expect(cookie.attributes.get('path')).toBe('/');
    // RFC 6265bis §4.1.3.2: a __Host- cookie is Secure, Path=/ and host-only, so neither a
    // sibling subdomain nor a plain-http page can plant or shadow the session.
    expect(header).toMatch(/^__Host-/);
    expect(cookie.attributes.has('domain')).toBe(false);
    const expires = Date.parse(cookie.attributes.get('expires') ?? '');
    expect(expires).toBeGreaterThan(before + 6 * 86_400_000);
    expect(expires).toBeLessThan(before + 8 * 86_400_000);

    // Only the token's hash is stored.
    const rows = await sessionRows(email);
    expect(rows).toEqual([{ token_hash: await hashSecret(cookie.value), expires_at: expect.any(Number) }]);

    const overview = await client.get(response.headers.get('location') ?? '');
    expect(overview.status).toBe(200);
    const html = await overview.text();
    expect(html).toMatch(/data-testid="credit-balance">\s*100\s*</);
    expect(html).toContain('Welcome to rcpt');
  });

  it('signs the new account in at once, its free credits waiting for the confirmation link', async () => {
    const client = new CookieClient();
    const email = uniqueEmail('instant');
    const response = await client.register(email, PASSWORD);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/?welcome=1');
    expect(await sessionRows(email)).toHaveLength(1);
    const overview = await (await client.get('/?welcome=1')).text();
    expect(overview).toContain('Welcome to rcpt: your account is ready.');
    expect(overview).toContain('Confirm your email address.');
    expect(overview).toMatch(/data-testid="credit-balance">\s*0\s*</);
  });

  it('tells a taken email to sign in or reset, changing nothing; its owner retyping the form is signed in', async () => {
    const { email } = await signedIn('taken');
    const stranger = new CookieClient();
    const taken = await stranger.register(email, 'another password 123');
    expect(taken.status).toBe(303);
    expect(taken.headers.get('location')).toBe('/login?account-exists=1');
    expect(taken.headers.getSetCookie().some((line) => line.startsWith(`${SESSION_COOKIE}=`))).toBe(false);
    expect(await (await stranger.get('/login?account-exists=1')).text()).toContain(
      'An account already uses this email address.',
    );
    // The owner's password still works; the other one does not.
    expect((await new CookieClient().logIn(email, 'another password 123')).status).toBe(401);
    const owner = await new CookieClient().register(email, PASSWORD);
    expect(owner.status).toBe(303);
    expect(owner.headers.get('location')).toBe('/');
    expect(owner.headers.getSetCookie().some((line) => line.startsWith(`${SESSION_COOKIE}=`))).toBe(true);
  });

  it('refuses a short password and a malformed email (400) with a message, and no session', async () => {
    const cases: [string, string, RegExp][] = [
      [uniqueEmail('short'), 'short', /at least 10 characters/],
      ['not-an-email', PASSWORD, /valid email/],
    ];
    for (const [address, password, message] of cases) {
      const client = new CookieClient();
      const response = await client.register(address, password);
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(message);
      expect(client.cookies.has(SESSION_COOKIE)).toBe(false);
    }
  });
});

describe('sign-in', () => {
  it('answers a wrong password exactly as an unknown email: 401, the generic message, no session', async () => {
    const { email } = await signedIn('generic');
    const client = new CookieClient();
    const wrongPassword = await client.logIn(email, 'not the password at all');
    const unknownEmail = await client.logIn(uniqueEmail('nobody'), 'not the password at all');
    expect(wrongPassword.status).toBe(401);
    expect(unknownEmail.status).toBe(401);
    const [first, second] = [await wrongPassword.text(), await unknownEmail.text()];
    expect(first).toContain(INVALID_CREDENTIALS);
    // The pages differ only in the address echoed back into the form.
    const withoutEmail = (html: string) => html.replace(/value="[^"]*@example\.com"/, 'value=""');
    expect(withoutEmail(first)).toBe(withoutEmail(second));
    expect(client.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it('gives a new token at every sign-in and ends the session the browser still had', async () => {
    const { client, email } = await signedIn('rotate');
    const oldToken = client.cookies.get(SESSION_COOKIE) ?? '';
    // Signed in, /login redirects home but still sets the pre-session CSRF cookie.
    expect((await client.get('/login')).status).toBe(303);
    const preSession = client.cookies.get(PRE_SESSION_CSRF_COOKIE) ?? '';
    const response = await client.post('/login', {
      _csrf: await csrfTokenFor(preSession),
      email,
      password: PASSWORD,
    });
    expect(response.status).toBe(303);
    const newToken = client.cookies.get(SESSION_COOKIE) ?? '';
    expect(newToken).toMatch(/^rks_/);
    expect(newToken).not.toBe(oldToken);
    expect(await sessionRows(email)).toEqual([
      { token_hash: await hashSecret(newToken), expires_at: expect.any(Number) },
    ]);

    const stale = new CookieClient();
    stale.cookies.set(SESSION_COOKIE, oldToken);
    expect((await stale.get('/')).headers.get('location')).toBe('/login');
  });

  it('goes back to the page asked for, but never off the site', async () => {
    const { email } = await signedIn('next');
    const client = new CookieClient();
    const toKeys = await client.submit('/login?next=%2Fkeys', '/login', {
      email,
      password: PASSWORD,
      next: '/keys',
    });
    expect(toKeys.headers.get('location')).toBe('/keys');
    // Browsers drop tabs and line breaks from a URL: /<tab>/evil.example is //evil.example.
    for (const next of ['//evil.example/', '/\t/evil.example', '/\\evil.example']) {
      const other = new CookieClient();
      const response = await other.submit(`/login?next=${encodeURIComponent(next)}`, '/login', {
        email,
        password: PASSWORD,
        next,
      });
      expect(response.headers.get('location')).toBe('/');
    }
  });

  it.each([
    ['/keys', '/keys'],
    ['/jobs/abc?page=2#top', '/jobs/abc?page=2#top'],
    ['/?welcome=1', '/?welcome=1'],
    ['//evil.example/', '/'],
    ['https://evil.example/', '/'],
    ['/\\evil.example', '/'],
    ['/\t/evil.example', '/'],
    ['/\n/evil.example', '/'],
    ['/\r\n/evil.example', '/'],
    ['\t//evil.example', '/'],
    ['/.//evil.example', '/'],
    ['/%2e//evil.example', '/'],
    ['javascript:alert(1)', '/'],
    ['keys', '/'],
    ['', '/'],
  ])('after sign-in, next=%j goes to %j, which a browser keeps on the site', (next, expected) => {
    const location = safeNext(next);
    expect(location).toBe(expected);
    expect(new URL(location, 'https://rcpt.example').origin).toBe('https://rcpt.example');
  });

  it(`answers 429 with Retry-After after ${SIGN_IN_LIMITS.perEmail} attempts a minute for one email, even with the right password`, async () => {
    // Registered without signing in, so that every counted attempt below is the attacker's.
    const email = uniqueEmail('limited');
    expect((await new CookieClient().register(email, PASSWORD)).status).toBe(303);
    const attacker = new CookieClient();
    for (let attempt = 0; attempt < SIGN_IN_LIMITS.perEmail; attempt++) {
      expect((await attacker.logIn(email, `guess number ${attempt}`)).status).toBe(401);
    }
    // Another address (another IP) is limited too: the count is per account email.
    const owner = new CookieClient();
    const limited = await owner.logIn(email, PASSWORD);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('Retry-After'))).toBeLessThanOrEqual(60);
    expect(await limited.text()).toMatch(/Too many attempts/);
    expect(owner.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it(`answers 429 after ${SIGN_IN_LIMITS.perIp} attempts a minute from one IP, whatever the emails`, async () => {
    const client = new CookieClient();
    for (let attempt = 0; attempt < SIGN_IN_LIMITS.perIp; attempt++) {
      expect((await client.logIn(uniqueEmail('spray'), 'whatever password')).status).toBe(401);
    }
    expect((await client.logIn(uniqueEmail('spray'), 'whatever password')).status).toBe(429);
  });

  it('counts an IPv6 client by its /64: a fresh address in the same /64 is still limited', async () => {
    const network = `2001:db8:${crypto.randomUUID().slice(0, 4)}:77`;
    for (let attempt = 0; attempt < SIGN_IN_LIMITS.perIp; attempt++) {
      const client = new CookieClient(`${network}:${attempt}::${attempt + 1}`);
      expect((await client.logIn(uniqueEmail('spray64'), 'whatever password')).status).toBe(401);
    }
    const sameNetwork = await new CookieClient(`${network}:ffff:1:2:3`).logIn(
      uniqueEmail('x'),
      'whatever pw',
    );
    expect(sameNetwork.status).toBe(429);
    const nextNetwork = await new CookieClient(`${network.slice(0, -2)}78::1`).logIn(uniqueEmail('y'), 'pw');
    expect(nextNetwork.status).toBe(401);
  });
});

describe('sign-up limits per network', () => {
  /** A /24 of 10.0.0.0/8 (RFC 1918) that no other test uses, one of 2^16. */
  function freshV4Network(): string {
    const [high = 0, low = 0] = crypto.getRandomValues(new Uint8Array(2));
    return `10.${high}.${low}`;
  }

  it(`allows ${SIGN_UP_LIMITS.perNetwork} sign-ups an hour per IPv4 /24, then 429 with Retry-After for any address in it`, async () => {
    const network = freshV4Network();
    for (let attempt = 0; attempt < SIGN_UP_LIMITS.perNetwork; attempt++) {
      const client = new CookieClient(`${network}.${attempt + 1}`);
      expect((await client.register(`not-an-email-${attempt}`, PASSWORD)).status).toBe(400);
    }
    const limited = await new CookieClient(`${network}.200`).register(uniqueEmail('late'), PASSWORD);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThan(60);
    expect(Number(limited.headers.get('Retry-After'))).toBeLessThanOrEqual(3600);
    // The same address as an IPv4-mapped IPv6 address is the same network.
    const mapped = await new CookieClient(`::ffff:${network}.9`).register(uniqueEmail('mapped'), PASSWORD);
    expect(mapped.status).toBe(429);
    // The neighbouring /24 is not affected, and sign-in from the limited one still works.
    const [, second = '0', third = '0'] = network.split('.');
    const neighbour = `10.${second}.${(Number(third) + 1) % 256}.1`;
    expect((await new CookieClient(neighbour).register(uniqueEmail('neighbour'), PASSWORD)).status).toBe(303);
    expect((await new CookieClient(`${network}.7`).logIn(uniqueEmail('nobody'), PASSWORD)).status).toBe(401);
  });

  it(`allows ${SIGN_UP_LIMITS.perNetwork} sign-ups an hour per IPv6 /64, whatever the interface identifiers`, async () => {
    const network = `2001:db8:${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`;
    for (let attempt = 0; attempt < SIGN_UP_LIMITS.perNetwork; attempt++) {
      const client = new CookieClient(`${network}:${attempt}:${attempt}::${attempt + 1}`);
      expect((await client.register(`not-an-email-${attempt}`, PASSWORD)).status).toBe(400);
    }
    const limited = await new CookieClient(`${network}:abcd::1`).register(uniqueEmail('late'), PASSWORD);
    expect(limited.status).toBe(429);
    expect(await limited.text()).toMatch(/Too many attempts/);
  });
});

describe('CSRF', () => {
  it('403 CSRF_FAILED as an HTML page for a missing or wrong token, and nothing changes', async () => {
    const { client } = await signedIn('csrf');
    const other = await signedIn('csrf-other');
    const otherToken = csrfFieldOf(await (await other.client.get('/keys')).text());
    const forged: Record<string, string>[] = [
      { name: 'no token' },
      { name: 'wrong token', _csrf: 'x'.repeat(43) },
      { name: 'someone else', _csrf: otherToken },
    ];
    for (const fields of forged) {
      const response = await client.post('/keys', fields);
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await response.text();
      expect(html).toContain('CSRF_FAILED');
      expect(html).not.toContain('rk_live_');
    }
    const keys = await (await client.get('/keys')).text();
    expect(keys).toContain('No keys yet.');
  });

  it('binds sign-in and sign-up to a __Host- pre-session cookie: Secure, Path=/, host-only, HttpOnly', async () => {
    for (const page of ['/login', '/signup']) {
      const response = await new CookieClient().get(page);
      const header = response.headers.getSetCookie().find((line) => line.startsWith('__Host-rcpt_csrf='));
      expect(header, page).toBeDefined();
      const cookie = parseSetCookie(header ?? '');
      // RFC 6265bis §4.1.3.2: neither a sibling subdomain nor a plain-http page can plant it.
      expect(cookie.attributes.has('secure')).toBe(true);
      expect(cookie.attributes.get('path')).toBe('/');
      expect(cookie.attributes.has('domain')).toBe(false);
      expect(cookie.attributes.has('httponly')).toBe(true);
    }
    // A cookie without the prefix (planted by a sibling subdomain) binds no form.
    const planted = new CookieClient();
    const token = csrfFieldOf(await (await planted.get('/login')).text());
    const value = planted.cookies.get(PRE_SESSION_CSRF_COOKIE) ?? '';
    planted.cookies.delete(PRE_SESSION_CSRF_COOKIE);
    planted.cookies.set('rcpt_csrf', value);
    expect(
      (await planted.post('/login', { _csrf: token, email: 'x@example.com', password: PASSWORD })).status,
    ).toBe(403);
  });

  it('403 for a sign-in without the pre-session cookie, or with a token of another one', async () => {
    const { email } = await signedIn('csrf-login');
    const bare = new CookieClient();
    expect((await bare.post('/login', { email, password: PASSWORD })).status).toBe(403);
    const stolen = csrfFieldOf(await (await bare.get('/login')).text());
    const victim = new CookieClient();
    await victim.get('/login');
    const response = await victim.post('/login', { _csrf: stolen, email, password: PASSWORD });
    expect(response.status).toBe(403);
    expect(victim.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it('415 for a POST that is not a form, even with a valid token in the header', async () => {
    const { client } = await signedIn('csrf-json');
    const token = csrfFieldOf(await (await client.get('/keys')).text());
    const response = await client.request('/keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-CSRF-Token': token },
      body: JSON.stringify({ name: 'json key', mode: 'live' }),
    });
    expect(response.status).toBe(415);
    expect(await response.text()).toContain('UNSUPPORTED_MEDIA_TYPE');
    // The header alone is accepted with a form body (the pages' script may send it so).
    const viaHeader = await client.request('/keys', {
      method: 'POST',
      headers: { 'X-CSRF-Token': token },
      body: new URLSearchParams({ name: 'header key', mode: 'test' }),
    });
    expect(viaHeader.status).toBe(201);
  });

  it('403 for a sign-out without a token: the session survives', async () => {
    const { client } = await signedIn('csrf-logout');
    expect((await client.post('/logout', {})).status).toBe(403);
    expect((await client.get('/')).status).toBe(200);
  });
});

describe('sign-out and password change', () => {
  it('sign-out (POST) deletes the session and clears the cookie; the old token is worthless', async () => {
    const { client, email } = await signedIn('logout');
    const token = client.cookies.get(SESSION_COOKIE) ?? '';
    const response = await client.submit('/account', '/logout', {});
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/login?signed-out=1');
    const cleared = response.headers
      .getSetCookie()
      .map(parseSetCookie)
      .find((cookie) => cookie.name === SESSION_COOKIE);
    expect(cleared?.value).toBe('');
    expect(client.cookies.has(SESSION_COOKIE)).toBe(false);
    expect(await sessionRows(email)).toEqual([]);
    const replay = new CookieClient();
    replay.cookies.set(SESSION_COOKIE, token);
    const page = await replay.get('/keys');
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe('/login?next=%2Fkeys');
  });

  it(`checks the current password of a password change under the sign-in throttle: 429 after ${SIGN_IN_LIMITS.perEmail} a minute`, async () => {
    const { client } = await signedIn('password-guess');
    for (let attempt = 0; attempt < SIGN_IN_LIMITS.perEmail; attempt++) {
      const wrong = await client.submit('/account', '/account/password', {
        currentPassword: `guess number ${attempt}`,
        newPassword: 'a new long password',
      });
      expect(wrong.status).toBe(400);
    }
    const limited = await client.submit('/account', '/account/password', {
      currentPassword: PASSWORD,
      newPassword: 'a new long password',
    });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
  });

  it('a password change rotates this session, ends the others, and the new password works', async () => {
    const { client, email } = await signedIn('password');
    const elsewhere = new CookieClient();
    expect((await elsewhere.logIn(email, PASSWORD)).status).toBe(303);
    const before = client.cookies.get(SESSION_COOKIE);

    const wrong = await client.submit('/account', '/account/password', {
      currentPassword: 'not it at all',
      newPassword: 'a new long password',
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain('The current password is not right.');

    const response = await client.submit('/account', '/account/password', {
      currentPassword: PASSWORD,
      newPassword: 'a new long password',
    });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/account?password-changed=1');
    const after = client.cookies.get(SESSION_COOKIE);
    expect(after).not.toBe(before);
    expect((await client.get('/account')).status).toBe(200);
    expect((await elsewhere.get('/account')).status).toBe(303);
    expect(await sessionRows(email)).toHaveLength(1);

    expect((await new CookieClient().logIn(email, PASSWORD)).status).toBe(401);
    expect((await new CookieClient().logIn(email, 'a new long password')).status).toBe(303);
  });
});

describe('security headers', () => {
  it('are on every kind of dashboard answer: pages, redirects, errors, JSON', async () => {
    const { client } = await signedIn('headers');
    const answers = [
      await new CookieClient().get('/login'),
      await new CookieClient().get('/'),
      await client.get('/'),
      await client.post('/keys', { name: 'no token' }),
      await client.get('/jobs/00000000-0000-4000-8000-000000000000'),
      await client.get('/jobs/00000000-0000-4000-8000-000000000000/status'),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 303, 200, 403, 404, 404]);
    for (const answer of answers) {
      expect(answer.headers.get('Content-Security-Policy')).toBe(DASHBOARD_CSP);
      expect(answer.headers.get('X-Frame-Options')).toBe('DENY');
      expect(answer.headers.get('Referrer-Policy')).toBe('same-origin');
      expect(answer.headers.get('X-Content-Type-Options')).toBe('nosniff');
      expect(answer.headers.get('Cache-Control')).toBe('no-store');
    }
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
  });

  it('pages hold no inline script or style (the CSP would block them)', async () => {
    const { client } = await signedIn('inline');
    for (const path of ['/', '/keys', '/verify', '/bulk', '/history', '/webhooks', '/probers', '/account']) {
      const html = await (await client.get(path)).text();
      expect(html, path).toMatch(/^<!DOCTYPE html>/);
      expect(html, path).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html, path).not.toMatch(/<style|\sstyle=/);
      expect(html, path).not.toMatch(/\son[a-z]+=/);
    }
  });

  it('leaves the API alone: JSON errors without the dashboard headers', async () => {
    const response = await new CookieClient().get('/api/v1/history');
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('Content-Security-Policy')).toBeNull();
  });
});

describe('password reset', () => {
  const NEW_PASSWORD = 'a brand new passphrase';

  async function askForLink(client: CookieClient, email: string): Promise<Response> {
    return client.submit('/forgot-password', '/forgot-password', { email });
  }

  async function linkPath(email: string, after = 0): Promise<string> {
    const link = new URL(await resetLinkFor(email, after));
    return `${link.pathname}${link.search}`;
  }

  it('answers an unknown email as a known one, and mails a link only to the account', async () => {
    const { email } = await signedIn('reset-known');
    const unknown = uniqueEmail('reset-unknown');
    const answers = [
      await askForLink(new CookieClient(), email),
      await askForLink(new CookieClient(), unknown),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('If an account uses this email address, it has a link');
    }
    await resetLinkFor(email);
    expect(resetLinkCount(email)).toBe(1);
    expect(resetLinkCount(unknown)).toBe(0);
  });

  it('sets the new password once, signs every session out, and the link is spent', async () => {
    const { client, email } = await signedIn('reset-once');
    const other = new CookieClient();
    expect((await other.logIn(email, PASSWORD)).status).toBe(303);
    expect(await sessionRows(email)).toHaveLength(2);
    await askForLink(new CookieClient(), email);
    const path = await linkPath(email);
    const browser = new CookieClient();
    const form = await browser.get(path);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('New password');
    const token = new URL(path, 'https://x.invalid').searchParams.get('token') ?? '';

    // A password too short changes nothing and keeps the link.
    const short = await browser.submit(path, '/reset-password', { token, password: 'short' });
    expect(short.status).toBe(400);
    expect(await short.text()).toMatch(/at least 10 characters/);

    const done = await browser.submit(path, '/reset-password', { token, password: NEW_PASSWORD });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/login?password-reset=1');
    expect(await sessionRows(email)).toEqual([]);
    expect((await client.get('/')).headers.get('location')).toMatch(/^\/login/);
    expect((await new CookieClient().logIn(email, PASSWORD)).status).toBe(401);
    expect((await new CookieClient().logIn(email, NEW_PASSWORD)).status).toBe(303);

    // Spent: the page and the form both refuse it.
    const again = await new CookieClient().get(path);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain('not valid, or it was used already');
    const replay = await browser.submit('/forgot-password', '/reset-password', {
      token,
      password: 'yet another passphrase',
    });
    expect(replay.status).toBe(400);
    expect((await new CookieClient().logIn(email, NEW_PASSWORD)).status).toBe(303);
  });

  it('refuses an expired, a tampered and a foreign link', async () => {
    const { email } = await signedIn('reset-refused');
    const account = await (await accountD1OfEmail(email))
      .prepare('SELECT id, password_hash AS hash FROM accounts WHERE email = ?1')
      .bind(email)
      .first<{ id: string; hash: string }>();
    const secretsKey = configOf(env).SECRETS_KEY;
    const expired = await signLink(secretsKey, 'password reset', {
      accountId: account?.id ?? '',
      boundTo: account?.hash ?? '',
      expiresAt: Date.now() - 1,
    });
    const expiredPage = await new CookieClient().get(`/reset-password?token=${expired}`);
    expect(expiredPage.status).toBe(400);
    expect(await expiredPage.text()).toContain('This link has expired');
    // A confirmation link's MAC does not open a reset: each purpose has its own key.
    const foreign = await signLink(secretsKey, 'email confirmation', {
      accountId: account?.id ?? '',
      boundTo: account?.hash ?? '',
      expiresAt: Date.now() + 60_000,
    });
    await askForLink(new CookieClient(), email);
    const valid = new URL(await resetLinkFor(email)).searchParams.get('token') ?? '';
    const tampered = `${valid.slice(0, -2)}${valid.endsWith('AA') ? 'BB' : 'AA'}`;
    for (const token of [foreign, tampered, 'nonsense']) {
      const page = await new CookieClient().get(`/reset-password?token=${encodeURIComponent(token)}`);
      expect(page.status, token).toBe(400);
      expect(await page.text()).toContain('not valid');
    }
    expect((await new CookieClient().logIn(email, PASSWORD)).status).toBe(303);
  });

  it('answers a known and an unknown address alike even when the email cannot be sent: it leaves off the request path', async () => {
    const { email } = await signedIn('reset-offpath');
    // The console sender refuses a link for a host other than loopback, as a misconfigured
    // deployment's sender fails: the failure must not show in the answer.
    const answers = [];
    for (const address of [email, uniqueEmail('reset-offpath-unknown')]) {
      const client = new CookieClient(undefined, null, 'https://rcpt.example');
      answers.push(await askForLink(client, address));
    }
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('If an account uses this email address, it has a link');
    }
    expect(resetLinkCount(email)).toBe(0);
  });

  it('lists the API keys made before a reset on the keys page until the owner has looked at them', async () => {
    const { client, email } = await signedIn('reset-keys');
    const made = await client.submit('/keys', '/keys', { name: 'made before', mode: 'test' });
    expect(made.status).toBe(201);
    expect(await (await client.get('/keys')).text()).not.toContain('data-testid="keys-to-review"');
    await askForLink(new CookieClient(), email);
    const path = await linkPath(email);
    const browser = new CookieClient();
    const token = new URL(path, 'https://x.invalid').searchParams.get('token') ?? '';
    expect((await browser.submit(path, '/reset-password', { token, password: NEW_PASSWORD })).status).toBe(
      303,
    );

    const owner = new CookieClient();
    expect((await owner.logIn(email, NEW_PASSWORD)).status).toBe(303);
    const after = await owner.submit('/keys', '/keys', { name: 'made after', mode: 'test' });
    expect(after.status).toBe(201);
    const page = await (await owner.get('/keys')).text();
    const listed = /data-testid="keys-to-review"[\s\S]*?<\/section>/.exec(page)?.[0] ?? '';
    expect(listed).toContain('made before');
    expect(listed).not.toContain('made after');
    expect(listed).toContain('/revoke');

    expect(
      (
        await owner.submit('/keys', '/keys/reviewed', {
          before: /name="before" value="(\d+)"/.exec(page)?.[1] ?? '',
        })
      ).status,
    ).toBe(303);
    expect(await (await owner.get('/keys')).text()).not.toContain('data-testid="keys-to-review"');
  });

  it(`limits requests per network (${RESET_LIMITS.perNetwork} an hour), not per address`, async () => {
    const [high = 0, low = 0] = crypto.getRandomValues(new Uint8Array(2));
    const network = `10.${high}.${low}`;
    for (let attempt = 0; attempt < RESET_LIMITS.perNetwork; attempt++) {
      const answer = await askForLink(new CookieClient(`${network}.${attempt + 1}`), uniqueEmail('net'));
      expect(answer.status).toBe(200);
    }
    const limited = await askForLink(new CookieClient(`${network}.250`), uniqueEmail('net'));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThan(0);
  });

  it('strangers cannot spend the mailbox to keep its owner from a link: one link every half hour, always answered', async () => {
    const { email } = await signedIn('reset-owner');
    // Strangers use up the mailbox's confirmation emails (sign-ups with the owner's address)…
    for (let attempt = 0; attempt < CONFIRMATION_MAIL_LIMITS[0].limit + 1; attempt++)
      await new CookieClient().register(email, 'a stranger passphrase');
    // …and ask for links for it from many networks, many times a minute.
    for (let attempt = 0; attempt < 8; attempt++)
      expect((await askForLink(new CookieClient(), email)).status).toBe(200);
    await resetLinkFor(email);
    // The owner asks too: answered like anyone, and the mailbox holds a working link.
    const owner = await askForLink(new CookieClient(), email);
    expect(owner.status).toBe(200);
    expect(await owner.text()).toContain('it has a link to choose a new password');
    const form = await new CookieClient().get(await linkPath(email));
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('New password');
    // The mailbox got one reset email for all of them: at most one every half hour.
    expect(resetLinkCount(email)).toBe(1);
  });
});
