// An email's claim in the directory whose account was never written (a sign-up that died between
// the two writes, storage/email-claims.ts): a later sign-up takes it over once it is older than
// the grace, one sign-up only when two race; a young claim, or one whose account exists, is
// taken; sign-in and the password reset answer it as an unknown email.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import {
  CookieClient,
  DEFAULT_PASSWORD,
  resetLinkCount,
  signedInAccountIn,
  uniqueEmail,
} from '../../../test/cookie-client.ts';
import { SESSION_COOKIE } from '../../services/accounts/sessions.ts';
import { INVALID_CREDENTIALS } from '../../services/accounts/sign-in.ts';
import { ABANDONED_EMAIL_CLAIM_MS, abandonedEmailClaim, freeEmailClaim } from '../../storage/email-claims.ts';
import { shardsOf } from '../../storage/shards.ts';

const SHARDS = [env.DB, env.DB_SHARD_1];
const TAKEN = '/login?account-exists=1';

/**
 * Claims `email` for an account that has no row, as a sign-up that died after its claim leaves
 * it: `shard` as placeAccount wrote it (none: shard 0, as a sign-up there writes it with the row).
 */
async function claimWithoutAccount(email: string, options: { ageMs: number; shard?: number }) {
  const accountId = crypto.randomUUID();
  await env.DB.prepare(
    "INSERT INTO account_lookups (kind, value, account_id, created_at) VALUES ('email', ?1, ?2, ?3)",
  )
    .bind(email, accountId, Date.now() - options.ageMs)
    .run();
  if (options.shard !== undefined)
    await env.DB.prepare('INSERT INTO account_shards (account_id, shard) VALUES (?1, ?2)')
      .bind(accountId, options.shard)
      .run();
  return accountId;
}

/** The account `email`'s claim names, or null. */
async function claimant(email: string): Promise<string | null> {
  const row = await env.DB.prepare(
    "SELECT account_id FROM account_lookups WHERE kind = 'email' AND value = ?1",
  )
    .bind(email)
    .first<{ account_id: string }>();
  return row?.account_id ?? null;
}

/** The ids of the accounts with `email`, in every shard. */
async function accountsWith(email: string): Promise<string[]> {
  const ids: string[] = [];
  for (const database of SHARDS) {
    const { results } = await database
      .prepare('SELECT id FROM accounts WHERE email = ?1')
      .bind(email)
      .all<{ id: string }>();
    ids.push(...results.map((row) => row.id));
  }
  return ids;
}

async function shardRow(accountId: string): Promise<number | null> {
  const row = await env.DB.prepare('SELECT shard FROM account_shards WHERE account_id = ?1')
    .bind(accountId)
    .first<{ shard: number }>();
  return row?.shard ?? null;
}

function startsSession(response: Response): boolean {
  return response.headers.getSetCookie().some((line) => line.startsWith(`${SESSION_COOKIE}=`));
}

const OLD = ABANDONED_EMAIL_CLAIM_MS + 60_000;
const YOUNG = ABANDONED_EMAIL_CLAIM_MS - 60_000;

