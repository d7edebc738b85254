// Per-account quotas: the storage budget a day, jobs in flight, API keys. Each refusal is 429
// QUOTA_EXCEEDED with its details, stores nothing and charges nothing; the check and the insert
// are one transaction, so concurrent requests cannot both take the last slot.
import { env } from 'cloudflare:workers';
import type { ApiError } from '@rcpt/shared/errors';
import { describe, expect, it } from 'vitest';
import { signedInAccount } from '../../../test/cookie-client.ts';
import {
  balanceOf,
  type CallOptions,
  call,
  countOf,
  countOfAccount,
  createJobAs,
  db,
  dbOfAccount,
  ledgerOf,
  listsCountOf,
  newCaller,
  quotas,
  refusalOf,
  storedRowsOf,
  type TestCaller,
} from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { failJob } from '../../storage/job-results.ts';
import { deleteExpired } from '../../storage/retention.ts';
import { createApiKey } from '../keys/api-keys.ts';
import { retentionCutoffsOf } from './storage-policy.ts';

const DAY = 86_400_000;

interface QuotaBody {
  code: string;
  message: string;
  details: { quota: string; limit: number; used: number; requested: number; resetAt: string | null };
}

const jobsOf = (accountId: string) =>
  countOfAccount('SELECT COUNT(*) AS n FROM jobs WHERE account_id = ?', accountId);
const historyOf = (accountId: string) =>
  countOfAccount('SELECT COUNT(*) AS n FROM verifications WHERE account_id = ?', accountId);

/** Everything an account has stored and paid: a refusal must leave all of it as it was. */
async function footprint(accountId: string) {
  return {
    jobs: await jobsOf(accountId),
    rows: await storedRowsOf(accountId),
    history: await historyOf(accountId),
    balance: await balanceOf(accountId),
    ledger: (await ledgerOf(accountId)).length,
  };
}

function upload(caller: TestCaller, emails: string[], options: CallOptions = {}): Promise<Response> {
  return call('/api/v1/bulk/upload', { key: caller.apiKey, json: { emails }, ...options });
}

function uploadMultipart(caller: TestCaller, csv: string, options: CallOptions = {}): Promise<Response> {
  const form = new FormData();
  form.set('file', new File([csv], 'list.csv', { type: 'text/csv' }));
  return call('/api/v1/bulk/upload', { key: caller.apiKey, body: form, ...options });
}

const newKey = async (caller: Pick<TestCaller, 'accountId'>, maxActiveKeys: number) =>
  createApiKey(await dbOfAccount(caller.accountId), {
    accountId: caller.accountId,
    name: 'k',
    mode: 'live',
    maxActiveKeys,
    now: Date.now(),
  });
const activeKeysOf = (accountId: string) =>
  countOfAccount('SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL', accountId);

const rows = (n: number, prefix = 'x') =>
  Array.from({ length: n }, (_, i) => `deliverable+${prefix}${i}@sandbox.test`);

describe('the quotas have production defaults', () => {
  it('5 MB a day plus 10 KB a credit up to 100 MB, 10 jobs in flight, 25 active keys, 5 live prober tokens, 50 MB a day per publishable key, sandbox data and free rows kept 7 days', () => {
    // wrangler.toml sets none of them: these are the code's defaults.
    expect(quotas()).toEqual({
      storage: { baseBytes: 5_000_000, bytesPerCredit: 10_000, maxBytes: 100_000_000 },
      jobsInFlight: 10,
      apiKeys: 25,
      proberTokens: 5,
      publishableStorageBytesPerDay: 50_000_000,
      // 80 % of D1's 10 GB over the 60 days of retention.
      globalStorageBytesPerDay: 133_333_333,
    });
    expect(configOf(env).SANDBOX_RETENTION_DAYS).toBe(7);
    expect(configOf(env).FREE_ROWS_RETENTION_DAYS).toBe(7);
  });
});

/** The bytes the account's writes counted today and before (storage_days). */
const storageUsedBy = (accountId: string) =>
  countOfAccount('SELECT COALESCE(SUM(bytes), 0) AS n FROM storage_days WHERE account_id = ?', accountId);
