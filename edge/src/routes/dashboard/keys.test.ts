// The API keys page: keys limited to scopes and client address blocks, made in the dashboard
// and refused by the API outside their limits.
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it } from 'vitest';
import { type CookieClient, signedInAccount as signedIn } from '../../../test/cookie-client.ts';
import { accountD1, call } from '../../../test/fixtures.ts';

function keyForm(fields: Record<string, string>, scopes: readonly string[]): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  form.set('scopes-offered', '1');
  for (const scope of scopes) form.append('scopes', scope);
  return form;
}

async function createLimitedKey(
  client: CookieClient,
  scopes: readonly string[],
  cidrs: string,
): Promise<{ secret: string; html: string }> {
  const response = await client.submit(
    '/keys',
    '/keys',
    keyForm({ name: 'limited', mode: 'test', cidrs }, scopes),
  );
  const html = await response.text();
  expect(response.status, html).toBe(201);
  const secret = /value="(rk_test_[A-Za-z0-9_-]{43})"/.exec(html)?.[1];
  if (!secret) throw new Error('no secret on the page');
  return { secret, html };
}

describe('a key limited to scopes and client addresses', () => {
  it('is stored with its canonical limits, listed with them, and refused outside them', async () => {
    const { client, accountId } = await signedIn('keys-limited');
    const { secret } = await createLimitedKey(client, ['read'], '203.0.113.0/24\n2001:DB8::/32');
    const stored = await (await accountD1(accountId))
      .prepare('SELECT scopes, allowed_cidrs FROM api_keys WHERE key_hash = ?1')
      .bind(await hashSecret(secret))
      .first<{ scopes: string; allowed_cidrs: string }>();
    expect(stored).toEqual({ scopes: '["read"]', allowed_cidrs: '["203.0.113.0/24","2001:db8::/32"]' });

    const list = await (await client.get('/keys')).text();
    expect(list).toContain('scopes: read');
    expect(list).toContain('from 203.0.113.0/24, 2001:db8::/32');

    const inside = { 'CF-Connecting-IP': '2001:db8::7' };
    expect((await call('/api/v1/history', { key: secret, headers: inside })).status).toBe(200);
    const outOfScope = await call('/api/v1/verify', {
      key: secret,
      headers: inside,
      json: { email: 'deliverable@example.com' },
    });
    expect(outOfScope.status).toBe(403);
    expect(await outOfScope.json()).toMatchObject({
      code: 'KEY_SCOPE_DENIED',
      details: { required: ['verify'], held: ['read'] },
    });
    const outOfRange = await call('/api/v1/history', {
      key: secret,
      headers: { 'CF-Connecting-IP': '198.51.100.1' },
    });
    expect(outOfRange.status).toBe(403);
    expect(await outOfRange.json()).toMatchObject({ code: 'KEY_ADDRESS_DENIED' });
  });

  it('with every scope ticked and no address, is an unlimited key', async () => {
    const { client, accountId } = await signedIn('keys-every');
    const { secret } = await createLimitedKey(client, ['verify', 'bulk', 'read', 'outcomes'], '');
    const stored = await (await accountD1(accountId))
      .prepare('SELECT scopes, allowed_cidrs FROM api_keys WHERE key_hash = ?1')
      .bind(await hashSecret(secret))
      .first();
    expect(stored).toEqual({ scopes: null, allowed_cidrs: null });
    expect((await client.get('/keys')).status).toBe(200);
    expect(await (await client.get('/keys')).text()).toContain('every scope');
  });

  it.each([
    [['read'], '203.0.113.7/24', '“203.0.113.7/24” is not an address block'],
    [[], '', 'Tick at least one scope.'],
  ])(
    'refuses scopes %j with addresses %j, saying why and keeping what was typed',
    async (scopes, cidrs, why) => {
      const { client, accountId } = await signedIn('keys-bad-limits');
      const response = await client.submit(
        '/keys',
        '/keys',
        keyForm({ name: 'bad', mode: 'test', cidrs }, scopes),
      );
      expect(response.status).toBe(400);
      const html = await response.text();
      expect(html).toContain(why);
      expect(html).not.toMatch(/rk_test_[A-Za-z0-9_-]{43}/);
      if (cidrs) expect(html).toContain(`>${cidrs}</textarea>`);
      const count = await (await accountD1(accountId))
        .prepare("SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?1 AND name = 'bad'")
        .bind(accountId)
        .first<{ n: number }>();
      expect(count?.n).toBe(0);
    },
  );
});

/** A publishable key "shop sign-up" for `origins`, capped at 250 a day, Turnstile unticked. */
function createShopKey(client: CookieClient, origins: string): Promise<Response> {
  return client.submit('/keys/publishable', '/keys/publishable', {
    name: 'shop sign-up',
    origins,
    dailyCap: '250',
    turnstileSecret: '',
  });
}

