import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { CookieClient, csrfFieldOf } from '../../../test/cookie-client.ts';
import { DASHBOARD_CSP } from '../../middleware/security-headers.ts';
import { TURNSTILE_ORIGIN, turnstilePasses } from './turnstile.ts';

const ON = {
  TURNSTILE_SITE_KEY: '1x00000000000000000000AA',
  TURNSTILE_SECRET_KEY: 'turnstile-test-secret',
  TURNSTILE_SITEVERIFY_URL: 'https://siteverify.test/turnstile/v0/siteverify',
};

const EXPECTED = { hostname: 'shop.example', action: 'signup' };

/**
 * Siteverify as Cloudflare documents it: form fields in, `{ success, hostname, action }` out (the
 * host the challenge was solved on and the widget's action); records each call.
 */
function siteverify(valid: string, solved: { hostname: string; action: string } = EXPECTED) {
  const calls: { url: string; fields: Record<string, string> }[] = [];
  const fetcher = (async (url: string, init: RequestInit) => {
    const form = init.body as FormData;
    const fields = Object.fromEntries([...form.entries()].map(([name, value]) => [name, String(value)]));
    calls.push({ url, fields });
    const success = fields.secret === ON.TURNSTILE_SECRET_KEY && fields.response === valid;
    return Response.json(
      success
        ? { success, 'error-codes': [], hostname: solved.hostname, action: solved.action, cdata: '' }
        : { success, 'error-codes': ['invalid-input-response'] },
    );
  }) as typeof fetch;
  return { calls, fetcher };
}

describe('turnstilePasses', () => {
  it('sends the secret, the token and the client address, and believes only success: true', async () => {
    const { calls, fetcher } = siteverify('good-token');
    expect(await turnstilePasses(ON, 'good-token', '203.0.113.9', EXPECTED, fetcher)).toBe(true);
    expect(calls).toEqual([
      {
        url: ON.TURNSTILE_SITEVERIFY_URL,
        fields: { secret: ON.TURNSTILE_SECRET_KEY, response: 'good-token', remoteip: '203.0.113.9' },
      },
    ]);
    expect(await turnstilePasses(ON, 'forged-token', null, EXPECTED, fetcher)).toBe(false);
  });

  it.each([
    ['another site', { hostname: 'attacker.example', action: 'signup' }],
    ['another form of the site', { hostname: 'shop.example', action: 'login' }],
    ['a widget with no action', { hostname: 'shop.example', action: '' }],
  ])('refuses a valid token solved on %s', async (_label, solved) => {
    const { fetcher } = siteverify('good-token', solved);
    expect(await turnstilePasses(ON, 'good-token', null, EXPECTED, fetcher)).toBe(false);
  });

  it('compares host names without regard to case', async () => {
    const { fetcher } = siteverify('good-token', { hostname: 'Shop.Example', action: 'signup' });
    expect(await turnstilePasses(ON, 'good-token', null, EXPECTED, fetcher)).toBe(true);
  });

  it('refuses a missing token without asking, and fails closed when Siteverify fails', async () => {
    const { calls, fetcher } = siteverify('good-token');
    expect(await turnstilePasses(ON, '', null, EXPECTED, fetcher)).toBe(false);
    expect(calls).toHaveLength(0);
    const down = (async () => new Response('bad gateway', { status: 502 })) as unknown as typeof fetch;
    expect(await turnstilePasses(ON, 'good-token', null, EXPECTED, down)).toBe(false);
    const unreachable = (async () => {
      throw new TypeError('network down');
    }) as unknown as typeof fetch;
    expect(await turnstilePasses(ON, 'good-token', null, EXPECTED, unreachable)).toBe(false);
  });

  it('lets everything through when the deployment has no site key (development)', async () => {
    const { calls, fetcher } = siteverify('good-token');
    const off = {
      TURNSTILE_SITE_KEY: undefined,
      TURNSTILE_SECRET_KEY: undefined,
      TURNSTILE_SITEVERIFY_URL: '',
    };
    expect(await turnstilePasses(off, '', null, EXPECTED, fetcher)).toBe(true);
    expect(calls).toHaveLength(0);
  });
});

describe('the sign-up form with Turnstile', () => {
  it('shows the widget, and a CSP that lets only its script and frame in, when a site key is set', async () => {
    const page = await new CookieClient(undefined, ON).get('/signup');
    const html = await page.text();
    expect(html).toContain(`data-sitekey="${ON.TURNSTILE_SITE_KEY}" data-action="signup"`);
    expect(html).toContain(`src="${TURNSTILE_ORIGIN}/turnstile/v0/api.js"`);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain(`script-src 'self' ${TURNSTILE_ORIGIN}`);
    expect(csp).toContain(`frame-src ${TURNSTILE_ORIGIN}`);
    expect(csp).toContain("frame-ancestors 'none'");
  });

  it('has neither without a site key', async () => {
    const page = await new CookieClient().get('/signup');
    expect(await page.text()).not.toContain('cf-turnstile');
    expect(page.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
  });

  it('refuses a sign-up without a passing token and creates no account', async () => {
    const client = new CookieClient(undefined, ON);
    const email = `turnstile-${crypto.randomUUID()}@example.com`;
    const token = csrfFieldOf(await (await client.get('/signup')).text());
    const refused = await client.post('/signup', { _csrf: token, email, password: 'correct horse battery' });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('We could not confirm that a person sent this form');
    const row = await env.DB.prepare('SELECT id FROM accounts WHERE email = ?').bind(email).first();
    expect(row).toBeNull();
  });
});
