// Storage nobody fills for free (docs/money.md, "Quotas and free work"): a list needs a confirmed
// email beyond a small sandbox try kept a day; an account that bought nothing has a small daily
// budget that grows with the credits it buys; rows that cost nothing are dropped after days, and
// the downloads say so; the store's daily write budget refuses new lists with a 503 once what
// reaches D1 fills it, a list kept in its job's object counting only its row there.
import { env } from 'cloudflare:workers';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  balanceOf,
  call,
  countOf,
  countOfAccount,
  createJobAs,
  db,
  ledgerOf,
  listsCountOf,
  newCaller,
  refusalOf,
  settledDesk,
  storedRowsOf,
  type TestCaller,
} from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { insertUnconfirmedAccount } from '../../storage/accounts.ts';
import { deleteExpired } from '../../storage/retention.ts';
import { createApiKey } from '../keys/api-keys.ts';
import { retentionCutoffsOf, TRIAL_MAX_ROWS } from './storage-policy.ts';

const DAY = 86_400_000;

const jobsOf = (accountId: string) =>
  countOf('SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?', accountId);
const storageUsedBy = (accountId: string) =>
  countOfAccount('SELECT COALESCE(SUM(bytes), 0) AS n FROM storage_days WHERE account_id = ?', accountId);

/** Everything an account has stored, paid and counted: a refusal leaves all of it as it was. */
async function footprint(accountId: string) {
  return {
    jobs: await jobsOf(accountId),
    rows: await storedRowsOf(accountId),
    history: await countOfAccount('SELECT COUNT(*) AS n FROM verifications WHERE account_id = ?', accountId),
    balance: await balanceOf(accountId),
    ledger: (await ledgerOf(accountId)).length,
    storage: await storageUsedBy(accountId),
  };
}

const sandboxRows = (n: number, prefix = 'x') =>
  Array.from({ length: n }, (_, i) => `deliverable+${prefix}${i}@sandbox.test`);

function upload(key: string, emails: string[], vars?: Record<string, string>): Promise<Response> {
  return call('/api/v1/bulk/upload', { key, json: { emails }, ...(vars ? { vars } : {}) });
}

function uploadCsv(key: string, csv: string): Promise<Response> {
  return call('/api/v1/bulk/upload', { key, body: csv, headers: { 'content-type': 'text/csv' } });
}

/** An account signed up and never confirmed, with a test key (all it may have). */
async function unconfirmedAccount(): Promise<TestCaller> {
  const accountId = crypto.randomUUID();
  const now = Date.now();
  await insertUnconfirmedAccount(db(), {
    id: accountId,
    email: `unconfirmed-${accountId.slice(0, 8)}@example.com`,
    passwordHash: 'unused',
    now,
  });
  const key = await createApiKey(db(), { accountId, name: 'sandbox', mode: 'test', maxActiveKeys: 25, now });
  return { accountId, apiKey: key.secret, keyId: key.id };
}

interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

