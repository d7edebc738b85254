// A dashboard account that lives in shard 1 (storage/shards.ts): its email, its sessions and its
// outcome endpoints find it through the directory's lookups, its sign-up grant is decided once per
// mailbox across the shards, and its pages, password reset and outcome hooks answer from shard 1.
// A sign-up is placed in the shard with the fewest accounts.
import { env, exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  CookieClient,
  DEFAULT_PASSWORD,
  resetLinkFor,
  signedInAccountIn,
  uniqueEmail,
} from '../../../test/cookie-client.ts';
import { configOf } from '../../config.ts';
import { retentionCutoffsOf } from '../../services/money/storage-policy.ts';
import { insertAccount } from '../../storage/accounts.ts';
import { deleteExpired } from '../../storage/retention.ts';
import { SESSION_ABSOLUTE_MS } from '../../storage/sessions.ts';
import { shardForNewAccount, shardsOf } from '../../storage/shards.ts';

async function count(database: D1Database, sql: string, ...params: unknown[]): Promise<number> {
  const row = await database
    .prepare(sql)
    .bind(...params)
    .first<{ n: number }>();
  return row?.n ?? Number.NaN;
}

async function balanceIn(database: D1Database, accountId: string): Promise<number | null> {
  const row = await database
    .prepare('SELECT credit_balance AS balance FROM accounts WHERE id = ?1')
    .bind(accountId)
    .first<{ balance: number }>();
  return row?.balance ?? null;
}

function balanceShown(html: string): string | undefined {
  return /data-testid="credit-balance">\s*([^<]+?)\s*</.exec(html)?.[1];
}

