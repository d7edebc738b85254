// One suite run against every authenticated route: no key, bad key, revoked key, rate
// limit, (for charged routes) no credits, and keys limited by scope and client address.
import { env } from 'cloudflare:workers';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it } from 'vitest';
import { configOf } from '../src/config.ts';
import {
  createApiKey,
  createPublishableKey,
  KEY_SCOPES,
  type KeyScope,
  keyRecordKeeper,
  revokeKey,
} from '../src/services/keys/api-keys.ts';
import { balanceOf, call, db, newCaller } from './fixtures.ts';

const PAGE = 'https://shop.example';

/** A publishable key for PAGE (docs/publishable-keys.md). */
async function newPublishableCaller(credits: number): Promise<{ accountId: string; apiKey: string }> {
  const { accountId } = await newCaller({ credits });
  const created = await createPublishableKey(db(), {
    accountId,
    name: 'shop',
    allowedOrigins: [PAGE],
    dailyCap: 100,
    turnstileSecret: null,
    secretsKey: configOf(env).SECRETS_KEY,
    maxActiveKeys: configOf(env).QUOTA_API_KEYS,
    now: Date.now(),
  });
  return { accountId, apiKey: created.secret };
}

interface AuthenticatedRoute {
  name: string;
  method: string;
  path: string;
  json?: unknown;
  charged: boolean;
  /**
   * The scopes that open it (any one); 'settings': only a key with every scope. Settings reach
   * live data too: a test key is 403.
   */
  scopes: readonly KeyScope[] | 'settings';
}

const someJob = crypto.randomUUID();

// Every operation behind an API key. `charged` ones answer 402 with no credits.
const ROUTES: AuthenticatedRoute[] = [
  {
    name: 'verify',
    method: 'POST',
    path: '/api/v1/verify',
    json: { email: 'someone@invalid-domain' },
    charged: true,
    scopes: ['verify'],
  },
  {
    name: 'verify (alias)',
    method: 'POST',
    path: '/v1/verify',
    json: { email: 'someone@invalid-domain' },
    charged: true,
    scopes: ['verify'],
  },
  {
    name: 'bulk upload',
    method: 'POST',
    path: '/api/v1/bulk/upload',
    json: { emails: ['someone@nonexistent.test'] },
    charged: true,
    scopes: ['bulk'],
  },
  {
    name: 'bulk status',
    method: 'GET',
    path: `/api/v1/bulk/status/${someJob}`,
    charged: false,
    scopes: ['bulk', 'read'],
  },
  {
    name: 'bulk results',
    method: 'GET',
    path: `/api/v1/bulk/results/${someJob}`,
    charged: false,
    scopes: ['bulk', 'read'],
  },
  { name: 'bulk jobs', method: 'GET', path: '/api/v1/bulk/jobs', charged: false, scopes: ['bulk', 'read'] },
  { name: 'account', method: 'GET', path: '/api/v1/account', charged: false, scopes: ['read'] },
  { name: 'history', method: 'GET', path: '/api/v1/history', charged: false, scopes: ['read'] },
  { name: 'accuracy', method: 'GET', path: '/api/v1/accuracy', charged: false, scopes: ['read'] },
  {
    name: 'account payments',
    method: 'GET',
    path: '/api/v1/account/payments',
    charged: false,
    scopes: ['read'],
  },
  {
    name: 'account settings',
    method: 'PUT',
    path: '/api/v1/account/settings',
    json: { recheck: true },
    charged: false,
    scopes: 'settings',
  },
  {
    name: 'webhook settings',
    method: 'PUT',
    path: '/api/v1/webhooks',
    json: { url: null },
    charged: false,
    scopes: 'settings',
  },
  {
    name: 'outcomes',
    method: 'POST',
    path: '/api/v1/outcomes',
    json: { outcomes: [{ email: 'someone@example.com', outcome: 'delivered', at: '2026-01-01T00:00:00Z' }] },
    charged: false,
    scopes: ['outcomes'],
  },
  {
    name: 'outcome endpoints',
    method: 'GET',
    path: '/api/v1/outcomes/endpoints',
    charged: false,
    scopes: 'settings',
  },
  {
    name: 'outcome endpoint',
    method: 'POST',
    path: '/api/v1/outcomes/endpoints',
    json: { provider: 'postmark' },
    charged: false,
    scopes: 'settings',
  },
  {
    name: 'outcome endpoint revocation',
    method: 'DELETE',
    // The documented path itself: an endpoint of that id exists nowhere (404 once admitted).
    path: '/api/v1/outcomes/endpoints/{id}',
    charged: false,
    scopes: 'settings',
  },

  {
    name: 'webhook secret',
    method: 'POST',
    path: '/api/v1/webhooks/secret',
    charged: false,
    scopes: 'settings',
  },
  { name: 'webhook test', method: 'POST', path: '/api/v1/webhooks/test', charged: false, scopes: 'settings' },
  {
    name: 'webhook deliveries',
    method: 'GET',
    path: '/api/v1/webhooks/deliveries',
    charged: false,
    scopes: 'settings',
  },
];

