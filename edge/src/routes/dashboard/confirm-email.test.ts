// Email confirmation before free credits, through the Worker's fetch handler: a sign-up has
// no credits until its owner follows the emailed link; the link grants them exactly once,
// and a tampered, expired or foreign link grants nothing. Then the senders themselves.

import { env, exports } from 'cloudflare:workers';
import { issueSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it, vi } from 'vitest';
import {
  CookieClient,
  confirmationLinkCount,
  confirmationLinkFor,
  DASHBOARD_ORIGIN,
  uniqueEmail,
} from '../../../test/cookie-client.ts';
import { accountD1, accountD1OfEmail, accountIdOfEmail, dbOfAccount } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import {
  cloudflareEmailSender,
  confirmationSenderFor,
  consoleSender,
  type EmailBinding,
} from '../../services/accounts/confirmation-sender.ts';
import {
  CONFIRMATION_LINK_TTL_MS,
  CONFIRMATION_MAIL_LIMITS,
  confirmationLink,
} from '../../services/accounts/email-confirmation.ts';
import { SIGNUP_CREDITS } from '../../services/accounts/sign-in.ts';
import { createApiKey } from '../../services/keys/api-keys.ts';
import { insertAccount } from '../../storage/accounts.ts';
import { insertApiKeyWithin } from '../../storage/api-keys.ts';
import { createDb } from '../../storage/db.ts';

const PASSWORD = 'correct horse battery';
const [HOURLY] = CONFIRMATION_MAIL_LIMITS;

interface AccountState {
  id: string;
  balance: number;
  confirmedAt: number | null;
  grants: number;
}

async function accountState(email: string): Promise<AccountState> {
  const row = await (await accountD1OfEmail(email))
    .prepare(
      `SELECT a.id, a.credit_balance AS balance, a.email_confirmed_at AS confirmedAt,
       (SELECT COUNT(*) FROM credit_ledger l WHERE l.account_id = a.id AND l.reason = 'signup_grant') AS grants
     FROM accounts a WHERE a.email = ?1`,
    )
    .bind(email)
    .first<AccountState>();
  if (!row) throw new Error(`no account ${email}`);
  return row;
}

/** A new account, registered and signed in but not confirmed, and the link it was sent. */
async function unconfirmed(label: string): Promise<{ client: CookieClient; email: string; link: string }> {
  const client = new CookieClient();
  const email = uniqueEmail(label);
  expect((await client.register(email, PASSWORD)).status).toBe(303);
  const link = await confirmationLinkFor(email);
  return { client, email, link };
}

/** The path and query of a link, as the browser requests it. */
function pathOf(link: string): string {
  const url = new URL(link);
  return url.pathname + url.search;
}

function callVerify(key: string): Promise<Response> {
  return exports.default.fetch(
    new Request(`${DASHBOARD_ORIGIN}/api/v1/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-API-Key': key },
      body: JSON.stringify({ email: 'deliverable@example.com' }),
    }),
  );
}

/** A live key made outside the dashboard (as `npm run admin -- key create` does), its secret. */
async function operatorLiveKey(accountId: string): Promise<string> {
  const issued = await issueSecret('liveKey');
  const outcome = await insertApiKeyWithin(
    await dbOfAccount(accountId),
    {
      id: crypto.randomUUID(),
      accountId,
      name: 'operator',
      mode: 'live',
      keyHash: issued.hash,
      prefix: issued.prefix,
      createdAt: Date.now(),
    },
    25,
  );
  expect(outcome.inserted).toBe(true);
  return issued.secret;
}

function callApi(key: string, method: string, path: string, body?: unknown): Promise<Response> {
  return exports.default.fetch(
    new Request(`${DASHBOARD_ORIGIN}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'X-API-Key': key },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );
}