describe('an account in shard 1', () => {
  it('signs in, confirms its email with its grant, and its pages answer from shard 1', async () => {
    const { client, accountId, email, confirmed } = await signedInAccountIn(1, 'shard-one');
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.get('location')).toBe('/?email-confirmed=new');
    // Its rows are in shard 1; the directory holds only what finds it.
    expect(await balanceIn(env.DB_SHARD_1, accountId)).toBe(100);
    expect(await balanceIn(env.DB, accountId)).toBeNull();
    expect(
      await count(
        env.DB_SHARD_1,
        "SELECT COUNT(*) AS n FROM credit_ledger WHERE account_id = ?1 AND reason = 'signup_grant'",
        accountId,
      ),
    ).toBe(1);
    expect(
      await count(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM sessions WHERE account_id = ?1', accountId),
    ).toBe(1);
    expect(await count(env.DB, 'SELECT COUNT(*) AS n FROM sessions WHERE account_id = ?1', accountId)).toBe(
      0,
    );
    const lookups = await env.DB.prepare(
      'SELECT kind, COUNT(*) AS n FROM account_lookups WHERE account_id = ?1 GROUP BY kind ORDER BY kind',
    )
      .bind(accountId)
      .all<{ kind: string; n: number }>();
    expect(lookups.results).toEqual([
      { kind: 'email', n: 1 },
      { kind: 'session', n: 1 },
    ]);
    expect(
      await count(
        env.DB,
        'SELECT COUNT(*) AS n FROM signup_grant_mailboxes WHERE account_id = ?1',
        accountId,
      ),
    ).toBe(1);

    const overview = await client.get('/');
    expect(overview.status).toBe(200);
    expect(balanceShown(await overview.text())).toBe('100');
    const account = await client.get('/account');
    expect(account.status).toBe(200);
    expect(await account.text()).toContain(email);
    expect((await client.get('/history')).status).toBe(200);
    expect((await client.get('/keys')).status).toBe(200);

    // The email is taken, whichever shard holds it: a sign-up of it makes no account anywhere.
    const stranger = await new CookieClient().register(email, 'another long passphrase');
    expect(stranger.status).toBe(303);
    expect(stranger.headers.get('location')).toBe('/login?account-exists=1');
    expect(await count(env.DB, 'SELECT COUNT(*) AS n FROM accounts WHERE email = ?1', email)).toBe(0);
    expect(await count(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM accounts WHERE email = ?1', email)).toBe(1);

    // Signing out ends the session and its lookup.
    const signedOut = await client.submit('/', '/logout', {});
    expect(signedOut.status).toBe(303);
    expect((await client.get('/')).headers.get('location')).toMatch(/^\/login/);
    expect(
      await count(
        env.DB,
        "SELECT COUNT(*) AS n FROM account_lookups WHERE account_id = ?1 AND kind = 'session'",
        accountId,
      ),
    ).toBe(0);
  });

  it('gets the sign-up grant once per mailbox across the shards', async () => {
    const email = uniqueEmail('mailbox');
    const [local, domain] = email.split('@') as [string, string];
    const first = await signedInAccountIn(1, 'mailbox', { email });
    expect(first.confirmed.headers.get('location')).toBe('/?email-confirmed=new');
    // The same mailbox (a +tag) in shard 0, then again in shard 1: confirmed, no credits.
    for (const [shard, tag] of [
      [0, 'two'],
      [1, 'three'],
    ] as const) {
      const other = await signedInAccountIn(shard, 'mailbox', { email: `${local}+${tag}@${domain}` });
      expect(other.confirmed.headers.get('location')).toBe('/?email-confirmed=no-credits');
      const database = shard === 0 ? env.DB : env.DB_SHARD_1;
      expect(await balanceIn(database, other.accountId)).toBe(0);
      expect(
        await count(
          database,
          'SELECT COUNT(*) AS n FROM accounts WHERE id = ?1 AND email_confirmed_at IS NOT NULL',
          other.accountId,
        ),
      ).toBe(1);
      expect(
        await count(
          database,
          "SELECT COUNT(*) AS n FROM credit_ledger WHERE account_id = ?1 AND reason = 'signup_grant'",
          other.accountId,
        ),
      ).toBe(0);
    }
    // The first account's link again moves nothing.
    expect(await balanceIn(env.DB_SHARD_1, first.accountId)).toBe(100);
  });

  it('resets its password by email: the sessions of shard 1 end and the new password signs in', async () => {
    const { client, email } = await signedInAccountIn(1, 'shard-reset');
    const asked = await new CookieClient().submit('/forgot-password', '/forgot-password', { email });
    expect(asked.status).toBe(200);
    const link = new URL(await resetLinkFor(email));
    const path = link.pathname + link.search;
    const browser = new CookieClient();
    expect((await browser.get(path)).status).toBe(200);
    const token = link.searchParams.get('token') ?? '';
    const newPassword = 'a brand new passphrase';
    const done = await browser.submit(path, '/reset-password', { token, password: newPassword });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/login?password-reset=1');
    expect((await client.get('/')).headers.get('location')).toMatch(/^\/login/);
    expect((await new CookieClient().logIn(email, DEFAULT_PASSWORD)).status).toBe(401);
    expect((await new CookieClient().logIn(email, newPassword)).status).toBe(303);
  });

  it("changes its password: this session is rotated in shard 1, the others end, the new one's lookup finds it", async () => {
    const { client, accountId, email } = await signedInAccountIn(1, 'shard-password');
    const elsewhere = new CookieClient();
    expect((await elsewhere.logIn(email, DEFAULT_PASSWORD)).status).toBe(303);
    const changed = await client.submit('/account', '/account/password', {
      currentPassword: DEFAULT_PASSWORD,
      newPassword: 'a new long password',
    });
    expect(changed.status).toBe(303);
    expect(changed.headers.get('location')).toBe('/account?password-changed=1');
    expect((await client.get('/account')).status).toBe(200);
    expect((await elsewhere.get('/account')).status).toBe(303);
    expect(
      await count(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM sessions WHERE account_id = ?1', accountId),
    ).toBe(1);
    expect((await new CookieClient().logIn(email, 'a new long password')).status).toBe(303);
  });

  it('receives outcome hooks at its endpoint, recorded in shard 1', async () => {
    const { client, accountId } = await signedInAccountIn(1, 'shard-hook');
    const made = await client.submit('/outcomes', '/outcomes/endpoints', {
      provider: 'postmark',
      credential: '',
    });
    expect(made.status).toBe(200);
    const html = await made.text();
    const id = /\/hooks\/outcomes\/postmark\/(oe_[A-Za-z0-9_-]+)/.exec(html)?.[1];
    const credentials = /basic auth user <code>([^<]+)<\/code> and password <code>([^<]+)<\/code>/.exec(html);
    if (!id || !credentials) throw new Error('no endpoint in the page');
    expect(
      await count(
        env.DB,
        "SELECT COUNT(*) AS n FROM account_lookups WHERE kind = 'endpoint' AND value = ?1",
        id,
      ),
    ).toBe(1);
    const body = JSON.stringify({
      RecordType: 'Bounce',
      ID: 42,
      Type: 'HardBounce',
      Email: 'gone@example.com',
      BouncedAt: '2026-01-02T03:04:05.123-05:00',
    });
    const hook = await exports.default.fetch(
      new Request(`https://edge.test/hooks/outcomes/postmark/${id}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Basic ${btoa(`${credentials[1]}:${credentials[2]}`)}`,
        },
        body,
      }),
    );
    expect(hook.status).toBe(200);
    expect(await hook.json()).toMatchObject({ recorded: 1 });
    expect(
      await count(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM outcomes WHERE account_id = ?1', accountId),
    ).toBe(1);
    expect(await count(env.DB, 'SELECT COUNT(*) AS n FROM outcomes WHERE account_id = ?1', accountId)).toBe(
      0,
    );
  });
});

describe('the directory of accounts', () => {
  it('an account made confirmed in shard 1 claims its email and its mailbox in the directory; a second one of the email is refused', async () => {
    const shards = shardsOf(env);
    const email = uniqueEmail('made');
    const account = {
      id: crypto.randomUUID(),
      email,
      passwordHash: null,
      initialCredits: 100,
      now: Date.now(),
    };
    await insertAccount(shards.db(1), account);
    expect(await balanceIn(env.DB_SHARD_1, account.id)).toBe(100);
    expect(
      await count(
        env.DB,
        "SELECT COUNT(*) AS n FROM account_lookups WHERE kind = 'email' AND value = ?1 AND account_id = ?2",
        email,
        account.id,
      ),
    ).toBe(1);
    expect(
      await count(
        env.DB,
        'SELECT COUNT(*) AS n FROM signup_grant_mailboxes WHERE account_id = ?1',
        account.id,
      ),
    ).toBe(1);
    expect(
      await count(
        env.DB,
        'SELECT COUNT(*) AS n FROM account_shards WHERE account_id = ?1 AND shard = 1',
        account.id,
      ),
    ).toBe(1);
    const again = { ...account, id: crypto.randomUUID() };
    await expect(insertAccount(shards.db(1), again)).rejects.toThrow();
    await expect(insertAccount(shards.db(0), again)).rejects.toThrow();
    expect(await count(env.DB_SHARD_1, 'SELECT COUNT(*) AS n FROM accounts WHERE id = ?1', again.id)).toBe(0);
    expect(await count(env.DB, 'SELECT COUNT(*) AS n FROM accounts WHERE id = ?1', again.id)).toBe(0);
  });

  it("retention drops the directory's session lookups once every session of their age has ended, and only there", async () => {
    const shards = shardsOf(env);
    const now = Date.now();
    const insert = (createdAt: number, value: string) =>
      env.DB.prepare(
        "INSERT INTO account_lookups (kind, value, account_id, created_at) VALUES ('session', ?1, ?2, ?3)",
      )
        .bind(value, crypto.randomUUID(), createdAt)
        .run();
    const old = `old-${crypto.randomUUID()}`;
    const young = `young-${crypto.randomUUID()}`;
    await insert(now - SESSION_ABSOLUTE_MS - 1000, old);
    await insert(now - SESSION_ABSOLUTE_MS + 60_000, young);
    const cutoffs = retentionCutoffsOf(configOf(env), now);
    expect((await deleteExpired(shards.db(1), cutoffs, now)).sessionLookups).toBe(0);
    const report = await deleteExpired(shards.directory, cutoffs, now);
    expect(report.sessionLookups).toBe(1);
    const left = await env.DB.prepare(
      "SELECT value FROM account_lookups WHERE kind = 'session' AND value IN (?1, ?2)",
    )
      .bind(old, young)
      .all<{ value: string }>();
    expect(left.results).toEqual([{ value: young }]);
  });
});

describe('placement', () => {
  /** How many accounts the directory places in each shard. */
  async function placed(): Promise<[number, number]> {
    const counts = await env.DB.prepare(
      'SELECT shard, COUNT(*) AS n FROM account_shards GROUP BY shard',
    ).all<{
      shard: number;
      n: number;
    }>();
    const of = (shard: number) => counts.results.find((row) => row.shard === shard)?.n ?? 0;
    return [of(0), of(1)];
  }

  /** Places `n` accounts of no rows in `shard`, as if they had signed up there. */
  async function place(shard: number, n: number): Promise<void> {
    if (n <= 0) return;
    await env.DB.batch(
      Array.from({ length: n }, () =>
        env.DB.prepare('INSERT INTO account_shards (account_id, shard) VALUES (?1, ?2)').bind(
          crypto.randomUUID(),
          shard,
        ),
      ),
    );
  }

  it('a new account goes to the shard with the fewest accounts, the lowest on a tie', async () => {
    const shards = shardsOf(env);
    const [zero, one] = await placed();
    const fewer = one < zero ? 1 : 0;
    expect(await shardForNewAccount(shards)).toBe(fewer);
    // Fill the emptier shard up to the other: a tie goes to shard 0; one more, and shard 1 is chosen.
    await place(fewer, Math.abs(zero - one));
    expect(await shardForNewAccount(shards)).toBe(0);
    await place(0, 1);
    expect(await shardForNewAccount(shards)).toBe(1);
  });

  it.each([0, 1])(
    'a dashboard sign-up goes to shard %i when it has the fewest accounts, and is served there',
    async (shard) => {
      const [zero, one] = await placed();
      // The other shard gets one account more than this one.
      if (shard === 1) await place(0, one - zero + 1);
      else await place(1, zero - one + 1);
      const email = uniqueEmail(`placed-${shard}`);
      const client = new CookieClient();
      expect((await client.signUp(email, DEFAULT_PASSWORD)).status).toBe(303);
      const [here, there] = shard === 1 ? [env.DB_SHARD_1, env.DB] : [env.DB, env.DB_SHARD_1];
      expect(await count(here, 'SELECT COUNT(*) AS n FROM accounts WHERE email = ?1', email)).toBe(1);
      expect(await count(there, 'SELECT COUNT(*) AS n FROM accounts WHERE email = ?1', email)).toBe(0);
      expect(
        await count(
          env.DB,
          `SELECT COUNT(*) AS n FROM account_lookups l JOIN account_shards s ON s.account_id = l.account_id
         WHERE l.kind = 'email' AND l.value = ?1 AND s.shard = ?2`,
          email,
          shard,
        ),
      ).toBe(1);
      const account = await client.get('/account');
      expect(account.status).toBe(200);
      expect(await account.text()).toContain(email);
    },
  );
});