describe('storing a list needs a confirmed email', () => {
  it('refuses a 1,000-row list with an unconfirmed account’s test key: 403, nothing stored, charged or counted', async () => {
    const caller = await unconfirmedAccount();
    const before = await footprint(caller.accountId);
    const refused = await upload(caller.apiKey, sandboxRows(1_000));
    expect(refused.status).toBe(403);
    const body = await refused.json<ErrorBody>();
    expect(body).toMatchObject({
      code: 'EMAIL_NOT_CONFIRMED',
      details: { rows: 1_000, maxTrialRows: TRIAL_MAX_ROWS },
    });
    expect(body.message).toContain(`at most ${TRIAL_MAX_ROWS} rows`);
    expect(await footprint(caller.accountId)).toEqual(before);
  });

  it(`lets it try the sandbox with ${TRIAL_MAX_ROWS} rows, and not one more`, async () => {
    const caller = await unconfirmedAccount();
    const tried = await upload(caller.apiKey, sandboxRows(TRIAL_MAX_ROWS));
    expect(tried.status).toBe(200);
    expect(await tried.json()).toMatchObject({ totalEmails: TRIAL_MAX_ROWS, creditsCharged: 0 });
    const after = await footprint(caller.accountId);
    expect(after.rows).toBe(TRIAL_MAX_ROWS);
    const refused = await upload(caller.apiKey, sandboxRows(TRIAL_MAX_ROWS + 1, 'y'));
    expect(refused.status).toBe(403);
    expect(await footprint(caller.accountId)).toEqual(after);
  });

  it('refuses a signed-in unconfirmed person’s list, even one of free rows only', async () => {
    const caller = await unconfirmedAccount();
    // The dashboard's caller: the account, no key, live data.
    const refusal = await refusalOf(
      createJobAs({ accountId: caller.accountId, keyId: null }, 'live', ['not an address', 'nor this']),
    );
    expect(refusal.code).toBe('EMAIL_NOT_CONFIRMED');
    expect(await jobsOf(caller.accountId)).toBe(0);
  });

  it('deletes the unconfirmed account’s sandbox try and history after a day; a confirmed account’s stay 7', async () => {
    const trial = await unconfirmedAccount();
    const confirmed = await newCaller({ mode: 'test' });
    const jobIds: Record<string, string> = {};
    for (const [name, caller] of [
      ['trial', trial],
      ['confirmed', confirmed],
    ] as const) {
      const response = await upload(caller.apiKey, sandboxRows(3));
      jobIds[name] = (await response.json<{ jobId: string }>()).jobId;
      expect(
        (await call('/api/v1/verify', { key: caller.apiKey, json: { email: 'risky@example.test' } })).status,
      ).toBe(200);
      await settledDesk(caller.accountId);
      const twoDaysAgo = Date.now() - 2 * DAY;
      await env.DB.batch([
        env.DB.prepare('UPDATE jobs SET created_at = ? WHERE account_id = ?').bind(
          twoDaysAgo,
          caller.accountId,
        ),
        env.DB.prepare('UPDATE verifications SET created_at = ? WHERE account_id = ?').bind(
          twoDaysAgo,
          caller.accountId,
        ),
      ]);
    }
    const now = Date.now();
    await deleteExpired(db(), retentionCutoffsOf(configOf(env), now), now);
    expect(await countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ?', jobIds.trial)).toBe(0);
    expect(await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', jobIds.trial!)).toBe(0);
    expect(
      await countOfAccount('SELECT COUNT(*) AS n FROM verifications WHERE account_id = ?', trial.accountId),
    ).toBe(0);
    expect(await countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ?', jobIds.confirmed)).toBe(1);
    expect(
      await countOfAccount(
        'SELECT COUNT(*) AS n FROM verifications WHERE account_id = ?',
        confirmed.accountId,
      ),
    ).toBe(2);
  });
});

/** A CSV of `rows` rows that cost nothing (no address), each with 1 KB of cells. */
const freeRowsCsv = (rows: number, prefix: string) =>
  `email,note\n${Array.from({ length: rows }, (_, i) => `not an address ${prefix}${i},${'n'.repeat(1_000)}`).join('\n')}\n`;

const storageOf = async (key: string) =>
  (
    await (
      await call('/api/v1/account', { key })
    ).json<{
      account: { usage: { storage: { usedBytesToday: number; limitBytesPerDay: number } } };
    }>()
  ).account.usage.storage;

/** A Stripe purchase of `credits` paid at `paidAt`, as the payment webhook records it; its id. */
async function paidPurchase(accountId: string, credits: number, paidAt: number): Promise<string> {
  const id = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO purchases (id, account_id, kind, credits, amount, currency, status, created_at, paid_at)
     VALUES (?1, ?2, 'checkout', ?3, 900, 'usd', 'paid', ?4, ?4)`,
  )
    .bind(id, accountId, credits, paidAt)
    .run();
  return id;
}

/** A dispute of the purchase's whole payment in `status`, its credits as a hold left them. */
async function disputeOf(purchaseId: string, status: 'open' | 'lost' | 'won'): Promise<void> {
  await env.DB.prepare(
    `INSERT INTO disputes (id, account_id, purchase_id, amount, status, credits_owed, created_at)
     SELECT ?1, account_id, id, amount, ?2, 0, ?3 FROM purchases WHERE id = ?4`,
  )
    .bind(`du_${crypto.randomUUID()}`, status, Date.now(), purchaseId)
    .run();
}

describe('the daily storage budget grows with what the account bought', () => {
  it('holds an account that never paid to 5 MB a day of free rows (429), and lets it on once it buys credits', async () => {
    // The production defaults: no vars.
    const caller = await newCaller({ credits: 0 });
    expect(await storageOf(caller.apiKey)).toMatchObject({ usedBytesToday: 0, limitBytesPerDay: 5_000_000 });
    // 2,000 invalid rows with 1 KB of cells each: free, about 3.7 MB stored.
    expect((await uploadCsv(caller.apiKey, freeRowsCsv(2_000, 'a'))).status).toBe(200);
    const used = await storageUsedBy(caller.accountId);
    expect(used).toBeGreaterThan(3_000_000);
    const before = await footprint(caller.accountId);

    const refused = await uploadCsv(caller.apiKey, freeRowsCsv(2_000, 'b'));
    expect(refused.status).toBe(429);
    expect((await refused.json<ErrorBody>()).details).toMatchObject({
      quota: 'storage_bytes_per_day',
      limit: 5_000_000,
      used,
    });
    expect(await footprint(caller.accountId)).toEqual(before);

    // 1,000 credits bought today: 10 KB a credit more, 15 MB.
    await paidPurchase(caller.accountId, 1_000, Date.now());
    expect((await storageOf(caller.apiKey)).limitBytesPerDay).toBe(15_000_000);
    expect((await uploadCsv(caller.apiKey, freeRowsCsv(2_000, 'b'))).status).toBe(200);
  });

  it('counts credits bought in the last 30 days or held, whichever is more, up to 100 MB', async () => {
    const holder = await newCaller({ credits: 300 });
    expect((await storageOf(holder.apiKey)).limitBytesPerDay).toBe(5_000_000 + 300 * 10_000);
    // A purchase older than 30 days adds nothing; the credits it left are held.
    await paidPurchase(holder.accountId, 5_000, Date.now() - 31 * DAY);
    expect((await storageOf(holder.apiKey)).limitBytesPerDay).toBe(5_000_000 + 300 * 10_000);
    await paidPurchase(holder.accountId, 2_000, Date.now() - 29 * DAY);
    expect((await storageOf(holder.apiKey)).limitBytesPerDay).toBe(5_000_000 + 2_000 * 10_000);
    await paidPurchase(holder.accountId, 100_000, Date.now());
    expect((await storageOf(holder.apiKey)).limitBytesPerDay).toBe(100_000_000);
  });

  it('counts nothing for a purchase whose payment is disputed, until the dispute is won', async () => {
    const caller = await newCaller({ credits: 0 });
    const open = await paidPurchase(caller.accountId, 1_000, Date.now());
    await disputeOf(open, 'open');
    const lost = await paidPurchase(caller.accountId, 2_000, Date.now());
    await disputeOf(lost, 'lost');
    expect((await storageOf(caller.apiKey)).limitBytesPerDay).toBe(5_000_000);
    const won = await paidPurchase(caller.accountId, 500, Date.now());
    await disputeOf(won, 'won');
    expect((await storageOf(caller.apiKey)).limitBytesPerDay).toBe(5_000_000 + 500 * 10_000);
  });
});

describe('the store’s daily write budget', () => {
  it('refuses a new list with 503 DAILY_STORAGE_FULL until midnight UTC; nothing charged; single calls go on', async () => {
    const caller = await newCaller({ credits: 10 });
    const full = { GLOBAL_DAILY_STORAGE_BYTES: '1' };
    const before = await footprint(caller.accountId);
    const refused = await upload(caller.apiKey, ['a@nonexistent.test'], full);
    const now = Date.now();
    expect(refused.status).toBe(503);
    const body = await refused.json<ErrorBody>();
    const midnight = new Date(now - (now % DAY) + DAY).toISOString();
    expect(body).toMatchObject({ code: 'DAILY_STORAGE_FULL', details: { resetAt: midnight } });
    const retryAfter = Number(refused.headers.get('Retry-After'));
    expect(Math.abs(retryAfter - (Date.parse(midnight) - now) / 1000)).toBeLessThanOrEqual(5);
    expect(await footprint(caller.accountId)).toEqual(before);

    const single = await call('/api/v1/verify', {
      key: caller.apiKey,
      json: { email: 'not an address' },
      vars: full,
    });
    expect(single.status).toBe(200);
    // With room today, the same list is taken.
    const roomy = { GLOBAL_DAILY_STORAGE_BYTES: String((await d1BytesToday()) + 1_000_000) };
    expect((await upload(caller.apiKey, ['a@nonexistent.test'], roomy)).status).toBe(200);
  });

  it('counts what reaches D1: a list in its job’s object counts its row, not its lists; a list in D1 counts both', async () => {
    const caller = await newCaller({ credits: 1_000 });
    const list = (name: string) =>
      Array.from({ length: 200 }, (_, index) => `${name}-${index}@nonexistent.test`);
    const counted = async () => ({
      all: await storageUsedBy(caller.accountId),
      d1: await countOfAccount(
        'SELECT COALESCE(SUM(d1_bytes), 0) AS n FROM storage_days WHERE account_id = ?',
        caller.accountId,
      ),
    });
    const unlimited = { quotas: { globalStorageBytesPerDay: 1_000_000_000_000 } };
    const growth = async (create: () => Promise<unknown>) => {
      const before = await counted();
      await create();
      const after = await counted();
      return { all: after.all - before.all, d1: after.d1 - before.d1 };
    };
    const inObject = await growth(() => createJobAs(caller, 'live', list('o1'), unlimited));
    const inD1 = await growth(() => createJobAs(caller, 'live', list('d1'), { ...unlimited, store: 'd1' }));
    // The account's budget counts every byte wherever it goes; D1's share of an object's list is
    // its row, history entry, events and address filter.
    expect(inObject.all).toBeGreaterThan(200 * 1_200);
    expect(inObject.d1).toBeLessThan(inObject.all / 10);
    expect(inD1).toEqual({ all: inD1.all, d1: inD1.all });
    // Room in D1 today for an object's list but not for a D1 list: one is taken, the other refused.
    const tight = async (room: number) => ({
      quotas: { globalStorageBytesPerDay: (await d1BytesToday()) + room },
    });
    const between = await tight(inObject.d1 + Math.round((inD1.d1 - inObject.d1) / 2));
    const refused = await refusalOf(createJobAs(caller, 'live', list('d2'), { ...between, store: 'd1' }));
    expect(refused.code).toBe('DAILY_STORAGE_FULL');
    expect((await createJobAs(caller, 'live', list('o2'), between)).jobId).toEqual(expect.any(String));
    // D1's share is what reaches the budget: a byte short of it, the object's list is refused too.
    const short = await refusalOf(createJobAs(caller, 'live', list('o3'), await tight(inObject.d1 - 1)));
    expect(short.code).toBe('DAILY_STORAGE_FULL');
  });
});

/** The bytes every account wrote to D1 today, as the store's daily write budget counts them. */
async function d1BytesToday(): Promise<number> {
  const now = Date.now();
  return countOf('SELECT COALESCE(SUM(d1_bytes), 0) AS n FROM storage_days WHERE day = ?', now - (now % DAY));
}

interface ResultsBody {
  droppedRows?: Record<string, unknown>;
  results: { email: string; status: string }[];
  originalCsvData: { rows: string[][] } | null;
  pagination: { total: number };
}

describe('rows that cost nothing are kept days, not the retention period', () => {
  it('drops a job’s empty, invalid and duplicate rows after 7 days; its downloads keep the charged rows and say what went', async () => {
    const caller = await newCaller({ mode: 'test' });
    const csv = [
      'email,name',
      'deliverable@a.test,first',
      'not an address,broken',
      'deliverable@A.TEST,again',
      ',empty',
      'undeliverable@b.test,second',
      'deliverable@a.test,third time',
    ].join('\n');
    const { jobId } = await (await uploadCsv(caller.apiKey, `${csv}\n`)).json<{ jobId: string }>();
    const young = await (await uploadCsv(caller.apiKey, `${csv}\n`)).json<{ jobId: string }>();
    const results = async (query = '') => {
      const response = await call(`/api/v1/bulk/results/${jobId}${query}`, { key: caller.apiKey });
      expect(response.status).toBe(200);
      return response;
    };
    const kept = await (await results()).json<ResultsBody>();
    expect(kept.droppedRows).toBeUndefined();
    expect(kept.results).toHaveLength(6);
    expect((await results('?format=csv')).headers.get('Rcpt-Dropped-Rows')).toBeNull();

    await env.DB.prepare('UPDATE jobs SET created_at = ? WHERE id = ?')
      .bind(Date.now() - 8 * DAY, jobId)
      .run();
    const now = Date.now();
    // Sandbox jobs would go whole after 7 days: kept here, to see the free rows go alone.
    const report = await deleteExpired(
      db(),
      { ...retentionCutoffsOf(configOf(env), now), sandbox: now - 60 * DAY },
      now,
    );
    expect(report.freeRows).toBeGreaterThanOrEqual(4);
    expect(
      await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', jobId),
      'the first row of each address stays',
    ).toBe(2);
    expect(await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', young.jobId)).toBe(6);

    const dropped = await (await results()).json<ResultsBody>();
    expect(dropped.droppedRows).toEqual({
      invalid: 1,
      empty: 1,
      skipped: 0,
      duplicate: 2,
      droppedAt: new Date(now).toISOString(),
    });
    expect(dropped.results.map((result) => [result.email, result.status])).toEqual([
      ['deliverable@a.test', 'deliverable'],
      ['undeliverable@b.test', 'undeliverable'],
    ]);
    expect(dropped.originalCsvData?.rows).toEqual([
      ['deliverable@a.test', 'first'],
      ['undeliverable@b.test', 'second'],
    ]);
    expect(dropped.pagination.total).toBe(2);
    const csvDownload = await results('?format=csv');
    expect(csvDownload.headers.get('Rcpt-Dropped-Rows')).toBe('invalid=1, empty=1, skipped=0, duplicate=2');
    expect((parse(await csvDownload.text()) as string[][]).map((record) => record.slice(0, 2))).toEqual([
      ['email', 'name'],
      ['deliverable@a.test', 'first'],
      ['undeliverable@b.test', 'second'],
    ]);
    // The job's counts are what was uploaded; a second run drops nothing more.
    const status = await (await call(`/api/v1/bulk/status/${jobId}`, { key: caller.apiKey })).json<{
      job: { deliverableCount: number; undeliverableCount: number };
    }>();
    expect(status.job).toMatchObject({ deliverableCount: 1, undeliverableCount: 1 });
    await deleteExpired(db(), { ...retentionCutoffsOf(configOf(env), now), sandbox: now - 60 * DAY }, now);
    expect(await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', jobId)).toBe(2);
  });
});
