// The Probers page: an account's prober tokens (made, shown once, stored hashed, capped,
// revoked), its own linked probers with their egresses' health — never another account's nor
// the shared fleet's — and the shared fleet's fallback, which the API reads and sets too.
import { env } from 'cloudflare:workers';
import type { EgressHealthInfo } from '@rcpt/shared/contract/prober';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it } from 'vitest';
import { untilValue } from '../../../../test/eventually.ts';
import { signedInAccount as signedIn } from '../../../test/cookie-client.ts';
import { announceEgresses, hubOf, newProberToken, startFakeProber } from '../../../test/fake-prober.ts';
import { accountD1, call, quotas } from '../../../test/fixtures.ts';

interface TokenRow {
  token_hash: string;
  account_id: string;
  region: string;
  revoked_at: number | null;
}

function tokenRows(accountId: string): Promise<TokenRow[]> {
  return env.DB.prepare(
    'SELECT token_hash, account_id, region, revoked_at FROM prober_tokens WHERE account_id = ?1',
  )
    .bind(accountId)
    .all<TokenRow>()
    .then((result) => result.results);
}

describe('prober tokens on the Probers page', () => {
  it('makes a token for the account, shows it once, stores only its hash, and lists it by prefix', async () => {
    const { client, accountId } = await signedIn('probers-make');
    const made = await client.submit('/probers', '/probers', { name: 'mail-out-1', region: 'default' });
    const html = await made.text();
    expect(made.status, html).toBe(201);
    const secret = /value="(rkp_[A-Za-z0-9_-]+)"/.exec(html)?.[1];
    if (!secret) throw new Error('no token on the page');
    expect(html).toContain('REGION=default');

    const rows = await tokenRows(accountId);
    expect(rows).toEqual([
      { token_hash: await hashSecret(secret), account_id: accountId, region: 'default', revoked_at: null },
    ]);
    const list = await (await client.get('/probers')).text();
    expect(list).not.toContain(secret);
    const stored = await env.DB.prepare('SELECT prefix FROM prober_tokens WHERE account_id = ?1')
      .bind(accountId)
      .first<{ prefix: string }>();
    expect(secret.startsWith(stored?.prefix ?? '-')).toBe(true);
    expect(list).toContain(`<code>${stored?.prefix}…</code>`);
    expect(list).toContain('mail-out-1');
  });

  it('refuses a missing name and a region the deployment does not use, storing nothing', async () => {
    const { client, accountId } = await signedIn('probers-bad');
    const unnamed = await client.submit('/probers', '/probers', { name: '  ', region: 'default' });
    expect(unnamed.status).toBe(400);
    expect(await unnamed.text()).toContain('Give the key a name.');
    const elsewhere = await client.submit('/probers', '/probers', { name: 'x', region: 'mars' });
    expect(elsewhere.status).toBe(400);
    expect(await elsewhere.text()).toContain('Choose one of the regions: default.');
    expect(await tokenRows(accountId)).toEqual([]);
  });

  it(`stops at ${quotas().proberTokens} live tokens with 429 QUOTA_EXCEEDED, and takes one again once one is revoked`, async () => {
    const { client, accountId } = await signedIn('probers-quota');
    const limit = quotas().proberTokens;
    // The first ones are stored directly: the page's forms are limited to a few changes a minute.
    const tokens = await Promise.all(
      Array.from({ length: limit }, () => newProberToken('default', accountId)),
    );
    const refused = await client.submit('/probers', '/probers', { name: 'one more', region: 'default' });
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain(`at most ${limit} live prober tokens`);
    expect(await tokenRows(accountId)).toHaveLength(limit);

    const [first] = tokens;
    if (!first) throw new Error('no token');
    const confirm = await client.get(`/probers/${first.id}/revoke`);
    expect(await confirm.text()).toContain('Revoke token');
    const revoked = await client.submit(`/probers/${first.id}/revoke`, `/probers/${first.id}/revoke`, {});
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get('location')).toBe(`/probers?revoked=${first.id}`);
    expect((await tokenRows(accountId)).filter((row) => row.revoked_at !== null)).toHaveLength(1);
    const again = await client.submit('/probers', '/probers', { name: 'one more', region: 'default' });
    expect(again.status).toBe(201);
  });

  it("never revokes another account's token", async () => {
    const owner = await signedIn('probers-owner');
    const stranger = await signedIn('probers-stranger');
    const token = await newProberToken('default', owner.accountId);
    expect((await stranger.client.get(`/probers/${token.id}/revoke`)).status).toBe(404);
    const page = await (await stranger.client.get('/probers')).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    const attempt = await stranger.client.post(`/probers/${token.id}/revoke`, { _csrf: csrf });
    expect(attempt.status).toBe(404);
    expect((await tokenRows(owner.accountId))[0]?.revoked_at).toBeNull();
  });
});