describe('before confirmation', () => {
  it('a sign-up has no credits and no grant; live keys get 402, test keys work; every page shows the banner', async () => {
    const { client, email, link } = await unconfirmed('before');
    expect(link).toMatch(/^https:\/\/localhost\/confirm-email\?token=[0-9a-f-]{36}\.\d{13}\.[\w-]{43}$/);
    const state = await accountState(email);
    expect(state).toMatchObject({ balance: 0, confirmedAt: null, grants: 0 });

    const db = await dbOfAccount(state.id);
    // A live key of an unconfirmed account exists only if an operator made it.
    const live = await operatorLiveKey(state.id);
    const refused = await callVerify(live);
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ code: 'INSUFFICIENT_CREDITS' });
    // Sandbox answers cost rcpt no DNS and no SMTP: an unconfirmed account may integrate.
    const sandbox = await createApiKey(db, {
      accountId: state.id,
      name: 'test',
      mode: 'test',
      maxActiveKeys: 25,
      now: Date.now(),
    });
    const answered = await callVerify(sandbox.secret);
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ data: { status: 'deliverable' } });

    for (const path of ['/', '/keys', '/account']) {
      const html = await (await client.get(path)).text();
      expect(html, path).toContain('data-testid="confirm-banner"');
      expect(html, path).toContain(`We sent a link to ${email}`);
    }
    const overview = await (await client.get('/')).text();
    expect(overview).toMatch(/data-testid="credit-balance">\s*0\s*</);
  });
});

describe('live keys and webhook settings need a confirmed email', () => {
  async function webhookState(accountId: string) {
    return (await accountD1(accountId))
      .prepare(
        `SELECT webhook_url AS url, webhook_secret AS secret,
         (SELECT COUNT(*) FROM webhook_deliveries WHERE account_id = ?1) AS deliveries
       FROM accounts WHERE id = ?1`,
      )
      .bind(accountId)
      .first();
  }

  it('the dashboard explains it and refuses with 403; test keys are made; after confirming, all of it works', async () => {
    const { client, email, link } = await unconfirmed('gate-dashboard');
    const { id } = await accountState(email);
    const keysPage = await (await client.get('/keys')).text();
    expect(keysPage).toContain('data-testid="live-key-needs-confirmation"');
    expect(keysPage).toContain(
      `Live keys need a confirmed email address: follow the link we sent to ${email}`,
    );
    expect(keysPage).toMatch(/<input type="radio" name="mode" value="live" disabled=""/);

    const live = await client.submit('/keys', '/keys', { name: 'prod', mode: 'live' });
    expect(live.status).toBe(403);
    expect(await live.text()).toContain(
      'Live keys and webhook settings need the account&#39;s email address confirmed',
    );
    const test = await client.submit('/keys', '/keys', { name: 'sandbox', mode: 'test' });
    expect(test.status).toBe(201);
    expect(await test.text()).toContain('rk_test_');
    const modes = await (await accountD1(id))
      .prepare('SELECT mode FROM api_keys WHERE account_id = ?1')
      .bind(id)
      .all();
    expect(modes.results).toEqual([{ mode: 'test' }]);

    const hooksPage = await (await client.get('/webhooks')).text();
    expect(hooksPage).toContain(
      `Webhooks can be set up once your email address is confirmed: follow the link we sent to ${email}`,
    );
    for (const [action, fields] of [
      ['/webhooks/url', { url: 'https://hooks.rcpt.test/unconfirmed' }],
      ['/webhooks/secret', {}],
      ['/webhooks/test', {}],
    ] as const) {
      const answer = await client.submit('/webhooks', action, fields);
      expect(answer.status, action).toBe(403);
      expect(await answer.text(), action).toContain(
        'webhook settings need the account&#39;s email address confirmed',
      );
    }
    expect(await webhookState(id)).toEqual({ url: null, secret: null, deliveries: 0 });

    expect((await client.get(pathOf(link))).status).toBe(303);
    expect((await client.submit('/keys', '/keys', { name: 'prod', mode: 'live' })).status).toBe(201);
    expect(await (await client.get('/keys')).text()).not.toContain('live-key-needs-confirmation');
    expect(
      (await client.submit('/webhooks', '/webhooks/url', { url: 'https://hooks.rcpt.test/confirmed' }))
        .status,
    ).toBe(303);
    expect((await client.submit('/webhooks', '/webhooks/secret', {})).status).toBe(200);
  });

  it('the API answers 403 EMAIL_NOT_CONFIRMED to webhook settings from a live key of an unconfirmed account', async () => {
    const { email, link } = await unconfirmed('gate-api');
    const { id } = await accountState(email);
    const key = await operatorLiveKey(id);
    for (const [method, path, body] of [
      ['PUT', '/api/v1/webhooks', { url: 'https://hooks.rcpt.test/unconfirmed' }],
      ['POST', '/api/v1/webhooks/secret', undefined],
      ['POST', '/api/v1/webhooks/test', undefined],
    ] as const) {
      const answer = await callApi(key, method, path, body);
      expect(answer.status, path).toBe(403);
      expect(await answer.json(), path).toMatchObject({
        success: false,
        code: 'EMAIL_NOT_CONFIRMED',
        message: expect.stringContaining('confirmed'),
      });
    }
    expect(await webhookState(id)).toEqual({ url: null, secret: null, deliveries: 0 });
    await expect(
      createApiKey(await dbOfAccount(id), {
        accountId: id,
        name: 'live',
        mode: 'live',
        maxActiveKeys: 25,
        now: Date.now(),
      }),
    ).rejects.toMatchObject({ code: 'EMAIL_NOT_CONFIRMED' });

    expect((await new CookieClient().get(pathOf(link))).status).toBe(303);
    const set = await callApi(key, 'PUT', '/api/v1/webhooks', { url: 'https://hooks.rcpt.test/confirmed' });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ url: 'https://hooks.rcpt.test/confirmed' });
  });
});