const budget = (bytes: number) => ({ QUOTA_STORAGE_BYTES_PER_DAY: String(bytes) });
/** A budget of `bytes` a day whatever the account bought or holds. */
const flatBudget = (bytes: number) => ({ baseBytes: bytes, bytesPerCredit: 0, maxBytes: bytes });

describe('the storage budget: bytes a day, counted by every write path', () => {
  it('counts a charged list by its bytes, cells included, though its only address is refunded', async () => {
    // An IP literal is valid syntax, charged, answered without DNS or SMTP and refunded: the 1 KB
    // cells beside it would be stored for nothing if only charged work (or rows) counted.
    const caller = await newCaller({ credits: 10 });
    const note = 'n'.repeat(1_000);
    const csv = `email,note\na@[192.0.2.1],${note}\n${Array.from({ length: 99 }, (_, i) => `not an address ${i},${note}`).join('\n')}\n`;
    expect((await uploadMultipart(caller, csv)).status).toBe(200);
    const used = await storageUsedBy(caller.accountId);
    expect(used).toBeGreaterThan(100 * 1_000);
    const before = await footprint(caller.accountId);

    const refused = await uploadMultipart(caller, csv, { vars: budget(used + 50_000) });
    const now = Date.now();
    expect(refused.status).toBe(429);
    const body = await refused.json<QuotaBody>();
    const midnight = new Date(now - (now % DAY) + DAY).toISOString();
    expect(body).toMatchObject({
      success: false,
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'storage_bytes_per_day', limit: used + 50_000, used, resetAt: midnight },
    });
    expect(body.details.requested).toBeGreaterThan(100 * 1_000);
    expect(body.message).toContain(midnight);
    const retryAfter = Number(refused.headers.get('Retry-After'));
    expect(Math.abs(retryAfter - (Date.parse(midnight) - now) / 1000)).toBeLessThanOrEqual(5);
    // Nothing stored, nothing charged, nothing counted.
    expect(await footprint(caller.accountId)).toEqual(before);
    expect(await storageUsedBy(caller.accountId)).toBe(used);
  });

  it('counts sandbox lists and test-key single verifications in the same budget', async () => {
    const caller = await newCaller({ mode: 'test' });
    const verify = (email: string, vars?: Record<string, string>) =>
      call('/api/v1/verify', { key: caller.apiKey, json: { email }, ...(vars ? { vars } : {}) });
    expect((await upload(caller, rows(3))).status).toBe(200);
    const afterList = await storageUsedBy(caller.accountId);
    expect(afterList).toBeGreaterThan(0);
    expect((await verify('deliverable@example.test')).status).toBe(200);
    const afterCall = await storageUsedBy(caller.accountId);
    expect(afterCall).toBeGreaterThan(afterList);
    const account = await call('/api/v1/account', { key: caller.apiKey });
    expect(
      (await account.json<{ account: { usage: { storage: unknown } } }>()).account.usage.storage,
    ).toMatchObject({ usedBytesToday: afterCall, limitBytesPerDay: 5_000_000 + 100 * 10_000 });
    const before = await footprint(caller.accountId);

    const refused = await verify('risky@example.test', budget(afterCall));
    expect(refused.status).toBe(429);
    expect((await refused.json<QuotaBody>()).details).toMatchObject({
      quota: 'storage_bytes_per_day',
      limit: afterCall,
      used: afterCall,
    });
    expect((await upload(caller, rows(1, 'y'), { vars: budget(afterCall) })).status).toBe(429);
    expect(await footprint(caller.accountId)).toEqual(before);
  });

  it('refuses a charged single verification past the budget before charging it', async () => {
    const caller = await newCaller({ credits: 5 });
    const verify = (vars?: Record<string, string>) =>
      call('/api/v1/verify', {
        key: caller.apiKey,
        json: { email: 'not an address' },
        ...(vars ? { vars } : {}),
      });
    expect((await verify()).status).toBe(200);
    const used = await storageUsedBy(caller.accountId);
    expect(used).toBeGreaterThan(0);
    const refused = await verify(budget(used));
    expect(refused.status).toBe(429);
    expect((await refused.json<QuotaBody>()).details).toMatchObject({ quota: 'storage_bytes_per_day', used });
    expect(await balanceOf(caller.accountId)).toBe(4);
    expect(await historyOf(caller.accountId)).toBe(1);
  });

  it('counts the answers kept under Idempotency-Keys', async () => {
    const caller = await newCaller({ mode: 'test' });
    const verify = (key: string) =>
      call('/api/v1/verify', {
        key: caller.apiKey,
        json: { email: 'deliverable@example.test' },
        headers: { 'Idempotency-Key': key },
      });
    expect((await verify('plain')).status).toBe(200);
    const oneCall = await storageUsedBy(caller.accountId);
    const kept = await countOf(
      'SELECT LENGTH(response_body) AS n FROM idempotency_keys WHERE account_id = ?',
      caller.accountId,
    );
    expect(kept).toBeGreaterThan(100);
    // Replays store nothing and count nothing.
    expect((await verify('plain')).headers.get('Idempotent-Replayed')).toBe('true');
    expect(await storageUsedBy(caller.accountId)).toBe(oneCall);
    // The history row and the kept answer: more than the answer's bytes alone.
    expect(oneCall).toBeGreaterThan(2 * kept);
  });

  it('counts every webhook test event (a stored delivery) and refuses one past the budget', async () => {
    const caller = await newCaller();
    const api = (path: string, init: CallOptions = {}) =>
      call(path, { key: caller.apiKey, method: 'POST', ...init });
    expect(
      (await api('/api/v1/webhooks', { method: 'PUT', json: { url: `${new URL(env.DOH_URL).origin}/hook` } }))
        .status,
    ).toBe(200);
    expect((await api('/api/v1/webhooks/secret')).status).toBe(200);
    expect((await api('/api/v1/webhooks/test')).status).toBe(200);
    const used = await storageUsedBy(caller.accountId);
    expect(used).toBeGreaterThan(0);
    const deliveries = () =>
      countOf('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE account_id = ?', caller.accountId);
    expect(await deliveries()).toBe(1);

    const refused = await api('/api/v1/webhooks/test', { vars: budget(used) });
    expect(refused.status).toBe(429);
    expect((await refused.json<QuotaBody>()).details).toMatchObject({ quota: 'storage_bytes_per_day', used });
    expect(await deliveries()).toBe(1);
  });

  it('lets only one of several concurrent uploads take the last bytes', async () => {
    const probe = await newCaller({ mode: 'test' });
    expect((await upload(probe, rows(3, 'p'))).status).toBe(200);
    const oneList = await storageUsedBy(probe.accountId);
    const caller = await newCaller({ mode: 'test' });
    const vars = budget(Math.round(oneList * 1.5));
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd'].map((prefix) => upload(caller, rows(3, prefix), { vars })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 429, 429, 429]);
    expect(await jobsOf(caller.accountId)).toBe(1);
    expect(await storedRowsOf(caller.accountId)).toBe(3);
  });

  it('resets at resetAt: midnight UTC', async () => {
    const caller = await newCaller({ mode: 'test' });
    const midnight = Date.UTC(2031, 4, 17);
    await createJobAs(caller, 'test', rows(5), { now: midnight - 2000 });
    const used = await storageUsedBy(caller.accountId);
    const limits = { quotas: { storage: flatBudget(used) } };

    const refused = await refusalOf(
      createJobAs(caller, 'test', rows(1, 'y'), { ...limits, now: midnight - 1000 }),
    );
    expect(refused.code).toBe('QUOTA_EXCEEDED');
    expect(refused.details).toMatchObject({
      quota: 'storage_bytes_per_day',
      limit: used,
      used,
      resetAt: '2031-05-17T00:00:00.000Z',
    });
    expect(refused.retryAfterSeconds).toBe(1);
    // One millisecond before the reset: still today's budget.
    await refusalOf(createJobAs(caller, 'test', rows(1, 'y'), { ...limits, now: midnight - 1 }));
    // At resetAt, a new day's budget.
    const next = await createJobAs(caller, 'test', rows(5, 'z'), { ...limits, now: midnight });
    expect(next.success).toBe(true);
    expect(await storedRowsOf(caller.accountId)).toBe(10);
  });
});

