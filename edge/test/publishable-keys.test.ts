// Publishable keys (docs/publishable-keys.md): the single verify only, from listed origins
// only (CORS), per-client limits, the daily cap under a burst, the customer's Turnstile, and
// the charge of any single verification.
import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { configOf } from '../src/config.ts';
import { PUBLISHABLE_TURNSTILE_ACTION } from '../src/services/accounts/turnstile.ts';
import { createPublishableKey } from '../src/services/keys/api-keys.ts';
import { PUBLISHABLE_PER_CLIENT } from '../src/services/keys/publishable-keys.ts';
import { balanceOf, call, db, ledgerOf, newCaller } from './fixtures.ts';

const SHOP = 'https://shop.example';

async function newPublishableKey(
  options: { dailyCap?: number; turnstileSecret?: string; credits?: number } = {},
): Promise<{ accountId: string; key: string }> {
  const { accountId } = await newCaller({ credits: options.credits ?? 100 });
  const created = await createPublishableKey(db(), {
    accountId,
    name: 'shop sign-up',
    allowedOrigins: [SHOP, 'http://127.0.0.1:8080'],
    dailyCap: options.dailyCap ?? 1000,
    turnstileSecret: options.turnstileSecret ?? null,
    secretsKey: configOf(env).SECRETS_KEY,
    maxActiveKeys: configOf(env).QUOTA_API_KEYS,
    now: Date.now(),
  });
  return { accountId, key: created.secret };
}

let nextClient = 0;
/** A fresh client address per call, so the per-client limit stays out of the way. */
const someClient = () => `198.51.100.${(nextClient++ % 250) + 1}`;

function verifyFrom(
  key: string,
  origin: string | null,
  headers: Record<string, string> = {},
  email = 'someone@invalid-domain',
): Promise<Response> {
  return call('/api/v1/verify', {
    key,
    json: { email },
    headers: { 'CF-Connecting-IP': someClient(), ...(origin ? { Origin: origin } : {}), ...headers },
  });
}

describe('a publishable key', () => {
  it('is issued as rk_pub_… and kept whole for the dashboard, besides its hash', async () => {
    const { key } = await newPublishableKey();
    expect(key).toMatch(/^rk_pub_[A-Za-z0-9_-]{43}$/);
    const row = await env.DB.prepare(
      'SELECT kind, mode, publishable_key, scopes FROM api_keys WHERE publishable_key = ?1',
    )
      .bind(key)
      .first();
    expect(row).toEqual({ kind: 'publishable', mode: 'live', publishable_key: key, scopes: '["verify"]' });
  });

  it('verifies from a listed origin, readable by that page (CORS), charged 1 credit like any single call', async () => {
    const { accountId, key } = await newPublishableKey({ credits: 10 });
    const response = await verifyFrom(key, SHOP);
    expect(response.status).toBe(200);
    expect(response.headers.get('Access-Control-Allow-Origin')).toBe(SHOP);
    expect(response.headers.get('Vary')).toContain('Origin');
    expect(response.headers.get('Access-Control-Expose-Headers')).toContain('Retry-After');
    expect(await response.json()).toMatchObject({ success: true, creditsRemaining: 9 });
    expect(await balanceOf(accountId)).toBe(9);
    expect((await ledgerOf(accountId)).filter((row) => row.reason === 'verify')).toHaveLength(1);
  });

  it.each([
    ['an unlisted origin', 'https://evil.example'],
    ['another scheme', 'http://shop.example'],
    ['another port', 'https://shop.example:8443'],
    ['a subdomain', 'https://www.shop.example'],
    ['the opaque origin', 'null'],
  ])('403 ORIGIN_NOT_ALLOWED from %s, unreadable by that page, and never charged', async (_label, origin) => {
    const { accountId, key } = await newPublishableKey({ credits: 10 });
    const response = await verifyFrom(key, origin);
    expect(response.status).toBe(403);
    expect(response.headers.get('Access-Control-Allow-Origin')).toBeNull();
    expect(await response.json()).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED', details: { origin } });
    expect(await balanceOf(accountId)).toBe(10);
  });

  it('403 ORIGIN_NOT_ALLOWED without an Origin (a script, not a page)', async () => {
    const { key } = await newPublishableKey();
    const response = await verifyFrom(key, null);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED', details: { origin: null } });
  });

  it('has its preflight answered on the verify paths only', async () => {
    const preflight = (path: string) =>
      call(path, {
        method: 'OPTIONS',
        headers: {
          Origin: SHOP,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type, x-api-key',
        },
      });
    for (const path of ['/api/v1/verify', '/v1/verify']) {
      const response = await preflight(path);
      expect(response.status).toBe(204);
      expect(response.headers.get('Access-Control-Allow-Origin')).toBe(SHOP);
      expect(response.headers.get('Access-Control-Allow-Methods')).toBe('POST');
      expect(response.headers.get('Access-Control-Allow-Headers')?.split(', ')).toEqual(
        expect.arrayContaining(['content-type', 'x-api-key', 'x-turnstile-token']),
      );
    }
    const history = await preflight('/api/v1/history');
    expect(history.status).not.toBe(204);
    expect(history.headers.get('Access-Control-Allow-Origin')).toBeNull();
  });

  it(`allows ${PUBLISHABLE_PER_CLIENT.limit} calls a minute per client network, then 429 with Retry-After`, async () => {
    const { accountId, key } = await newPublishableKey({ credits: 100 });
    const client = { 'CF-Connecting-IP': '2001:db8:1:2::7' };
    for (let i = 0; i < PUBLISHABLE_PER_CLIENT.limit; i++) {
      expect((await verifyFrom(key, SHOP, client)).status).toBe(200);
    }
    // Another address of the same /64 is the same client network.
    const limited = await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '2001:db8:1:2::8' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect((await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '2001:db8:1:3::7' })).status).toBe(200);
    expect(await balanceOf(accountId)).toBe(100 - PUBLISHABLE_PER_CLIENT.limit - 1);
  });

  it('admits exactly its daily cap under a burst, charging only those, then 429 DAILY_CAP_REACHED until midnight UTC', async () => {
    const { accountId, key } = await newPublishableKey({ dailyCap: 7, credits: 100 });
    const secondsToMidnight = (at: number) => Math.ceil((86_400_000 - (at % 86_400_000)) / 1000);
    // The refusal was made during the burst: on a loaded machine that takes more than a second.
    const burstStart = Date.now();
    const responses = await Promise.all(Array.from({ length: 40 }, () => verifyFrom(key, SHOP)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(7);
    expect(statuses.filter((status) => status === 429)).toHaveLength(33);
    const refused = responses.find((response) => response.status === 429);
    const body = await refused?.json<{ code: string; details: { cap: number } }>();
    expect(body).toMatchObject({ code: 'DAILY_CAP_REACHED', details: { cap: 7 } });
    const untilMidnight = secondsToMidnight(Date.now());
    expect(Number(refused?.headers.get('Retry-After'))).toBeLessThanOrEqual(
      secondsToMidnight(burstStart) + 1,
    );
    expect(Number(refused?.headers.get('Retry-After'))).toBeGreaterThanOrEqual(untilMidnight - 60);
    expect(await balanceOf(accountId)).toBe(93);
  });

  it('takes nothing from the cap for a call the validator refuses', async () => {
    const { key } = await newPublishableKey({ dailyCap: 1 });
    const bad = await call('/api/v1/verify', {
      key,
      json: { mail: 'x' },
      headers: { Origin: SHOP, 'CF-Connecting-IP': someClient() },
    });
    expect(bad.status).toBe(400);
    expect((await verifyFrom(key, SHOP)).status).toBe(200);
    expect((await verifyFrom(key, SHOP)).status).toBe(429);
  });
});