describe('following the link', () => {
  it(`confirms the account and grants ${SIGNUP_CREDITS} credits with one ledger row; the banner goes`, async () => {
    const { client, email, link } = await unconfirmed('confirm');
    const confirmed = await client.get(pathOf(link));
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.get('location')).toBe('/?email-confirmed=new');
    const state = await accountState(email);
    expect(state).toMatchObject({ balance: SIGNUP_CREDITS, grants: 1 });
    expect(state.confirmedAt).toEqual(expect.any(Number));
    const ledger = await (await accountD1(state.id))
      .prepare('SELECT delta, balance_after, reason, reference FROM credit_ledger WHERE account_id = ?1')
      .bind(state.id)
      .all();
    expect(ledger.results).toEqual([
      { delta: SIGNUP_CREDITS, balance_after: SIGNUP_CREDITS, reason: 'signup_grant', reference: state.id },
    ]);
    const overview = await (await client.get('/?email-confirmed=new')).text();
    expect(overview).not.toContain('data-testid="confirm-banner"');
    expect(overview).toContain('Your email address is confirmed');
    expect(overview).toMatch(new RegExp(`data-testid="credit-balance">\\s*${SIGNUP_CREDITS}\\s*<`));
  });

  it('grants once however often the link is followed: again, signed out, and many at once', async () => {
    const { client, email, link } = await unconfirmed('twice');
    const first = await client.get(pathOf(link));
    expect(first.headers.get('location')).toBe('/?email-confirmed=new');
    const again = await client.get(pathOf(link));
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/?email-confirmed=already');
    const signedOut = await new CookieClient().get(pathOf(link));
    expect(signedOut.headers.get('location')).toBe('/login?email-confirmed=already');
    expect(await accountState(email)).toMatchObject({ balance: SIGNUP_CREDITS, grants: 1 });
  });

  it('grants once when the same link arrives many times at once', async () => {
    const { email, link } = await unconfirmed('concurrent');
    const answers = await Promise.all(Array.from({ length: 8 }, () => new CookieClient().get(pathOf(link))));
    const landings = answers.map((answer) => answer.headers.get('location'));
    expect(landings.filter((location) => location === '/login?email-confirmed=new')).toHaveLength(1);
    expect(landings.filter((location) => location === '/login?email-confirmed=already')).toHaveLength(7);
    expect(await accountState(email)).toMatchObject({ balance: SIGNUP_CREDITS, grants: 1 });
  });

  it('refuses a tampered, foreign or malformed link with 400 CONFIRMATION_LINK_INVALID, granting nothing', async () => {
    const { email, link } = await unconfirmed('tamper');
    const other = await unconfirmed('tamper-other');
    const token = new URL(link).searchParams.get('token') ?? '';
    const [accountId = '', expiry = '', mac = ''] = token.split('.');
    const [otherId = '', otherExpiry = '', otherMac = ''] = (
      new URL(other.link).searchParams.get('token') ?? ''
    ).split('.');
    const flipped = `${mac.slice(0, 10)}${mac[10] === 'A' ? 'B' : 'A'}${mac.slice(11)}`;
    const secretsKey = configOf(env).SECRETS_KEY;
    // A link correctly signed, but for another address of this account.
    const otherAddress = await confirmationLink(secretsKey, {
      accountId,
      email: `someone-else-${email}`,
      origin: DASHBOARD_ORIGIN,
      now: Date.now(),
    });
    const forged = [
      `${accountId}.${expiry}.${flipped}`, // the MAC altered
      `${accountId}.${Number(expiry) + 86_400_000}.${mac}`, // the expiry pushed back
      `${otherId}.${expiry}.${mac}`, // this MAC on the other account
      `${accountId}.${otherExpiry}.${otherMac}`, // the other account's MAC on this one
      new URL(otherAddress.link).searchParams.get('token') ?? '',
      `${crypto.randomUUID()}.${expiry}.${mac}`, // no such account
      'not-a-token',
      '',
    ];
    for (const candidate of forged) {
      const answer = await new CookieClient().get(`/confirm-email?token=${encodeURIComponent(candidate)}`);
      expect(answer.status, candidate).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await answer.text()).toContain('CONFIRMATION_LINK_INVALID');
    }
    expect(await accountState(email)).toMatchObject({ balance: 0, confirmedAt: null, grants: 0 });
    expect(await accountState(other.email)).toMatchObject({ balance: 0, confirmedAt: null, grants: 0 });
  });

  it('refuses an expired link with 410 CONFIRMATION_LINK_EXPIRED, granting nothing; a new one works', async () => {
    const { client, email } = await unconfirmed('expired');
    const { id } = await accountState(email);
    const old = await confirmationLink(configOf(env).SECRETS_KEY, {
      accountId: id,
      email,
      origin: DASHBOARD_ORIGIN,
      now: Date.now() - CONFIRMATION_LINK_TTL_MS - 1000,
    });
    const answer = await client.get(pathOf(old.link));
    expect(answer.status).toBe(410);
    expect(await answer.text()).toContain('CONFIRMATION_LINK_EXPIRED');
    expect(await accountState(email)).toMatchObject({ balance: 0, confirmedAt: null, grants: 0 });

    const sent = confirmationLinkCount(email);
    expect((await client.submit('/', '/confirm-email/resend', {})).status).toBe(200);
    const fresh = await confirmationLinkFor(email, sent);
    expect((await client.get(pathOf(fresh))).headers.get('location')).toBe('/?email-confirmed=new');
    expect(await accountState(email)).toMatchObject({ balance: SIGNUP_CREDITS, grants: 1 });
  });
});

