// Publishable keys (docs/publishable-keys.md): the single verify only, from listed origins
// only (CORS), each client network's share before the key's limits, the daily cap under a
// burst, the customer's Turnstile, the charge of any single verification, and an answer that
// tells a page's visitor nothing of the account.
import { env } from 'cloudflare:workers';
import type { VerifyResponse } from '@rcpt/shared/contract/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { configOf } from '../src/config.ts';
import { PUBLISHABLE_TURNSTILE_ACTION } from '../src/services/accounts/turnstile.ts';
import { createApiKey, createPublishableKey } from '../src/services/keys/api-keys.ts';
import { PUBLISHABLE_CALL_BYTES, PUBLISHABLE_PER_CLIENT } from '../src/services/keys/publishable-keys.ts';
import { reportFor, startFakeProber } from './fake-prober.ts';
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

/** The account's own secret key, for its server's calls. */
function serverKeyOf(accountId: string): Promise<{ secret: string }> {
  return createApiKey(db(), {
    accountId,
    name: 'server',
    mode: 'live',
    maxActiveKeys: configOf(env).QUOTA_API_KEYS,
    now: Date.now(),
  });
}

let nextClient = 0;
/** A client of a fresh client network (an IPv4 /24) per call, so the per-network share stays out of the way. */
const someClient = () => {
  const network = nextClient++ % 512;
  return `198.${18 + (network >> 8)}.${network & 255}.7`;
};

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
    // What is left of the key's daily cap (1,000), not the account's balance.
    expect(await response.json()).toMatchObject({ success: true, creditsRemaining: 999 });
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

  it(`allows ${PUBLISHABLE_PER_CLIENT.limit} calls a minute per client network (an IPv6 /48, an IPv4 /24), then 429 with Retry-After`, async () => {
    const { accountId, key } = await newPublishableKey({ credits: 100 });
    // Every call from another /64 of one /48: one holder's network, one share.
    for (let i = 0; i < PUBLISHABLE_PER_CLIENT.limit; i++) {
      const response = await verifyFrom(key, SHOP, { 'CF-Connecting-IP': `2001:db8:1:${i.toString(16)}::7` });
      expect(response.status).toBe(200);
    }
    const limited = await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '2001:db8:1:ffff:1:2:3:4' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('X-RateLimit-Limit')).toBe(String(PUBLISHABLE_PER_CLIENT.limit));
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect((await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '2001:db8:2::7' })).status).toBe(200);
    // IPv4: the /24 is the network.
    for (let i = 0; i < PUBLISHABLE_PER_CLIENT.limit; i++) {
      const response = await verifyFrom(key, SHOP, { 'CF-Connecting-IP': `203.0.113.${i + 1}` });
      expect(response.status).toBe(200);
    }
    expect((await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '203.0.113.200' })).status).toBe(429);
    expect((await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '203.0.114.1' })).status).toBe(200);
    expect(await balanceOf(accountId)).toBe(100 - 2 * PUBLISHABLE_PER_CLIENT.limit - 2);
  });

  it("leaves other networks answered while one network floods it: 600 calls take only that network's share", async () => {
    const { accountId, key } = await newPublishableKey({ credits: 100, dailyCap: 1000 });
    const flood = { 'CF-Connecting-IP': '192.0.2.10' };
    const statuses: number[] = [];
    for (let wave = 0; wave < 12; wave++) {
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          verifyFrom(key, SHOP, { 'CF-Connecting-IP': `192.0.2.${(wave * 50 + i) % 250}` }),
        ),
      );
      statuses.push(...responses.map((response) => response.status));
    }
    expect(statuses).toHaveLength(600);
    expect(statuses.filter((status) => status === 200)).toHaveLength(PUBLISHABLE_PER_CLIENT.limit);
    expect(statuses.filter((status) => status === 429)).toHaveLength(600 - PUBLISHABLE_PER_CLIENT.limit);
    // Another network's visitor is answered, and the flood took only its own share of the cap
    // and of the account's credits.
    const other = await verifyFrom(key, SHOP, { 'CF-Connecting-IP': '2001:db8:77::1' });
    expect(other.status).toBe(200);
    expect(await other.json()).toMatchObject({ creditsRemaining: 1000 - PUBLISHABLE_PER_CLIENT.limit - 1 });
    expect(await balanceOf(accountId)).toBe(100 - PUBLISHABLE_PER_CLIENT.limit - 1);
    expect((await verifyFrom(key, SHOP, flood)).status).toBe(429);
  });

  it("counts a call against the key's 100 a minute only once it passed its validation", async () => {
    const { accountId, key } = await newPublishableKey({ credits: 10 });
    for (let i = 0; i < 120; i++) {
      const bad = await call('/api/v1/verify', {
        key,
        json: { email: 'someone@invalid-domain', fresh: true },
        headers: { Origin: SHOP, 'CF-Connecting-IP': someClient() },
      });
      expect(bad.status).toBe(400);
    }
    const good = await verifyFrom(key, SHOP);
    expect(good.status).toBe(200);
    expect(await good.json()).toMatchObject({ creditsRemaining: 999 });
    expect(await balanceOf(accountId)).toBe(9);
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

describe("what a publishable key's caller sees", () => {
  it.each([
    ['fresh', { fresh: true }],
    ['evidence', { evidence: true }],
    ['a time budget', { timeoutMs: 5000 }],
    ['an unknown field', { name: 'x' }],
  ])(
    '400 VALIDATION_ERROR for a call with %s, charging nothing and taking nothing from the cap',
    async (_label, extra) => {
      const { accountId, key } = await newPublishableKey({ dailyCap: 1, credits: 10 });
      const response = await call('/api/v1/verify', {
        key,
        json: { email: 'someone@invalid-domain', ...extra },
        headers: { Origin: SHOP, 'CF-Connecting-IP': someClient() },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
      expect(await balanceOf(accountId)).toBe(10);
      expect((await verifyFrom(key, SHOP)).status).toBe(200);
    },
  );

  it("answers SPEC's shape with what is left of the key's daily cap, and no evidence, egress or cache flag", async () => {
    const { accountId, key } = await newPublishableKey({ dailyCap: 50, credits: 10 });
    const response = await verifyFrom(key, SHOP);
    expect(response.status).toBe(200);
    const body = await response.json<VerifyResponse>();
    expect(Object.keys(body).sort()).toEqual(['creditsRemaining', 'data', 'success']);
    // 49 checks left today; the account's balance (9) is not the page's business.
    expect(body.creditsRemaining).toBe(49);
    expect(await balanceOf(accountId)).toBe(9);
    expect(body.data).not.toHaveProperty('evidence');
    expect(body.data.meta).not.toHaveProperty('cached');
    expect(JSON.stringify(body)).not.toMatch(/egress/i);
  });

  it("402 without the account's balance when the credits run out", async () => {
    const { key } = await newPublishableKey({ credits: 0 });
    const response = await verifyFrom(key, SHOP);
    expect(response.status).toBe(402);
    const body = await response.json<{ code: string; details?: unknown }>();
    expect(body.code).toBe('INSUFFICIENT_CREDITS');
    expect(body.details).toBeUndefined();
  });

  it("neither reads nor feeds the account's verdict cache", async () => {
    const prober = await startFakeProber('default', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    try {
      const { accountId, key } = await newPublishableKey();
      const secret = await serverKeyOf(accountId);
      const fromServer = async (email: string) => {
        const response = await call('/api/v1/verify', { key: secret.secret, json: { email } });
        expect(response.status).toBe(200);
        return response.json<VerifyResponse>();
      };
      // The domain's facts are learnt first: a verdict reached before a fact changed is not kept.
      await fromServer(`warm-up-${crypto.randomUUID().slice(0, 8)}@accept.test`);
      const checkedByCustomer = `customer-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      expect((await fromServer(checkedByCustomer)).data.meta.cached).toBe(false);
      // The server key's repeat is answered from the cache (the account's desk keeps it): no probe.
      const probesOf = (email: string) =>
        prober.probes.filter((probe) => probe.emails.includes(email)).length;
      expect((await fromServer(checkedByCustomer)).data.meta.cached).toBe(true);
      expect(probesOf(checkedByCustomer)).toBe(1);
      // The page's call is not: it probes again, and its answer says nothing of a cache.
      const fromPage = await (await verifyFrom(key, SHOP, {}, checkedByCustomer)).json<VerifyResponse>();
      expect(fromPage.data.status).toBe('deliverable');
      expect(fromPage.data.meta).not.toHaveProperty('cached');
      expect(probesOf(checkedByCustomer)).toBe(2);

      const checkedByVisitor = `visitor-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      expect((await verifyFrom(key, SHOP, {}, checkedByVisitor)).status).toBe(200);
      expect((await fromServer(checkedByVisitor)).data.meta.cached).toBe(false);
      expect(prober.probes.filter((probe) => probe.emails.includes(checkedByVisitor))).toHaveLength(2);
    } finally {
      prober.close();
    }
  });

  it("books its storage against the key's own budget, never the account's", async () => {
    const { accountId, key } = await newPublishableKey({ credits: 10 });
    const response = await verifyFrom(key, SHOP, { 'Idempotency-Key': crypto.randomUUID() });
    expect(response.status).toBe(200);
    const stored = await env.DB.prepare(
      'SELECT COALESCE(SUM(bytes), 0) AS bytes FROM storage_days WHERE account_id = ?1',
    )
      .bind(accountId)
      .first<{ bytes: number }>();
    expect(stored?.bytes).toBe(0);

    // A deployment whose publishable keys may book two calls a day.
    const underSmallBudget = () =>
      call('/api/v1/verify', {
        key,
        json: { email: 'someone@invalid-domain' },
        headers: { Origin: SHOP, 'CF-Connecting-IP': someClient() },
        vars: { QUOTA_PUBLISHABLE_STORAGE_BYTES_PER_DAY: String(2 * PUBLISHABLE_CALL_BYTES) },
      });
    expect((await underSmallBudget()).status).toBe(200);
    const refused = await underSmallBudget();
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'publishable_storage_bytes_per_day', used: 2 * PUBLISHABLE_CALL_BYTES },
    });
    expect(await balanceOf(accountId)).toBe(8);
  });

  it("keeps its Idempotency-Keys apart from the secret keys': the customer's answer is never replayed to a page", async () => {
    const { accountId, key } = await newPublishableKey({ dailyCap: 50, credits: 10 });
    const secret = await serverKeyOf(accountId);
    const idempotencyKey = crypto.randomUUID();
    const email = 'someone@invalid-domain';
    const customer = await call('/api/v1/verify', {
      key: secret.secret,
      json: { email },
      headers: { 'Idempotency-Key': idempotencyKey },
    });
    expect(await customer.json()).toMatchObject({ creditsRemaining: 9 });
    const page = await verifyFrom(key, SHOP, { 'Idempotency-Key': idempotencyKey }, email);
    expect(page.status).toBe(200);
    expect(page.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await page.json()).toMatchObject({ creditsRemaining: 49 });
    // A retry from the page is the page's own kept answer.
    const retry = await verifyFrom(key, SHOP, { 'Idempotency-Key': idempotencyKey }, email);
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await retry.json()).toMatchObject({ creditsRemaining: 49 });
    expect(await balanceOf(accountId)).toBe(8);
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