describe.each(ROUTES)('$name ($method $path)', (route) => {
  const send = (key: string | null, headers?: Record<string, string>) =>
    call(route.path, { method: route.method, key, json: route.json, headers });

  it('401 UNAUTHORIZED without a key, with a JSON body and a request id', async () => {
    const response = await send(null);
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    const body = await response.json<{ code: string; requestId: string; success: boolean }>();
    expect(body).toMatchObject({ success: false, code: 'UNAUTHORIZED' });
    expect(body.requestId).toBe(response.headers.get('X-Request-Id'));
  });

  it.each([
    ['an unknown key', 'rk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    ['a malformed key', 'not-a-key'],
  ])('401 INVALID_API_KEY for %s', async (_label, key) => {
    const response = await send(key);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'INVALID_API_KEY' });
  });

  it('401 INVALID_API_KEY for a key with whitespace inside it', async () => {
    const caller = await newCaller();
    const response = await send(null, {
      'X-API-Key': `${caller.apiKey.slice(0, 12)} ${caller.apiKey.slice(12)}`,
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'INVALID_API_KEY' });
  });

  it('ignores whitespace around the header value (RFC 9110 §5.5: it is not part of the value)', async () => {
    const caller = await newCaller({ mode: 'test' });
    const response = await send(null, { 'X-API-Key': `  ${caller.apiKey}\t` });
    expect(response.status).not.toBe(401);
  });

  it('401 INVALID_API_KEY for two X-API-Key headers', async () => {
    const caller = await newCaller();
    const headers = new Headers();
    headers.append('X-API-Key', caller.apiKey);
    headers.append('X-API-Key', caller.apiKey);
    const response = await call(route.path, {
      method: route.method,
      json: route.json,
      headers: Object.fromEntries(headers),
    });
    expect(response.status).toBe(401);
  });

  it('accepts the header name in lower case', async () => {
    const caller = await newCaller({ mode: 'test' });
    const response = await send(null, { 'x-api-key': caller.apiKey });
    expect(response.status).not.toBe(401);
  });

  it('401 on the very next request after the key is revoked, and never charges it', async () => {
    const caller = await newCaller({ credits: 5 });
    expect((await send(caller.apiKey)).status).not.toBe(401);
    // As the dashboard revokes it: D1, then the key's record forgotten at the edge.
    expect(
      await revokeKey({ db: db(), limiters: env.KEY_LIMITER }, caller.accountId, caller.keyId, Date.now()),
    ).toBe(true);
    const balance = await balanceOf(caller.accountId);
    const response = await send(caller.apiKey);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'INVALID_API_KEY' });
    expect(await balanceOf(caller.accountId)).toBe(balance);
  });

  it('carries X-RateLimit-* headers and answers 429 RATE_LIMITED with Retry-After past 100 a minute', async () => {
    const caller = await newCaller({ mode: 'test' });
    // Every answer after authentication counts, whatever its status, and a test key costs nothing.
    for (let i = 0; i < 100; i++) {
      const response = await send(caller.apiKey);
      expect(response.status).not.toBe(429);
      expect(response.headers.get('X-RateLimit-Limit')).toBe('100');
      expect(response.headers.get('X-RateLimit-Remaining')).toBe(String(99 - i));
      expect(Number(response.headers.get('X-RateLimit-Reset'))).toBeGreaterThanOrEqual(1);
    }
    const limited = await send(caller.apiKey);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('Retry-After'))).toBeLessThanOrEqual(60);
    expect(limited.headers.get('X-RateLimit-Remaining')).toBe('0');
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED' });
  });

  const opening = route.scopes === 'settings' ? [] : route.scopes;
  const closed = KEY_SCOPES.filter((scope) => !opening.includes(scope));

  it('403 KEY_SCOPE_DENIED for a key without a scope that opens it, and never charges it', async () => {
    // A settings route is closed to every key limited to some scopes.
    const caller = await newCaller({
      credits: 5,
      scopes: closed.length < KEY_SCOPES.length ? closed : ['verify', 'read'],
    });
    const response = await send(caller.apiKey);
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'KEY_SCOPE_DENIED' });
    expect(await balanceOf(caller.accountId)).toBe(5);
  });

  it.each(opening)('is open to a key holding only the %s scope', async (scope) => {
    const caller = await newCaller({ credits: 5, scopes: [scope] });
    const response = await send(caller.apiKey);
    expect([401, 403]).not.toContain(response.status);
  });

  describe('with a key limited to 203.0.113.0/24 and 2001:db8::/32', () => {
    const limited = () => newCaller({ credits: 5, allowedCidrs: ['203.0.113.0/24', '2001:db8::/32'] });

    it.each([['198.51.100.7'], ['203.0.114.1'], ['2001:db9::1'], ['::ffff:198.51.100.7']])(
      '403 KEY_ADDRESS_DENIED from %s, naming the address it saw, and never charges it',
      async (address) => {
        const caller = await limited();
        const response = await send(caller.apiKey, { 'CF-Connecting-IP': address });
        expect(response.status).toBe(403);
        expect(await response.json()).toMatchObject({
          code: 'KEY_ADDRESS_DENIED',
          details: { clientAddress: address },
        });
        expect(await balanceOf(caller.accountId)).toBe(5);
      },
    );

    it('403 KEY_ADDRESS_DENIED when the client address is unknown', async () => {
      const caller = await limited();
      const response = await send(caller.apiKey);
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'KEY_ADDRESS_DENIED' });
    });

    it.each([['203.0.113.0'], ['203.0.113.255'], ['2001:db8:ffff::1'], ['::ffff:203.0.113.9']])(
      'is open from %s',
      async (address) => {
        const caller = await limited();
        const response = await send(caller.apiKey, { 'CF-Connecting-IP': address });
        expect([401, 403]).not.toContain(response.status);
      },
    );
  });

  if (route.scopes !== 'settings' && route.scopes.includes('verify')) {
    it('answers a publishable key from a page of its origin', async () => {
      const caller = await newPublishableCaller(5);
      const response = await send(caller.apiKey, { Origin: PAGE, 'CF-Connecting-IP': '203.0.113.50' });
      expect(response.status).toBe(200);
    });
  } else {
    it('403 KEY_SCOPE_DENIED for a publishable key, even from a page of its origin, and never charges it', async () => {
      const caller = await newPublishableCaller(5);
      const response = await send(caller.apiKey, { Origin: PAGE, 'CF-Connecting-IP': '203.0.113.50' });
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({
        code: 'KEY_SCOPE_DENIED',
        details: { held: ['publishable'] },
      });
      expect(await balanceOf(caller.accountId)).toBe(5);
    });
  }

  if (route.scopes === 'settings') {
    it('403 FORBIDDEN with a test key: only a live key (or the dashboard) reaches these settings', async () => {
      const caller = await newCaller({ mode: 'test' });
      const response = await send(caller.apiKey);
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'FORBIDDEN' });
    });
  }

  if (route.charged) {
    it('402 INSUFFICIENT_CREDITS with nothing left, before any work, with required and available', async () => {
      const caller = await newCaller({ credits: 0 });
      const response = await send(caller.apiKey);
      expect(response.status).toBe(402);
      expect(await response.json()).toMatchObject({
        code: 'INSUFFICIENT_CREDITS',
        details: { required: 1, available: 0 },
      });
      expect(await balanceOf(caller.accountId)).toBe(0);
    });
  }
});