describe('free credits once per mailbox', () => {
  /** Registers (which signs in) and confirms `email`; the landing of the link. */
  async function confirmNew(email: string): Promise<{ client: CookieClient; landing: string | null }> {
    const client = new CookieClient();
    expect((await client.register(email, PASSWORD)).status).toBe(303);
    const link = await confirmationLinkFor(email);
    const confirmed = await client.get(pathOf(link));
    expect(confirmed.status).toBe(303);
    return { client, landing: confirmed.headers.get('location') };
  }

  it('a second account of the same mailbox (+tag) is confirmed without free credits, and the page says so', async () => {
    const user = `farm-${crypto.randomUUID().slice(0, 8)}`;
    const first = await confirmNew(`${user}@example.com`);
    expect(first.landing).toBe('/?email-confirmed=new');
    const second = await confirmNew(`${user}+2@example.com`);
    expect(second.landing).toBe('/?email-confirmed=no-credits');
    expect(await accountState(`${user}@example.com`)).toMatchObject({ balance: SIGNUP_CREDITS, grants: 1 });
    const other = await accountState(`${user}+2@example.com`);
    expect(other).toMatchObject({ balance: 0, grants: 0 });
    expect(other.confirmedAt).toEqual(expect.any(Number));
    const overview = await (await second.client.get('/?email-confirmed=no-credits')).text();
    expect(overview).not.toContain('data-testid="confirm-banner"');
    expect(overview).toContain('It received no free credits: they go once per mailbox');
    expect(overview).toMatch(/data-testid="credit-balance">\s*0\s*</);
    const claimed = await env.DB.prepare('SELECT account_id FROM signup_grant_mailboxes WHERE mailbox = ?1')
      .bind(`${user}@example.com`)
      .all<{ account_id: string }>();
    expect(claimed.results).toEqual([{ account_id: (await accountState(`${user}@example.com`)).id }]);
  });

  it('counts a Gmail address without its dots: the dotted spelling of a granted mailbox gets nothing', async () => {
    const user = `farm${crypto.randomUUID().slice(0, 8)}`;
    expect((await confirmNew(`${user}@gmail.com`)).landing).toBe('/?email-confirmed=new');
    const dotted = `${user.slice(0, 2)}.${user.slice(2)}+x@gmail.com`;
    expect((await confirmNew(dotted)).landing).toBe('/?email-confirmed=no-credits');
    expect(await accountState(dotted)).toMatchObject({ balance: 0, grants: 0 });
    // Elsewhere dots matter: another mailbox, its own grant.
    const elsewhere = `${user.slice(0, 2)}.${user.slice(2)}@example.com`;
    expect((await confirmNew(elsewhere)).landing).toBe('/?email-confirmed=new');
  });

  it("an operator's account with credits holds its mailbox: a sign-up of it gets none, the operator's grant stands", async () => {
    const user = `ops-${crypto.randomUUID().slice(0, 8)}`;
    const operatorAccount = crypto.randomUUID();
    await insertAccount(createDb(env.DB), {
      id: operatorAccount,
      email: `${user}@example.com`,
      passwordHash: null,
      initialCredits: 500,
      now: Date.now(),
    });
    expect((await confirmNew(`${user}+signup@example.com`)).landing).toBe('/?email-confirmed=no-credits');
    expect(await accountState(`${user}+signup@example.com`)).toMatchObject({ balance: 0, grants: 0 });
    expect(await accountState(`${user}@example.com`)).toMatchObject({
      id: operatorAccount,
      balance: 500,
      grants: 1,
    });
  });

  it('grants one of many accounts of one mailbox confirming at once, in SQL', async () => {
    const user = `race-${crypto.randomUUID().slice(0, 8)}`;
    // As many accounts as the mailbox may be sent links for in an hour.
    const emails = Array.from({ length: HOURLY.limit }, (_, index) => `${user}+${index}@example.com`);
    const links: string[] = [];
    for (const email of emails) {
      expect((await new CookieClient().register(email, PASSWORD)).status).toBe(303);
      links.push(await confirmationLinkFor(email));
    }
    const answers = await Promise.all(links.map((link) => new CookieClient().get(pathOf(link))));
    const landings = answers.map((answer) => answer.headers.get('location'));
    expect(landings.filter((location) => location === '/login?email-confirmed=new')).toHaveLength(1);
    expect(landings.filter((location) => location === '/login?email-confirmed=no-credits')).toHaveLength(
      HOURLY.limit - 1,
    );
    const states = await Promise.all(emails.map(accountState));
    expect(states.reduce((sum, state) => sum + state.grants, 0)).toBe(1);
    expect(states.reduce((sum, state) => sum + state.balance, 0)).toBe(SIGNUP_CREDITS);
    expect(states.every((state) => state.confirmedAt !== null)).toBe(true);
  });
});