describe('jobs in flight', () => {
  it('refuses a live upload while the account has the limit in flight, over JSON and multipart; nothing charged', async () => {
    const caller = await newCaller({ credits: 100 });
    const running = [
      await createJobAs(caller, 'live', ['a@nonexistent.test']),
      await createJobAs(caller, 'live', ['b@nonexistent.test']),
    ];
    const vars = { QUOTA_JOBS_IN_FLIGHT: '2' };
    const before = await footprint(caller.accountId);

    const json = await upload(caller, ['c@nonexistent.test'], { vars });
    expect(json.status).toBe(429);
    expect(json.headers.get('Retry-After')).toBeNull();
    const body = await json.json<QuotaBody>();
    expect(body).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'jobs_in_flight', limit: 2, used: 2, requested: 1, resetAt: null },
    });
    expect(body.message).toContain('At most 2 lists');
    const multipart = await uploadMultipart(caller, 'email\nc@nonexistent.test\n', { vars });
    expect(multipart.status).toBe(429);
    expect((await multipart.json<QuotaBody>()).details).toMatchObject({ quota: 'jobs_in_flight', used: 2 });
    expect(await footprint(caller.accountId)).toEqual(before);

    // A sandbox or an invalid-only list is finished at upload and holds no slot.
    const sandbox = await createJobAs(caller, 'test', rows(2), { quotas: { jobsInFlight: 2 } });
    expect(sandbox.success).toBe(true);
    // A finished job frees its slot.
    await failJob(db(), running[0]?.jobId ?? '', 'test', Date.now());
    expect((await upload(caller, ['c@nonexistent.test'], { vars })).status).toBe(200);
  });

  it('lets only one of several concurrent uploads take the last slot, charged once', async () => {
    const caller = await newCaller({ credits: 100 });
    await createJobAs(caller, 'live', ['a@nonexistent.test']);
    const outcomes = await Promise.allSettled(
      ['b', 'c', 'd', 'e', 'f'].map((local) =>
        createJobAs(caller, 'live', [`${local}@nonexistent.test`], { quotas: { jobsInFlight: 2 } }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect((outcome.reason as ApiError).code).toBe('QUOTA_EXCEEDED');
    }
    expect(await jobsOf(caller.accountId)).toBe(2);
    expect(await balanceOf(caller.accountId)).toBe(98);
  });

  it('answers 402, not 429, when the credits do not cover the list either', async () => {
    const caller = await newCaller({ credits: 1 });
    await createJobAs(caller, 'live', ['a@nonexistent.test']);
    const response = await upload(caller, ['b@nonexistent.test'], { vars: { QUOTA_JOBS_IN_FLIGHT: '1' } });
    expect(response.status).toBe(402);
  });
});