describe('the suite', () => {
  it('covers every operation of the OpenAPI document that takes an API key', async () => {
    const document = await (await call('/openapi.json')).json<{
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    }>();
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => (operation.security ?? []).length > 0)
        .map(([method, _]) => `${method.toUpperCase()} ${path}`),
    );
    const covered = ROUTES.map((route) => `${route.method} ${route.path.replace(someJob, '{jobId}')}`);
    expect(documented.filter((operation) => !covered.includes(operation))).toEqual([]);
  });
});

describe('rate limit under concurrency', () => {
  it('lets exactly 100 of 130 concurrent requests through', async () => {
    const caller = await newCaller({ mode: 'test' });
    const responses = await Promise.all(
      Array.from({ length: 130 }, () =>
        call('/api/v1/verify', { key: caller.apiKey, json: { email: 'deliverable@example.com' } }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 429)).toHaveLength(30);
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
  });

  it('counts each key separately', async () => {
    const first = await newCaller({ mode: 'test' });
    const second = await newCaller({ mode: 'test' });
    for (let i = 0; i < 100; i++) await call('/api/v1/verify', { key: first.apiKey, json: {} });
    expect((await call('/api/v1/verify', { key: first.apiKey, json: {} })).status).toBe(429);
    expect((await call('/api/v1/verify', { key: second.apiKey, json: {} })).status).toBe(400);
  });

  it('counts no request refused before it: from outside the key’s address blocks, or with the key revoked', async () => {
    const caller = await newCaller({ mode: 'test', allowedCidrs: ['203.0.113.0/24'] });
    const from = (address: string) =>
      call('/api/v1/verify', { key: caller.apiKey, json: {}, headers: { 'CF-Connecting-IP': address } });
    for (let i = 0; i < 3; i++) expect((await from('198.51.100.7')).status).toBe(403);
    const admitted = await from('203.0.113.9');
    expect(admitted.status).toBe(400);
    expect(admitted.headers.get('X-RateLimit-Remaining')).toBe('99');
    // The key's object, asked as the edge asks it: a revoked key's request is not counted either.
    const keeper = keyRecordKeeper(env.KEY_LIMITER, await hashSecret(caller.apiKey));
    expect(
      (await keeper.admit(await hashSecret(caller.apiKey), Date.now(), { clientAddress: '203.0.113.9' }))
        .rate,
    ).toMatchObject({ allowed: true, remaining: 98 });
    await revokeKey({ db: db(), limiters: env.KEY_LIMITER }, caller.accountId, caller.keyId, Date.now());
    const revoked = await keeper.admit(await hashSecret(caller.apiKey), Date.now(), {
      clientAddress: '203.0.113.9',
    });
    expect(revoked.record?.revokedAt).not.toBeNull();
    expect(revoked.rate).toBeNull();
  });
});

describe('a test key of the same account', () => {
  it('sees only test-mode jobs and history, as live keys see only live ones', async () => {
    const live = await newCaller({ credits: 10 });
    const test = await createApiKey(db(), {
      accountId: live.accountId,
      name: 'sandbox',
      mode: 'test',
      maxActiveKeys: configOf(env).QUOTA_API_KEYS,
      now: Date.now(),
    });
    const liveJob = (
      await (
        await call('/api/v1/bulk/upload', {
          key: live.apiKey,
          json: { emails: ['someone@nonexistent.test'] },
        })
      ).json<{ jobId: string }>()
    ).jobId;
    expect(
      (await call('/api/v1/verify', { key: live.apiKey, json: { email: 'x@invalid-domain' } })).status,
    ).toBe(200);
    const testJob = (
      await (
        await call('/api/v1/bulk/upload', { key: test.secret, json: { emails: ['deliverable@x.test'] } })
      ).json<{ jobId: string }>()
    ).jobId;

    for (const path of [`/api/v1/bulk/status/${liveJob}`, `/api/v1/bulk/results/${liveJob}`]) {
      const response = await call(path, { key: test.secret });
      expect(response.status).toBe(404);
    }
    expect((await call(`/api/v1/bulk/status/${testJob}`, { key: test.secret })).status).toBe(200);
    expect((await call(`/api/v1/bulk/status/${testJob}`, { key: live.apiKey })).status).toBe(404);

    const jobIds = async (key: string) =>
      (await (await call('/api/v1/bulk/jobs', { key })).json<{ jobs: { id: string }[] }>()).jobs.map(
        (job) => job.id,
      );
    expect(await jobIds(test.secret)).toEqual([testJob]);
    expect(await jobIds(live.apiKey)).toEqual([liveJob]);

    const history = async (key: string) =>
      (
        await (
          await call('/api/v1/history', { key })
        ).json<{ history: { kind: string; jobId: string | null }[] }>()
      ).history.map((entry) => `${entry.kind}:${entry.jobId ?? ''}`);
    expect(await history(test.secret)).toEqual([`batch:${testJob}`]);
    expect((await history(live.apiKey)).sort()).toEqual([`batch:${liveJob}`, 'single:'].sort());
  });
});

describe('another account’s job', () => {
  it('is 404 on every job route, exactly like a job that does not exist', async () => {
    const owner = await newCaller({ mode: 'test' });
    const stranger = await newCaller({ mode: 'test' });
    const upload = await call('/api/v1/bulk/upload', {
      key: owner.apiKey,
      json: { emails: ['deliverable@x.test'] },
    });
    const { jobId } = await upload.json<{ jobId: string }>();
    for (const path of [`/api/v1/bulk/status/${jobId}`, `/api/v1/bulk/results/${jobId}`]) {
      const response = await call(path, { key: stranger.apiKey });
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
    }
    const jobs = await (await call('/api/v1/bulk/jobs', { key: stranger.apiKey })).json<{
      jobs: unknown[];
    }>();
    expect(jobs.jobs).toEqual([]);
  });
});