describe('sending the link again', () => {
  it(`sends a new link until the mailbox has had ${HOURLY.limit} in the hour (the sign-up's counts), then 429 with Retry-After`, async () => {
    const { client, email } = await unconfirmed('resend');
    for (let attempt = 1; attempt < HOURLY.limit; attempt++) {
      const sent = confirmationLinkCount(email);
      const answer = await client.submit('/', '/confirm-email/resend', {});
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain(`We sent a new link to ${email}`);
      await confirmationLinkFor(email, sent);
    }
    const sent = confirmationLinkCount(email);
    const limited = await client.submit('/', '/confirm-email/resend', {});
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThan(60);
    expect(await limited.text()).toContain('rcpt has sent as many confirmation emails to this mailbox');
    expect(confirmationLinkCount(email)).toBe(sent);
  });

  it('sends nothing for a confirmed account, and needs a session and the form token', async () => {
    const client = new CookieClient();
    const email = uniqueEmail('resend-confirmed');
    expect((await client.signUp(email, PASSWORD)).status).toBe(303);
    const sent = confirmationLinkCount(email);
    const answer = await client.submit('/', '/confirm-email/resend', {});
    expect(answer.headers.get('location')).toBe('/?email-confirmed=already');
    expect((await client.post('/confirm-email/resend', {})).status).toBe(403);
    const signedOut = await new CookieClient().post('/confirm-email/resend', {});
    expect(signedOut.headers.get('location')).toBe('/login');
    expect(confirmationLinkCount(email)).toBe(sent);
  });
});