describe('quotas and Idempotency-Key', () => {
  it('a replayed upload is not counted twice', async () => {
    const caller = await newCaller({ mode: 'test' });
    const withKey = (key: string) => ({ headers: { 'Idempotency-Key': key } });
    const first = await upload(caller, rows(3), withKey('list-1'));
    expect(first.status).toBe(200);
    const used = await storageUsedBy(caller.accountId);
    const replay = await upload(caller, rows(3), withKey('list-1'));
    expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
    expect((await replay.json<{ jobId: string }>()).jobId).toBe(
      (await first.json<{ jobId: string }>()).jobId,
    );
    expect(await storageUsedBy(caller.accountId)).toBe(used);
    expect(await jobsOf(caller.accountId)).toBe(1);
  });

  it('a refusal is not kept as the key’s answer: the same request runs once the quota allows it', async () => {
    const caller = await newCaller({ credits: 10 });
    const running = await createJobAs(caller, 'live', ['a@nonexistent.test']);
    const options = { vars: { QUOTA_JOBS_IN_FLIGHT: '1' }, headers: { 'Idempotency-Key': 'after-quota' } };
    expect((await upload(caller, ['b@nonexistent.test'], options)).status).toBe(429);
    await failJob(db(), running.jobId, 'test', Date.now());
    const retry = await upload(caller, ['b@nonexistent.test'], options);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('Idempotent-Replayed')).toBeNull();
    expect(await jobsOf(caller.accountId)).toBe(2);
  });
});