describe('publishable keys', () => {
  it('are made for a list of origins and a daily cap, and shown again with the widget snippet', async () => {
    const { client, accountId } = await signedIn('keys-publishable');
    const created = await createShopKey(client, 'https://Shop.Example/\nhttp://127.0.0.1:8080');
    expect(created.status).toBe(303);
    const list = await (await client.get(created.headers.get('location') ?? '')).text();
    const key = /<code class="publishable-key">(rk_pub_[A-Za-z0-9_-]{43})<\/code>/.exec(list)?.[1];
    expect(key).toBeDefined();
    expect(list).toContain('is ready: put the snippet below in your pages.');
    expect(list).toContain(`data-rcpt-key=&quot;${key}&quot;`);
    expect(list).toContain('/widget.js');
    expect(list).toContain('https://shop.example, http://127.0.0.1:8080');
    expect(list).toContain('>250<');
    // Shown again on every visit: it is embedded in pages, not a secret.
    expect(await (await client.get('/keys')).text()).toContain(key);
    const stored = await (await accountD1(accountId))
      .prepare('SELECT allowed_origins, daily_cap, turnstile_secret FROM api_keys WHERE publishable_key = ?1')
      .bind(key)
      .first();
    expect(stored).toEqual({
      allowed_origins: '["https://shop.example","http://127.0.0.1:8080"]',
      daily_cap: 250,
      turnstile_secret: null,
    });
  });

  it('offers Turnstile ticked, and asks for its secret key until it is given or unticked', async () => {
    const { client, accountId } = await signedIn('keys-publishable-turnstile');
    const form = await (await client.get('/keys/publishable')).text();
    expect(form).toMatch(/<input type="checkbox" name="turnstile" value="on" checked=""/);
    const fields = { name: 'shop', origins: 'https://shop.example', dailyCap: '10' };
    const missing = await client.submit('/keys/publishable', '/keys/publishable', {
      ...fields,
      turnstile: 'on',
      turnstileSecret: '',
    });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain('Give your Turnstile secret key, or untick');
    const made = await client.submit('/keys/publishable', '/keys/publishable', {
      ...fields,
      turnstile: 'on',
      turnstileSecret: '0x4AAAAAAA-customer-secret',
    });
    expect(made.status).toBe(303);
    const { results } = await (await accountD1(accountId))
      .prepare('SELECT turnstile_secret FROM api_keys WHERE account_id = ?1')
      .bind(accountId)
      .all<{ turnstile_secret: string | null }>();
    expect(results).toHaveLength(1);
    expect(results[0]?.turnstile_secret).toEqual(expect.any(String));
  });

  it("shows on the key's page today's use of its cap and the client networks that used it most", async () => {
    const { client } = await signedIn('keys-publishable-use');
    const created = await createShopKey(client, 'https://shop.example');
    const keyId = new URL(created.headers.get('location') ?? '', 'http://edge.test').searchParams.get(
      'created',
    );
    const list = await (await client.get('/keys')).text();
    expect(list).toContain(`href="/keys/publishable/${keyId}"`);
    const key = /<code class="publishable-key">(rk_pub_[A-Za-z0-9_-]{43})<\/code>/.exec(list)?.[1] ?? '';
    const clients = ['203.0.113.7', '203.0.113.8', '2001:db8:5:1::1', '203.0.113.9'];
    for (const address of clients) {
      const response = await call('/api/v1/verify', {
        key,
        json: { email: 'someone@invalid-domain' },
        headers: { Origin: 'https://shop.example', 'CF-Connecting-IP': address },
      });
      expect(response.status).toBe(200);
    }
    const page = await (await client.get(`/keys/publishable/${keyId}`)).text();
    expect(page).toContain('4 of 250 checks of the daily cap used; 246 left');
    const rows = [...page.matchAll(/<code>([^<]+)<\/code><\/td><td data-label="Checks today">(\d+)</g)].map(
      (match) => [match[1], Number(match[2])],
    );
    expect(rows).toEqual([
      ['203.0.113.0/24', 3],
      ['2001:db8:5::/48', 1],
    ]);
    const { client: stranger } = await signedIn('keys-publishable-stranger');
    expect((await stranger.get(`/keys/publishable/${keyId}`)).status).toBe(404);
  });

  it.each([
    [{ origins: 'https://shop.example/signup', dailyCap: '10' }, 'is not an origin'],
    [{ origins: '', dailyCap: '10' }, 'List at least one origin'],
    [{ origins: 'https://shop.example', dailyCap: '0' }, 'Give a whole number from 1'],
    [{ origins: 'https://shop.example', dailyCap: '2.5' }, 'Give a whole number from 1'],
    // The same name rule as a secret key's.
    [{ name: '  ', origins: 'https://shop.example', dailyCap: '10' }, 'Give the key a name.'],
    [
      { name: 'x'.repeat(101), origins: 'https://shop.example', dailyCap: '10' },
      'Use at most 100 characters.',
    ],
  ])('refuses %j, saying why and creating nothing', async (fields, why) => {
    const { client, accountId } = await signedIn('keys-publishable-bad');
    const response = await client.submit('/keys/publishable', '/keys/publishable', {
      name: 'bad',
      ...fields,
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain(why);
    const count = await (await accountD1(accountId))
      .prepare('SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?1')
      .bind(accountId)
      .first<{ n: number }>();
    expect(count?.n).toBe(0);
  });
});