describe('confirmation emails per mailbox', () => {
  it(`sends at most ${HOURLY.limit} an hour to one mailbox however it is spelt, from any network; past that a new and a taken address get the same 429`, async () => {
    const user = `bomb-${crypto.randomUUID().slice(0, 8)}`;
    for (let tag = 1; tag <= HOURLY.limit; tag++) {
      const email = `${user}+${tag}@example.com`;
      expect((await new CookieClient().register(email, PASSWORD)).status).toBe(303);
      await confirmationLinkFor(email);
    }
    const fresh = `${user}+new@example.com`;
    const taken = `${user}+1@example.com`;
    const answers = [];
    for (const email of [fresh, taken]) {
      const answer = await new CookieClient().register(email, PASSWORD);
      expect(answer.status, email).toBe(429);
      expect(Number(answer.headers.get('Retry-After'))).toBeGreaterThan(60);
      answers.push(
        (await answer.text()).replaceAll(email, 'EMAIL').replace(/name="_csrf" value="[^"]+"/, ''),
      );
    }
    expect(answers[0]).toContain('rcpt has sent as many confirmation emails to this mailbox');
    expect(answers[0]).toBe(answers[1]);
    // Nothing was created or sent for the refused sign-up.
    // An account's row is written after its email's claim in the directory, in whichever shard.
    expect(await accountIdOfEmail(fresh)).toBeNull();
    expect(confirmationLinkCount(fresh)).toBe(0);
    expect(confirmationLinkCount(taken)).toBe(1);

    // The owner of one of those accounts cannot have it sent again either: one mailbox, one budget.
    const client = new CookieClient();
    expect((await client.logIn(`${user}+2@example.com`, PASSWORD)).status).toBe(303);
    expect((await client.submit('/', '/confirm-email/resend', {})).status).toBe(429);
    expect(confirmationLinkCount(`${user}+2@example.com`)).toBe(1);

    // Another mailbox is not held up.
    const other = `${user}-other@example.com`;
    expect((await new CookieClient().register(other, PASSWORD)).status).toBe(303);
    await confirmationLinkFor(other);
  });
});