describe('an email claimed for an account that was never written', () => {
  for (const shard of [undefined, 1]) {
    const where = shard === undefined ? 'in shard 0' : `in shard ${shard}`;

    it(`is taken over by a sign-up once older than the grace (its account ${where})`, async () => {
      const email = uniqueEmail('abandoned');
      const dead = await claimWithoutAccount(email, { ageMs: OLD, shard });
      const client = new CookieClient();
      const signedUp = await client.signUp(email);
      expect(signedUp.status).toBe(303);
      expect(signedUp.headers.get('location')).toBe('/?welcome=1');
      const [accountId, ...others] = await accountsWith(email);
      expect(others).toEqual([]);
      expect(accountId).toBeDefined();
      expect(accountId).not.toBe(dead);
      expect(await claimant(email)).toBe(accountId);
      // The dead account's shard row went with its claim; the new one's names where it lives.
      expect(await shardRow(dead)).toBeNull();
      const home = SHARDS[(await shardRow(accountId as string)) ?? Number.NaN];
      const row = await home
        ?.prepare('SELECT email, email_confirmed_at FROM accounts WHERE id = ?1')
        .bind(accountId)
        .first<{ email: string; email_confirmed_at: number | null }>();
      expect(row?.email).toBe(email);
      expect(row?.email_confirmed_at).not.toBeNull();
      expect((await new CookieClient().logIn(email, DEFAULT_PASSWORD)).status).toBe(303);
    });

    it(`is taken while younger than the grace, answered as an existing account (its account ${where})`, async () => {
      const email = uniqueEmail('young-claim');
      const dead = await claimWithoutAccount(email, { ageMs: YOUNG, shard });
      const existing = await signedInAccountIn(shard ?? 0, 'existing');
      const answers = [
        await new CookieClient().register(email, DEFAULT_PASSWORD),
        await new CookieClient().register(existing.email, 'another password 123'),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(303);
        expect(answer.headers.get('location')).toBe(TAKEN);
        expect(startsSession(answer)).toBe(false);
      }
      expect(await accountsWith(email)).toEqual([]);
      expect(await claimant(email)).toBe(dead);
      expect(await shardRow(dead)).toBe(shard ?? null);
    });

    it(`answers sign-in and the password reset as an unknown email, young or old (its account ${where})`, async () => {
      for (const ageMs of [YOUNG, OLD]) {
        const email = uniqueEmail('claim-sign-in');
        await claimWithoutAccount(email, { ageMs, shard });
        const client = new CookieClient();
        const signIn = await client.logIn(email, DEFAULT_PASSWORD);
        expect(signIn.status).toBe(401);
        expect(await signIn.text()).toContain(INVALID_CREDENTIALS);
        expect(client.cookies.has(SESSION_COOKIE)).toBe(false);
        const reset = await new CookieClient().submit('/forgot-password', '/forgot-password', { email });
        expect(reset.status).toBe(200);
        expect(await reset.text()).toContain('If an account uses this email address, it has a link');
        expect(resetLinkCount(email)).toBe(0);
      }
    });
  }

  for (const shard of [0, 1]) {
    it(`stays taken when older than the grace but its account exists in shard ${shard}`, async () => {
      const { email, accountId } = await signedInAccountIn(shard, 'old-claim');
      await env.DB.prepare("UPDATE account_lookups SET created_at = ?2 WHERE kind = 'email' AND value = ?1")
        .bind(email, Date.now() - OLD)
        .run();
      const taken = await new CookieClient().register(email, 'another password 123');
      expect(taken.status).toBe(303);
      expect(taken.headers.get('location')).toBe(TAKEN);
      expect(startsSession(taken)).toBe(false);
      expect(await accountsWith(email)).toEqual([accountId]);
      expect(await claimant(email)).toBe(accountId);
      expect(await shardRow(accountId)).toBe(shard);
    });
  }

  it('goes to one of two sign-ups that take it over at once', async () => {
    for (const shard of [undefined, 1]) {
      const email = uniqueEmail('raced-claim');
      const dead = await claimWithoutAccount(email, { ageMs: OLD, shard });
      const passwords = ['first password 123', 'second password 456'];
      const answers = await Promise.all(
        passwords.map((password) => new CookieClient().register(email, password)),
      );
      const locations = answers.map((answer) => answer.headers.get('location'));
      expect(answers.map((answer) => answer.status)).toEqual([303, 303]);
      expect([...locations].sort()).toEqual(['/?welcome=1', TAKEN]);
      const winner = passwords[locations.indexOf('/?welcome=1')] as string;
      const loser = passwords[locations.indexOf(TAKEN)] as string;
      const [accountId, ...others] = await accountsWith(email);
      expect(others).toEqual([]);
      expect(await claimant(email)).toBe(accountId);
      expect(await shardRow(dead)).toBeNull();
      expect((await new CookieClient().logIn(email, winner)).status).toBe(303);
      expect((await new CookieClient().logIn(email, loser)).status).toBe(401);
    }
  });

  it('is not freed by a sign-up that read it before another took the email over', async () => {
    const email = uniqueEmail('stale-claim');
    const dead = await claimWithoutAccount(email, { ageMs: OLD, shard: 1 });
    const shards = shardsOf(env);
    const stale = await abandonedEmailClaim(shards, email, Date.now());
    expect(stale?.accountId).toBe(dead);
    const signedUp = await new CookieClient().register(email, DEFAULT_PASSWORD);
    expect(signedUp.headers.get('location')).toBe('/?welcome=1');
    const [accountId] = await accountsWith(email);
    const taken = await abandonedEmailClaim(shards, email, Date.now() + OLD);
    expect(taken).toBeNull();
    // The late sign-up's delete finds the claim changed: nothing goes.
    expect(await freeEmailClaim(shards.directory, email, stale as NonNullable<typeof stale>)).toBe(false);
    expect(await claimant(email)).toBe(accountId);
    expect((await new CookieClient().logIn(email, DEFAULT_PASSWORD)).status).toBe(303);
  });

  it('is freed only as read: the same account with another time deletes nothing', async () => {
    const email = uniqueEmail('retimed-claim');
    const dead = await claimWithoutAccount(email, { ageMs: OLD });
    const shards = shardsOf(env);
    const read = await abandonedEmailClaim(shards, email, Date.now());
    expect(read).toEqual({ accountId: dead, createdAt: expect.any(Number) });
    const createdAt = (read?.createdAt ?? 0) + 1;
    expect(await freeEmailClaim(shards.directory, email, { accountId: dead, createdAt })).toBe(false);
    expect(await claimant(email)).toBe(dead);
    expect(await freeEmailClaim(shards.directory, email, read as NonNullable<typeof read>)).toBe(true);
    expect(await claimant(email)).toBeNull();
  });
});