describe('a publishable key with Turnstile on', () => {
  const SITEVERIFY = configOf(env).TURNSTILE_SITEVERIFY_URL;
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /**
   * Siteverify as Cloudflare documents it: form fields in, `{ success, hostname, action }` out, the
   * token solved on `solved` (by default the shop's page, with the action rcpt asks for).
   */
  function stubSiteverify(
    secret: string,
    validToken: string,
    solved = { hostname: new URL(SHOP).hostname, action: PUBLISHABLE_TURNSTILE_ACTION },
  ): { secret: string; response: string }[] {
    const calls: { secret: string; response: string }[] = [];
    const realFetch = globalThis.fetch;
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (url !== SITEVERIFY) return realFetch(input, init);
      const form = init?.body as FormData;
      const fields = { secret: String(form.get('secret')), response: String(form.get('response')) };
      calls.push(fields);
      const success = fields.secret === secret && fields.response === validToken;
      return Response.json(success ? { success, ...solved } : { success });
    });
    return calls;
  }

  it('403 CHALLENGE_FAILED without a valid token, charging nothing and taking nothing from the cap', async () => {
    const calls = stubSiteverify('customer-turnstile-secret', 'good-token');
    const { accountId, key } = await newPublishableKey({
      dailyCap: 1,
      credits: 10,
      turnstileSecret: 'customer-turnstile-secret',
    });
    const attempts: Record<string, string>[] = [{}, { 'X-Turnstile-Token': 'forged' }];
    for (const headers of attempts) {
      const response = await verifyFrom(key, SHOP, headers);
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'CHALLENGE_FAILED' });
    }
    expect(await balanceOf(accountId)).toBe(10);
    const passed = await verifyFrom(key, SHOP, { 'X-Turnstile-Token': 'good-token' });
    expect(passed.status).toBe(200);
    expect(await balanceOf(accountId)).toBe(9);
    // The customer's secret, opened from its sealed copy, is what Siteverify was asked with.
    expect(calls.at(-1)).toEqual({ secret: 'customer-turnstile-secret', response: 'good-token' });
    const stored = await env.DB.prepare('SELECT turnstile_secret FROM api_keys WHERE publishable_key = ?1')
      .bind(key)
      .first<{ turnstile_secret: string }>();
    expect(stored?.turnstile_secret).not.toContain('customer-turnstile-secret');
  });

  it("refuses a valid token solved on another site's page or by another of the shop's widgets", async () => {
    const { accountId, key } = await newPublishableKey({
      dailyCap: 5,
      credits: 10,
      turnstileSecret: 'customer-turnstile-secret',
    });
    for (const solved of [
      { hostname: 'attacker.example', action: PUBLISHABLE_TURNSTILE_ACTION },
      { hostname: new URL(SHOP).hostname, action: 'login' },
    ]) {
      vi.restoreAllMocks();
      stubSiteverify('customer-turnstile-secret', 'good-token', solved);
      const response = await verifyFrom(key, SHOP, { 'X-Turnstile-Token': 'good-token' });
      expect(response.status, JSON.stringify(solved)).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'CHALLENGE_FAILED' });
    }
    expect(await balanceOf(accountId)).toBe(10);
  });
});