describe('active API keys', () => {
  it('refuses a key past the limit with the details; revoking one makes room', async () => {
    const caller = await newCaller();
    const second = await newKey(caller, 2);
    const refused = await refusalOf(newKey(caller, 2));
    expect(refused.code).toBe('QUOTA_EXCEEDED');
    expect(refused.httpStatus).toBe(429);
    expect(refused.details).toEqual({ quota: 'api_keys', limit: 2, used: 2, requested: 1, resetAt: null });
    expect(refused.retryAfterSeconds).toBeUndefined();
    expect(await countOf('SELECT COUNT(*) AS n FROM api_keys WHERE account_id = ?', caller.accountId)).toBe(
      2,
    );
    await env.DB.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').bind(Date.now(), second.id).run();
    await newKey(caller, 2);
    expect(await activeKeysOf(caller.accountId)).toBe(2);
  });

  it('lets only one of several concurrent creations take the last slot', async () => {
    const caller = await newCaller();
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => newKey(caller, 2)));
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    expect(await activeKeysOf(caller.accountId)).toBe(2);
  });
});

describe('the dashboard', () => {
  it('says which quota stopped a key or a list, its limit and what to do', async () => {
    const { client, accountId } = await signedInAccount('quotas');
    const { apiKeys, jobsInFlight } = quotas();
    const owner: TestCaller = { accountId, apiKey: '', keyId: '' };
    while ((await activeKeysOf(accountId)) < apiKeys) await newKey(owner, apiKeys);
    const key = await client.submit('/keys', '/keys', { name: 'one too many', mode: 'live' });
    expect(key.status).toBe(429);
    const keyPage = await key.text();
    expect(keyPage).toContain(`at most ${apiKeys} active API keys; revoke one to create another.`);
    // No new secret on the page.
    expect(keyPage).not.toMatch(/value="rk_live_[A-Za-z0-9_-]{43}"/);

    for (let i = 0; i < jobsInFlight; i++) await createJobAs(owner, 'live', [`n${i}@nonexistent.test`]);
    const before = await footprint(accountId);
    const form = new FormData();
    form.set('file', new File(['email\nlast@nonexistent.test\n'], 'list.csv', { type: 'text/csv' }));
    const list = await client.submit('/bulk', '/bulk', form);
    expect(list.status).toBe(429);
    expect(await list.text()).toContain(`At most ${jobsInFlight} lists can be in progress at once`);
    expect(await footprint(accountId)).toEqual(before);
  });
});

describe('sandbox jobs are kept 7 days, not 60', () => {
  it('retention deletes a test-mode job and its history after the sandbox period, a live one only after its own', async () => {
    const sandbox = await newCaller({ mode: 'test' });
    const live = await newCaller({ credits: 10 });
    const oldSandbox = await createJobAs(sandbox, 'test', rows(2));
    const youngSandbox = await createJobAs(sandbox, 'test', rows(2, 'y'));
    const oldLive = await createJobAs(live, 'live', ['not an address']);
    const eightDaysAgo = Date.now() - 8 * DAY;
    for (const jobId of [oldSandbox.jobId, oldLive.jobId]) {
      await env.DB.batch([
        env.DB.prepare('UPDATE jobs SET created_at = ? WHERE id = ?').bind(eightDaysAgo, jobId),
        env.DB.prepare('UPDATE verifications SET created_at = ? WHERE job_id = ?').bind(eightDaysAgo, jobId),
      ]);
    }
    const now = Date.now();
    await deleteExpired(db(), retentionCutoffsOf(configOf(env), now), now);
    const exists = (jobId: string) => countOf('SELECT COUNT(*) AS n FROM jobs WHERE id = ?', jobId);
    expect(await exists(oldSandbox.jobId)).toBe(0);
    expect(await listsCountOf('SELECT COUNT(*) AS n FROM job_rows WHERE job_id = ?', oldSandbox.jobId)).toBe(
      0,
    );
    expect(await countOf('SELECT COUNT(*) AS n FROM verifications WHERE job_id = ?', oldSandbox.jobId)).toBe(
      0,
    );
    expect(await exists(youngSandbox.jobId)).toBe(1);
    expect(await exists(oldLive.jobId)).toBe(1);
    expect(await countOf('SELECT COUNT(*) AS n FROM verifications WHERE job_id = ?', oldLive.jobId)).toBe(1);
  });
});