describe('confirmation emails per mailbox over a day', () => {
  const [, DAILY] = CONFIRMATION_MAIL_LIMITS;
  const dayLimiter = (mailbox: string) =>
    env.KEY_LIMITER.get(env.KEY_LIMITER.idFromName(`confirmation-mail:${DAILY.windowMs}:${mailbox}`));

  it(`refuses past ${DAILY.limit} a day even in a fresh hour, with a Retry-After beyond the hour`, async () => {
    const user = `daily-${crypto.randomUUID().slice(0, 8)}`;
    // The day's earlier hours: as many emails as the day allows.
    for (let sent = 0; sent < DAILY.limit; sent++)
      expect((await dayLimiter(`${user}@example.com`).hit(DAILY.limit, DAILY.windowMs)).allowed).toBe(true);
    const answer = await new CookieClient().register(`${user}+late@example.com`, PASSWORD);
    expect(answer.status).toBe(429);
    expect(Number(answer.headers.get('Retry-After'))).toBeGreaterThan(HOURLY.windowMs / 1000);
    expect(confirmationLinkCount(`${user}+late@example.com`)).toBe(0);
  });

  it("attempts refused within the hour spend none of the day's allowance", async () => {
    const user = `hammer-${crypto.randomUUID().slice(0, 8)}`;
    for (let tag = 0; tag < HOURLY.limit + 5; tag++) {
      const answer = await new CookieClient().register(`${user}+${tag}@example.com`, PASSWORD);
      expect(answer.status).toBe(tag < HOURLY.limit ? 303 : 429);
    }
    const probe = await dayLimiter(`${user}@example.com`).hit(DAILY.limit, DAILY.windowMs);
    expect(probe).toMatchObject({ allowed: true, remaining: DAILY.limit - HOURLY.limit - 1 });
  });
});

describe('senders', () => {
  const email = {
    kind: 'email-confirmation' as const,
    to: 'dana@example.com',
    expiresAt: Date.now() + CONFIRMATION_LINK_TTL_MS,
  };

  it('the console sender writes the link as one line, for a loopback host only', async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    try {
      await consoleSender.send({ ...email, link: 'http://127.0.0.1:8787/confirm-email?token=t' });
      await expect(
        consoleSender.send({ ...email, link: 'https://rcpt.example/confirm-email?token=t' }),
      ).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    } finally {
      spy.mockRestore();
    }
    expect(lines).toEqual([
      'rcpt: confirm the email of the new account dana@example.com: http://127.0.0.1:8787/confirm-email?token=t',
    ]);
  });

  it('the Cloudflare sender hands the message to the send_email binding and logs nothing', async () => {
    const messages: Parameters<EmailBinding['send']>[0][] = [];
    const binding: EmailBinding = {
      send: async (message) => {
        messages.push(message);
        return { messageId: 'm1' };
      },
    };
    const logged = vi.spyOn(console, 'log');
    const link = 'https://rcpt.example/confirm-email?token=secret-bearing';
    try {
      await cloudflareEmailSender(binding, 'accounts@rcpt.example').send({ ...email, link });
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      from: 'accounts@rcpt.example',
      to: 'dana@example.com',
      subject: 'Confirm your email address for rcpt',
    });
    expect(messages[0]?.text).toContain(link);
    expect(messages[0]?.text).toContain('24 hours');
    // A password reset link: its own subject and words, and its hour.
    await cloudflareEmailSender(binding, 'accounts@rcpt.example').send({
      kind: 'password-reset',
      to: 'dana@example.com',
      link,
      expiresAt: Date.now() + 3_600_000,
    });
    expect(messages[1]?.subject).toBe('Choose a new password for rcpt');
    expect(messages[1]?.text).toContain(link);
    expect(messages[1]?.text).toContain('once, for 60 minutes');
  });

  it('a deployment with the Cloudflare sender but no binding refuses to send (503), never falls back to the console', () => {
    const config = { ...configOf(env), EMAIL_SENDER: 'cloudflare' as const, EMAIL_FROM: 'a@rcpt.example' };
    expect(() => confirmationSenderFor(config, env)).toThrow(/EMAIL binding/);
    const sender = confirmationSenderFor(config, { ...env, EMAIL: { send: async () => ({}) } } as Env);
    expect(sender).not.toBe(consoleSender);
  });
});