describe('linked probers on the Probers page', () => {
  it("shows the account's own probers with their egresses' health, and no other account's or the shared fleet's", async () => {
    const region = `probers-page-${crypto.randomUUID()}`;
    const mine = await signedIn('probers-mine');
    const other = await signedIn('probers-other');
    const own = await startFakeProber(region, () => 'ignore', 10, undefined, undefined, mine.accountId);
    await startFakeProber(region, () => 'ignore', 10, undefined, undefined, other.accountId);
    await startFakeProber(region, () => 'ignore');
    const egress = { id: '192.0.2.25', kind: 'direct' as const, helo: 'out1.customer.test' };
    announceEgresses(own, region, [egress]);
    const health: EgressHealthInfo = {
      egress: egress.id,
      address: egress.id,
      ptr: 'out1.customer.test',
      fcrdns: 'pass',
      heloMatches: true,
      listings: [{ zone: 'zen.spamhaus.org', codes: ['127.0.0.10'], meaning: 'PBL' }],
      unchecked: [],
      port25: 'ok',
      checkedAt: Date.now(),
    };
    own.send({ type: 'egress_state', id: 'state-1', blocks: [], uses: [], sessions: 2, health: [health] });
    const probers = await untilValue(async () => {
      const status = await hubOf(region).status();
      const reported = status.find((prober) => prober.tokenId === own.tokenId)?.egress.health?.length;
      return reported ? status : undefined;
    }, 'the hub has the health report');
    const ids = (accountId: string | null) =>
      probers.filter((prober) => prober.accountId === accountId).map((prober) => prober.proberId);

    const html = await (await mine.client.get('/probers')).text();
    const shown = [...html.matchAll(/data-prober-id="([^"]+)"/g)].map((match) => match[1]);
    expect(shown).toEqual(ids(mine.accountId));
    for (const id of [...ids(other.accountId), ...ids(null)]) expect(html).not.toContain(id);
    expect(html).toContain('192.0.2.25: PTR out1.customer.test, FCrDNS pass, HELO = PTR, port 25 ok');
    expect(html).toContain('Listed on zen.spamhaus.org (127.0.0.10): PBL');

    const theirs = await (await other.client.get('/probers')).text();
    expect(theirs).not.toContain('192.0.2.25');
  });
});

describe('the shared fleet fallback', () => {
  it('is on by default, turned off on the page, and read and set through the API alike', async () => {
    const { client, accountId } = await signedIn('probers-fallback');
    const checkbox = (html: string) => /<input[^>]*name="sharedFleetFallback"[^>]*>/.exec(html)?.[0] ?? '';
    expect(checkbox(await (await client.get('/probers')).text())).toContain('checked');

    const saved = await client.submit('/probers', '/probers/fallback', {});
    expect(saved.status).toBe(303);
    const d1 = await accountD1(accountId);
    const stored = () =>
      d1
        .prepare('SELECT shared_fleet_fallback AS on_ FROM accounts WHERE id = ?1')
        .bind(accountId)
        .first<{ on_: number }>();
    expect(await stored()).toEqual({ on_: 0 });
    expect(checkbox(await (await client.get('/probers')).text())).not.toContain('checked');

    const key = await makeKey(client);
    const read = await call('/api/v1/account', { key });
    expect((await read.json<{ account: { settings: unknown } }>()).account.settings).toMatchObject({
      sharedFleetFallback: false,
    });
    const bad = await call('/api/v1/account/settings', {
      key,
      method: 'PUT',
      json: { sharedFleetFallback: 'yes' },
    });
    expect(bad.status).toBe(400);
    expect(await stored()).toEqual({ on_: 0 });
    const set = await call('/api/v1/account/settings', {
      key,
      method: 'PUT',
      json: { sharedFleetFallback: true },
    });
    expect(await set.json()).toEqual({
      success: true,
      settings: { recheck: false, watch: false, sharedFleetFallback: true },
    });
    expect(await stored()).toEqual({ on_: 1 });
    expect(checkbox(await (await client.get('/probers')).text())).toContain('checked');
  });
});

/** A live key with every scope, made on the keys page. */
async function makeKey(client: Awaited<ReturnType<typeof signedIn>>['client']): Promise<string> {
  const created = await client.submit('/keys', '/keys', { name: 'settings', mode: 'live' });
  const secret = /value="(rk_live_[A-Za-z0-9_-]+)"/.exec(await created.text())?.[1];
  if (!secret) throw new Error('no key on the page');
  return secret;
}
